"""The loop's levers for a small model, step by step without gVisor: an answer that
changes nothing asked once more, a stall answered by a restart from the baseline and by the
escalation model, and several candidates verified side by side with one committed."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import git
import pytest

from bench.suite.runner import RunWatch
from engine.edits.instructions import RESTART_NOTE, UNCHANGED_NOTE, restart_note
from engine.edits.proposal import Edit, Proposal
from engine.errors import ModelError
from engine.model.types import Completion
from engine.run.answers import ECHOED
from engine.run.gate import PolicyGate
from engine.run.guards import RunStatus
from engine.run.no_change import NO_CODE, NO_FILE, ONLY_DOCS, WORDING, Noop, unchanged_because
from engine.run.report import LOOK_AT, LOOK_AT_IDLE
from engine.run.resume import resume_state
from engine.run.run_directory import RunDirectory
from engine.verify.results import TestReport
from sandbox import ExecRequest, ExecResult
from tests.engine.test_loop import (
    BROKEN,
    FIXED,
    RUN_ID,
    ScriptedGate,
    ScriptedModel,
    TreeSandbox,
    answer,
    events,
    run_loop,
)

pytestmark = pytest.mark.usefixtures("git_as_tester")


class Stronger(ScriptedModel):
    model = "stronger"


def of_type(result: object, kind: str) -> list[dict[str, object]]:
    return [e for e in events(result) if e["type"] == kind]  # type: ignore[arg-type]


def report_text(result: object) -> str:
    return Path(result.report).read_text()  # type: ignore[attr-defined]


def iteration_dir(result: object, n: int) -> Path:
    return Path(result.run_dir) / "iterations" / f"{n:02d}"  # type: ignore[attr-defined]


WRONG = "VALUE = 3\n"  # a change that still fails the test


# -- no-op recovery ----------------------------------------------------------------------------


async def test_an_answer_that_changes_nothing_is_asked_again_within_the_iteration(
    tmp_path: Path,
) -> None:
    model = ScriptedModel(answer(("app.py", BROKEN)), answer(("app.py", FIXED)))
    result = await run_loop(tmp_path, model)
    assert (result.status.value, len(result.iterations)) == ("ok", 1)
    # Told in one line, asked once more at a higher temperature, both answers counted.
    assert "Your last answer changed nothing (app.py came back with the same code)" in (
        model.prompt(2)
    )
    assert model.sampling == [(None, None), (0.7, 1)]  # seeded: a rerun asks the same
    assert result.iterations[0].tokens == 2 * model.tokens
    reasked = of_type(result, "AnswerReasked")
    assert [(e["n"], e["temperature"]) for e in reasked] == [(1, 0.7)]
    assert (iteration_dir(result, 1) / "unchanged-response.txt").read_text() == model_answer(BROKEN)
    # Each request's prompt in the trail: the re-ask's beside the first one's, not over it.
    first, again = (
        iteration_dir(result, 1) / name for name in ("prompt.json", "reask-prompt.json")
    )
    assert "Your last answer changed nothing" not in first.read_text()
    assert "Your last answer changed nothing" in again.read_text()


async def test_an_answer_that_only_moves_blank_lines_and_spaces_changes_nothing(
    tmp_path: Path,
) -> None:
    # Seen from the embedded model: the file sent back with its leading blank lines dropped.
    respaced = "\n".join(f"{line}   " for line in BROKEN.splitlines()) + "\n\n\n"
    model = ScriptedModel(answer(("app.py", "\n\n" + respaced)), answer(("app.py", FIXED)))
    result = await run_loop(tmp_path, model)
    assert (result.status.value, len(result.iterations)) == ("ok", 1)
    assert [(e["n"], e["reason"]) for e in of_type(result, "AnswerReasked")] == [
        (1, "the answer changed no file")
    ]


async def test_a_second_unchanged_answer_is_not_asked_for_a_third_time(tmp_path: Path) -> None:
    model = ScriptedModel(*[answer(("app.py", BROKEN))] * 4)
    result = await run_loop(tmp_path, model, restart_on_stall=False)
    # One iteration of two requests: the answer and its re-ask changed nothing, two answers
    # in a row for the idle guard.
    assert (result.status.value, result.reason) == ("stalled", "2 answers in a row changed no code")
    assert len(model.prompts) == 2
    assert len(of_type(result, "AnswerReasked")) == 1
    # The report says what happened: no failure was repeated, nothing was changed.
    report = report_text(result)
    assert LOOK_AT_IDLE in report
    assert LOOK_AT[RunStatus.STALLED] not in report


async def test_without_noop_retry_an_unchanged_answer_costs_the_iteration(tmp_path: Path) -> None:
    model = ScriptedModel(answer(("app.py", BROKEN)), answer(("app.py", FIXED)))
    result = await run_loop(tmp_path, model, noop_retry=False)
    assert [r.status for r in result.iterations] == ["no_change", "ok"]
    assert of_type(result, "AnswerReasked") == []


async def test_without_noop_retry_a_respaced_file_is_no_change_not_a_commit(
    tmp_path: Path,
) -> None:
    respaced = "\n\n" + BROKEN.replace("\n", "  \n") + "\n\n"
    model = ScriptedModel(answer(("app.py", respaced)), answer(("app.py", FIXED)))
    result = await run_loop(tmp_path, model, noop_retry=False)
    assert [r.status for r in result.iterations] == ["no_change", "ok"]
    [committed] = [str(e["message"]) for e in of_type(result, "Committed")]
    assert committed.startswith("fixloop[iter 2/")
    assert [e["files"] for e in of_type(result, "EditsApplied")] == [[], ["app.py"]]


DOCUMENTED = f'"""The value the test wants."""\n\n# still one\n{BROKEN}'  # the same code


class DoctestSandbox(TreeSandbox):
    """TreeSandbox whose project also runs the doctests of app.py."""

    def result(
        self, report: TestReport, exit_code: int, stdout: str, request: ExecRequest
    ) -> ExecResult:
        doctests = report.model_copy(update={"nodeids": [*report.nodeids, "app.py::app"]})
        return super().result(doctests, exit_code, stdout, request)


async def test_with_docs_noop_an_answer_that_changes_only_docstrings_is_asked_again(
    tmp_path: Path,
) -> None:
    model = ScriptedModel(answer(("app.py", DOCUMENTED)), answer(("app.py", FIXED)))
    result = await run_loop(tmp_path, model, docs_noop=True)
    assert (result.status.value, len(result.iterations)) == ("ok", 1)
    reasked = [(e["n"], e["reason"]) for e in of_type(result, "AnswerReasked")]
    assert reasked == [(1, "the answer changed only docstrings, comments or layout")]
    told = "Your last answer changed only docstrings or comments (app.py came back with the same"
    assert told in model.prompt(2)
    [committed] = of_type(result, "Committed")  # the docstring was never committed
    assert str(committed["message"]).startswith("fixloop[iter 1/")


async def test_without_docs_noop_or_where_doctests_run_a_docstring_is_an_edit(
    tmp_path: Path,
) -> None:
    for name, sandbox, levers in (
        ("off", TreeSandbox(), {}),
        ("doctests", DoctestSandbox(), {"docs_noop": True}),
    ):
        model = ScriptedModel(answer(("app.py", DOCUMENTED)), answer(("app.py", FIXED)))
        result = await run_loop(tmp_path / name, model, sandbox=sandbox, **levers)
        assert [r.status for r in result.iterations] == ["failing", "ok"], name
        assert of_type(result, "AnswerReasked") == []


async def test_without_noop_retry_a_docstring_only_answer_is_a_no_change_saying_why(
    tmp_path: Path,
) -> None:
    model = ScriptedModel(answer(("app.py", DOCUMENTED)), answer(("app.py", FIXED)))
    result = await run_loop(tmp_path, model, docs_noop=True, noop_retry=False)
    assert [r.status for r in result.iterations] == ["no_change", "ok"]
    applied = [(e["files"], e["because"]) for e in of_type(result, "EditsApplied")]
    assert applied == [([], ONLY_DOCS), (["app.py"], "")]
    # The next prompt says what the answer did, not that it changed no file.
    assert "Your last answer changed only docstrings or comments, so nothing" in model.prompt(2)
    assert "changed no file" not in model.prompt(2)
    # The packet shown again names the iteration it is shown in, not the one before.
    assert "Verification failed (iteration 1/" in model.prompt(1)
    assert "Verification failed (iteration 2/" in model.prompt(2)
    assert "(iteration 1/" not in model.prompt(2)


async def test_with_docs_noop_docstring_only_candidates_are_dropped_and_never_committed(
    tmp_path: Path,
) -> None:
    documented = answer(("app.py", DOCUMENTED))
    model = ScriptedModel(
        documented, documented, answer(("app.py", FIXED)), answer(("app.py", FIXED))
    )
    result = await run_loop(tmp_path, model, docs_noop=True, candidates=2)
    assert [r.status for r in result.iterations] == ["no_change", "ok"]
    dropped = [(e["n"], e["dropped"]) for e in of_type(result, "CandidateVerified")]
    assert dropped[:2] == [(1, WORDING[ONLY_DOCS].dropped)] * 2
    # Nothing was written for iteration 1: its docstring is in no commit.
    [committed] = of_type(result, "Committed")
    assert str(committed["message"]).startswith("fixloop[iter 2/")
    repo = git.Repo(tmp_path / "project")
    assert "The value the test wants" not in repo.git.show(f"fixloop/{RUN_ID}:app.py")


async def test_candidates_that_change_only_a_trailing_string_are_dropped_as_no_code(
    tmp_path: Path,
) -> None:
    trailing = BROKEN + '\n"""What the module is for."""\n'
    dropped_string = answer(("app.py", BROKEN))
    fixed = answer(("app.py", FIXED))
    model = ScriptedModel(dropped_string, dropped_string, fixed, fixed)
    result = await run_loop(tmp_path, model, app=trailing, candidates=2)
    assert [r.status for r in result.iterations] == ["no_change", "ok"]
    dropped = [(e["n"], e["dropped"]) for e in of_type(result, "CandidateVerified")]
    assert dropped[:2] == [(1, WORDING[NO_CODE].dropped)] * 2
    told = "Your last answer changed only comments or strings that do nothing, so nothing was"
    assert told in model.prompt(3)
    assert "changed no file" not in model.prompt(3)


def test_docstrings_comments_and_layout_are_not_code(tmp_path: Path) -> None:
    source = 'def f(x):\n    """Add one."""\n    return x + 1  # one\n'
    (tmp_path / "m.py").write_text(source)
    (tmp_path / "notes.txt").write_text("one\n")

    def why(*edits: Edit, noop: Noop = "docs") -> str:
        proposal = Proposal(explanation="", edits=list(edits), format="json")
        return unchanged_because(proposal, tmp_path, noop=noop)

    retyped = 'def f(x):\n    """Adds one."""\n\n    return (x+1)\n'
    assert why(Edit(path="m.py", content=retyped)) == ONLY_DOCS
    assert why(Edit(path="m.py", content=retyped), noop="code") == ""  # a docstring may be code
    assert why(Edit(path="m.py", content=retyped), noop="lines") == ""
    assert why(Edit(path="m.py", search="# one", replace="# plus one")) == ONLY_DOCS
    assert why(Edit(path="m.py", search="# one", replace="# plus one"), noop="code") == NO_CODE
    assert why(Edit(path="m.py", search="# one", replace="# plus one"), noop="lines") == ""
    assert why(Edit(path="m.py", search='"""Add one."""', replace='"""Add 1."""')) == ONLY_DOCS
    # Blank lines and trailing spaces: no file changed, whatever the rule.
    for noop in ("lines", "code", "docs"):
        assert (
            why(Edit(path="m.py", content=source.replace(":\n", ":  \n\n")), noop=noop) == NO_FILE
        )
    for noop in ("code", "docs"):
        assert why(Edit(path="m.py", content=source.replace("x + 1", "x + 2")), noop=noop) == ""
    (tmp_path / "s.py").write_text('NAME = "a"\n')
    assert why(Edit(path="s.py", content='NAME = "b"\n')) == ""  # a string, not a docstring
    assert why(Edit(path="m.py", content="def f(x:\n")) == ""  # does not parse: an edit
    assert why(Edit(path="notes.txt", content="two\n")) == ""  # not Python
    assert why(Edit(path="new.py", content='"""New."""\n')) == ""  # a new file
    assert why(Edit(path="m.py", search="no such line", replace="x")) == ""  # unusable


def test_a_string_statement_that_is_no_docstring_is_no_code(tmp_path: Path) -> None:
    """QuixBugs' programs end with a bare string (their description), which the embedded model
    drops from the file it sends back, its code otherwise the same: no code changed."""
    source = 'def f(x):\n    """Add one."""\n    return x - 1\n\n\n"""\nAdd one\n\nf(1) == 2\n"""\n'
    (tmp_path / "m.py").write_text(source)
    dropped = source.split('\n\n\n"""')[0] + "\n"

    def why(content: str, noop: Noop) -> str:
        proposal = Proposal(
            explanation="", edits=[Edit(path="m.py", content=content)], format="json"
        )
        return unchanged_because(proposal, tmp_path, noop=noop)

    assert why(dropped, "code") == NO_CODE
    assert why(dropped, "docs") == ONLY_DOCS
    assert why(dropped, "lines") == ""  # without `code_noop`: an edit, as before
    assert why(dropped.replace("x - 1", "x + 1"), "code") == ""  # the fix, the string dropped
    no_docstring = dropped.replace('    """Add one."""\n', "")
    assert why(no_docstring, "code") == ""  # a docstring is not dropped by `code_noop`
    call = source.replace('"""\nAdd one', 'f"""\n{print(1)}Add one')
    assert why(call, "code") == ""  # an f-string runs code


async def test_with_code_noop_a_dropped_trailing_string_is_asked_again_not_committed(
    tmp_path: Path,
) -> None:
    trailing = BROKEN + '\n"""What the module is for."""\n'
    root = tmp_path / "project"
    model = ScriptedModel(answer(("app.py", BROKEN)), answer(("app.py", FIXED)))
    result = await run_loop(tmp_path, model, app=trailing)  # on by default
    assert (result.status.value, len(result.iterations)) == ("ok", 1)
    reasked = [(e["n"], e["reason"]) for e in of_type(result, "AnswerReasked")]
    assert reasked == [(1, NO_CODE)]
    told = "Your last answer changed only comments or strings that do nothing (app.py came back"
    assert told in model.prompt(2)
    assert len(list(git.Repo(root).iter_commits(f"fixloop/{RUN_ID}"))) == 2  # baseline + the fix
    off = ScriptedModel(answer(("app.py", BROKEN)), answer(("app.py", FIXED)))
    result = await run_loop(tmp_path / "off", off, app=trailing, code_noop=False)
    assert [r.status for r in result.iterations] == ["failing", "ok"]  # committed and verified


async def test_after_an_unchanged_answer_later_iterations_sample_their_first_answer(
    tmp_path: Path,
) -> None:
    model = ScriptedModel(
        answer(("app.py", BROKEN)), answer(("app.py", WRONG)), answer(("app.py", FIXED))
    )
    result = await run_loop(tmp_path, model, sample_after_noop=True)
    assert [r.status for r in result.iterations] == ["failing", "ok"]
    # Iteration 1: greedy (unchanged), then its re-ask; iteration 2 starts sampled, seeded
    # apart from the re-asks.
    assert model.sampling == [(None, None), (0.7, 1), (0.7, 102)]
    requested = [
        (e["n"], e["temperature"], e["sampled_because"]) for e in of_type(result, "ModelRequested")
    ]
    # The re-ask says nothing of its own (its AnswerReasked does); the sampled first answer
    # says why it is not greedy.
    assert requested == [(1, None, ""), (1, 0.7, ""), (2, 0.7, ECHOED)]


async def test_without_sample_after_noop_each_iteration_starts_greedy(tmp_path: Path) -> None:
    model = ScriptedModel(
        answer(("app.py", BROKEN)), answer(("app.py", WRONG)), answer(("app.py", FIXED))
    )
    result = await run_loop(tmp_path, model, sample_after_noop=False)
    assert [r.status for r in result.iterations] == ["failing", "ok"]
    assert model.sampling == [(None, None), (0.7, 1), (None, None)]


async def test_sample_after_noop_stays_greedy_while_every_answer_changes_something(
    tmp_path: Path,
) -> None:
    model = ScriptedModel(answer(("app.py", WRONG)), answer(("app.py", FIXED)))
    result = await run_loop(tmp_path, model, sample_after_noop=True)
    assert [r.status for r in result.iterations] == ["failing", "ok"]
    assert model.sampling == [(None, None), (None, None)]


async def test_the_escalation_model_starts_greedy_after_the_first_one_echoed(
    tmp_path: Path,
) -> None:
    model = ScriptedModel(*[answer(("app.py", BROKEN))] * 2)
    stronger = Stronger(answer(("app.py", FIXED)))
    result = await run_loop(
        tmp_path, model, escalation=stronger, restart_on_stall=False, sample_after_noop=True
    )
    assert result.status.value == "ok"
    assert model.sampling == [(None, None), (0.7, 1)]
    assert stronger.sampling == [(None, None)]


def model_answer(content: str) -> str:
    return answer(("app.py", content))


TRUNCATED = ModelError(
    "model scripted: answer truncated at max_tokens=4096 (finish_reason length)",
    cause="answer truncated at max_tokens=4096 (finish_reason length)",
    answered=True,
)


async def test_a_reask_the_model_fails_to_answer_leaves_the_first_answer_standing(
    tmp_path: Path,
) -> None:
    model = ScriptedModel(answer(("app.py", BROKEN)), TRUNCATED, answer(("app.py", FIXED)))
    result = await run_loop(tmp_path, model, restart_on_stall=False)
    # The sampled retry ran past max_tokens: the iteration is the unchanged answer's, one idle
    # answer (the failed request is none: two would have stalled the run here), and the run
    # goes on instead of ending in error.
    assert [r.status for r in result.iterations] == ["no_change", "ok"]
    assert "truncated" in (iteration_dir(result, 1) / "reask-error.txt").read_text()


async def test_a_candidates_reask_the_model_fails_to_answer_is_one_idle_answer_too(
    tmp_path: Path,
) -> None:
    unchanged, fixed = answer(("app.py", BROKEN)), answer(("app.py", FIXED))
    model = ScriptedModel(unchanged, unchanged, TRUNCATED, fixed, fixed)
    result = await run_loop(
        tmp_path, model, candidates=2, reask_candidates=True, restart_on_stall=False
    )
    assert [r.status for r in result.iterations] == ["no_change", "ok"]
    assert len(model.prompts) == 5


# -- a stall: restart from the baseline, escalate --------------------------------------------


async def test_a_stall_restarts_from_the_baseline_once_and_asks_for_the_wrong_assumption(
    tmp_path: Path,
) -> None:
    model = ScriptedModel(
        answer(("notes.txt", "one\n")),
        answer(("notes.txt", "two\n")),
        answer(("app.py", FIXED)),
    )
    result = await run_loop(tmp_path, model)
    assert result.status.value == "ok"
    assert [r.status for r in result.iterations] == ["failing", "failing", "ok"]
    changed = of_type(result, "StrategyChanged")
    assert [(e["n"], e["kind"]) for e in changed] == [(2, "restart")]
    # The restart is a commit of its own that takes notes.txt away again...
    repo = git.Repo(tmp_path / "project")
    restart = [e for e in of_type(result, "Committed") if "after a stall" in str(e["message"])]
    assert len(restart) == 1
    assert "notes.txt" not in repo.git.ls_tree("-r", "--name-only", restart[0]["sha"])
    # ...and the third prompt asks for the wrong assumption first, with the baseline's failure.
    third = model.prompt(3)
    assert RESTART_NOTE in third
    assert "assert VALUE = 1 == 2" in third
    assert (iteration_dir(result, 2) / "stage-test-after-restart.json").is_file()
    # In the trail, iteration 2 reads in order: its packet, the stall, the restart, the
    # baseline's packet again.
    kinds = ("PacketReady", "GuardTripped", "StrategyChanged")
    second = [e["type"] for e in events(result) if e.get("n") == 2 and e["type"] in kinds]
    assert second == ["PacketReady", "GuardTripped", "StrategyChanged", "PacketReady"]


async def test_after_a_restart_the_whole_file_format_is_asked_for_code_not_an_explanation(
    tmp_path: Path,
) -> None:
    # Seen with the embedded model: asked to "first say which assumption is wrong, in your
    # explanation" under the whole-file format's "No explanations", it sent the sentence only.
    def whole(content: str) -> str:
        return f"app.py\n```python\n{content}```\n"

    model = ScriptedModel(whole(BROKEN), whole(BROKEN), whole(FIXED))
    result = await run_loop(tmp_path, model, edit_format="whole", files=["app.py"])
    assert result.status.value == "ok"
    after = model.prompt(3)
    assert restart_note("whole", ["app.py"], put_back=False) in after  # nothing to put back
    for put_back in (True, False):
        note = restart_note("whole", ["app.py"], put_back=put_back)
        assert "explanation" not in note
        assert note.endswith(
            "Reply with app.py alone on the first line, then a python code block holding the "
            "whole corrected file."
        )
    assert restart_note("json", ["app.py"]) == RESTART_NOTE


async def test_a_stall_with_the_code_still_at_the_start_puts_nothing_back_and_says_so(
    tmp_path: Path,
) -> None:
    """Answers that all sent the file back unchanged: the restart has no code to put back and
    no verification to run again, and the model is not told its fixes were undone."""
    model = ScriptedModel(*[answer(("app.py", BROKEN))] * 2, answer(("app.py", FIXED)))
    result = await run_loop(tmp_path, model)
    assert result.status.value == "ok"
    [restart] = of_type(result, "StrategyChanged")
    assert restart["reason"] == (
        "2 answers in a row changed no code: the code is still as it was at the start"
    )
    third = model.prompt(3)
    assert UNCHANGED_NOTE in third
    assert "put back" not in third
    assert not [e for e in of_type(result, "Committed") if "after a stall" in str(e["message"])]
    assert not (iteration_dir(result, 1) / "stage-test-after-restart.json").exists()


async def test_a_shortened_copy_of_a_pinned_test_file_does_not_cost_the_fix_with_it(
    tmp_path: Path,
) -> None:
    # Seen from the embedded model: the fix, then tests/test_app.py cut down to a few lines.
    # The test file is held back anyway; refusing the whole answer for it lost the fix.
    answer_text = (
        f"app.py\n```python\n{FIXED}```\ntests/test_app.py\n```python\nfrom app import VALUE\n```\n"
    )
    model = ScriptedModel(answer_text)
    headless = PolicyGate()  # approves, and holds pinned test files back
    result = await run_loop(tmp_path, model, edit_format="whole", gate=headless)  # type: ignore[arg-type]
    assert (result.status.value, len(model.prompts)) == ("ok", 1)
    [edits] = of_type(result, "ProposalReady")
    assert edits["files"] == ["app.py", "tests/test_app.py"]
    repo = git.Repo(tmp_path / "project")
    assert repo.git.show(f"{result.final_commit}:tests/test_app.py").startswith("from app")
    assert "def test_value" in repo.git.show(f"{result.final_commit}:tests/test_app.py")


async def test_answers_that_keep_changing_nothing_restart_from_the_baseline_too(
    tmp_path: Path,
) -> None:
    # The demo's path: a first fix lands, then the model sends the file back as it is, even
    # when re-asked. Stuck is stuck: back to the baseline, asked for the wrong assumption.
    model = ScriptedModel(
        answer(("notes.txt", "one\n")),
        *[answer(("notes.txt", "one\n"))] * 2,
        answer(("app.py", FIXED)),
    )
    result = await run_loop(tmp_path, model)
    assert (result.status.value, len(result.iterations)) == ("ok", 3)
    # The second iteration's answer and its re-ask both changed nothing: stuck already, so
    # the third iteration starts from the baseline instead of asking the same prompt again.
    assert [r.status for r in result.iterations] == ["failing", "no_change", "ok"]
    [restart] = of_type(result, "StrategyChanged")
    assert (restart["n"], restart["kind"]) == (2, "restart")
    assert "2 answers in a row changed no code" in str(restart["reason"])
    assert RESTART_NOTE in model.prompt(4)
    repo = git.Repo(tmp_path / "project")
    assert "notes.txt" not in repo.git.ls_tree("-r", "--name-only", result.final_commit)


async def test_with_keep_asking_stalls_at_the_baseline_use_no_restart(tmp_path: Path) -> None:
    unchanged, fixed = answer(("app.py", BROKEN)), answer(("app.py", FIXED))
    # Without it: iteration 1's two answers stall (restart), iteration 2's two end the run.
    off = ScriptedModel(*[unchanged] * 4, fixed)
    result = await run_loop(tmp_path / "off", off, max_iterations=3)
    assert (result.status.value, len(result.iterations), len(off.prompts)) == ("stalled", 2, 4)
    # With it: nothing was put back, so the restart is still to come; iteration 3 fixes it.
    model = ScriptedModel(*[unchanged] * 4, fixed)
    result = await run_loop(tmp_path / "on", model, max_iterations=3, keep_asking=True)
    assert (result.status.value, len(result.iterations)) == ("ok", 3)
    changed = [(e["n"], e["spent"]) for e in of_type(result, "StrategyChanged")]
    assert changed == [(1, False), (2, False)]
    assert UNCHANGED_NOTE in model.prompt(5)


async def test_with_keep_asking_a_stall_in_the_last_iteration_still_ends_the_run(
    tmp_path: Path,
) -> None:
    model = ScriptedModel(*[answer(("app.py", BROKEN))] * 6)
    result = await run_loop(tmp_path, model, max_iterations=3, keep_asking=True)
    assert (result.status.value, len(result.iterations), len(model.prompts)) == ("stalled", 3, 6)


async def test_a_stall_in_the_last_iteration_ends_the_run_without_a_restart(
    tmp_path: Path,
) -> None:
    # No iteration is left to try another approach in: no restart commit, no verification.
    model = ScriptedModel(*[answer(("notes.txt", "one\n"))] * 3)
    result = await run_loop(tmp_path, model, max_iterations=2)
    assert (result.status.value, result.reason) == ("stalled", "2 answers in a row changed no code")
    assert of_type(result, "StrategyChanged") == []
    assert not [e for e in of_type(result, "Committed") if "after a stall" in str(e["message"])]
    same = ScriptedModel(answer(("notes.txt", "one\n")), answer(("notes.txt", "two\n")))
    ended = await run_loop(tmp_path / "same", same, max_iterations=2)
    assert (ended.status.value, of_type(ended, "StrategyChanged")) == ("stalled", [])


async def test_a_second_stall_after_the_restart_ends_the_run(tmp_path: Path) -> None:
    model = ScriptedModel(*[answer(("notes.txt", f"{n}\n")) for n in range(1, 5)])
    result = await run_loop(tmp_path, model)
    assert result.status.value == "stalled"
    assert len(of_type(result, "StrategyChanged")) == 1


async def test_the_escalation_model_takes_over_after_a_stall(tmp_path: Path) -> None:
    model = ScriptedModel(answer(("notes.txt", "one\n")), answer(("notes.txt", "two\n")))
    stronger = Stronger(answer(("app.py", FIXED)))
    result = await run_loop(
        tmp_path, model, escalation=stronger, restart_on_stall=False, max_iterations=9
    )
    assert result.status.value == "ok"
    assert (len(model.prompts), len(stronger.prompts)) == (2, 1)
    requested = [(e["n"], e["model"]) for e in of_type(result, "ModelRequested")]
    assert requested == [(1, "scripted"), (2, "scripted"), (3, "stronger")]
    changed = of_type(result, "StrategyChanged")
    assert [(e["kind"], e["model"]) for e in changed] == [("escalate", "stronger")]


async def test_a_stall_of_the_escalation_model_ends_the_run(tmp_path: Path) -> None:
    model = ScriptedModel(answer(("notes.txt", "one\n")), answer(("notes.txt", "two\n")))
    stronger = Stronger(*[answer(("notes.txt", f"{n}\n")) for n in range(3, 9)])
    result = await run_loop(
        tmp_path, model, escalation=stronger, restart_on_stall=False, max_iterations=9
    )
    # Once answered, a stall ends the run: the guards started over for the stronger model,
    # which then failed the same way twice (it did not run on to the 9th iteration).
    assert (result.status.value, len(result.iterations)) == ("stalled", 4)
    assert len(stronger.prompts) == 2


async def test_the_escalation_model_answers_the_last_iteration(tmp_path: Path) -> None:
    model = ScriptedModel(answer(("app.py", "VALUE = 3\n")))
    stronger = Stronger(answer(("app.py", FIXED)))
    result = await run_loop(tmp_path, model, escalation=stronger, max_iterations=2)
    assert result.status.value == "ok"
    changed = of_type(result, "StrategyChanged")
    assert [(e["n"], e["kind"], e["reason"]) for e in changed] == [
        (2, "escalate", "the last iteration")
    ]


# -- candidates -------------------------------------------------------------------------------


async def test_three_candidates_wrong_unchanged_right_commit_the_right_one(tmp_path: Path) -> None:
    sandbox = TreeSandbox()
    model = ScriptedModel(
        answer(("app.py", "VALUE = 3\n")), answer(("app.py", BROKEN)), answer(("app.py", FIXED))
    )
    result = await run_loop(tmp_path, model, sandbox=sandbox, candidates=3)
    assert (result.status.value, len(result.iterations)) == ("ok", 1)
    # Three requests, the first greedy, the others sampled with their own seeds.
    assert model.sampling == [(None, None), (0.8, 1), (0.8, 2)]
    # The baseline, then the two candidates that change something; the chosen one is not
    # verified a second time.
    assert sandbox.jobs == 3
    verified = {e["k"]: e for e in of_type(result, "CandidateVerified")}
    assert (verified[1]["verdict"], verified[2]["dropped"], verified[3]["verdict"]) == (
        "failing",
        "changes no file",
        "ok",
    )
    chosen = of_type(result, "CandidateChosen")
    assert [(e["k"], e["by"]) for e in chosen] == [(3, "policy")]
    # One commit on the branch: candidate 2's.
    repo = git.Repo(tmp_path / "project")
    assert repo.commit(f"fixloop/{RUN_ID}").message.startswith("fixloop[iter 1/")
    tip = repo.commit(f"fixloop/{RUN_ID}")
    assert tip.parents[0].hexsha == of_type(result, "RunStarted")[0]["baseline"]
    assert repo.git.show(f"{tip.hexsha}:app.py") + "\n" == FIXED
    # Every candidate is in the trail.
    trail = iteration_dir(result, 1) / "candidates"
    assert sorted(p.name for p in trail.iterdir()) == ["1", "2", "3"]
    assert (trail / "1" / "stage-test.json").is_file()
    assert "+VALUE = 2" in (trail / "3" / "patch.diff").read_text()
    assert json.loads((trail / "2" / "verdict.json").read_text())["dropped"] == "changes no file"
    assert (iteration_dir(result, 1) / "stage-test.json").is_file()


class Unhurried(ScriptedModel):
    """Answers in call order, but the calls numbered in `slow` come back only after `wait`
    seconds (never: None); a wait cut short by a cancellation is recorded."""

    def __init__(self, *answers: str, slow: set[int], wait: float | None = None) -> None:
        super().__init__(*answers)
        self.slow, self.wait = slow, wait
        self.cancelled: list[int] = []

    async def complete(self, messages: Any, **sampling: Any) -> Completion:
        call = len(self.prompts) + 1
        completion = await super().complete(messages, **sampling)  # taken in call order
        if call in self.slow:
            try:
                if self.wait is None:
                    await asyncio.Event().wait()
                await asyncio.sleep(self.wait or 0)
            except asyncio.CancelledError:
                self.cancelled.append(call)
                raise
        return completion


async def test_with_no_person_to_choose_the_first_ok_candidate_ends_the_wait(
    tmp_path: Path,
) -> None:
    # Candidates 2 and 3 are still being written when candidate 1 verifies ok.
    model = Unhurried(*[answer(("app.py", FIXED))] * 3, slow={2, 3})
    # (Were they waited for, the run would never end: the test fails after 60 s instead.)
    run = run_loop(tmp_path, model, gate=PolicyGate(), candidates=3)
    result = await asyncio.wait_for(run, 60)
    assert (result.status.value, len(result.iterations)) == ("ok", 1)
    assert sorted(model.cancelled) == [2, 3]  # their requests cancelled, not left running
    not_waited = "not waited for: candidate 1 verified ok first"
    verified = {e["k"]: e["verdict"] or e["dropped"] for e in of_type(result, "CandidateVerified")}
    assert verified == {1: "ok", 2: not_waited, 3: not_waited}
    assert [e["k"] for e in of_type(result, "CandidateChosen")] == [1]
    # Their prompts were sent and read: spent, and said so in the trail.
    given_up = of_type(result, "ModelGivenUp")
    assert [(e["n"], e["candidate"]) for e in given_up] == [(1, 2), (1, 3)]
    asked = of_type(result, "ModelRequested")
    assert result.tokens == model.tokens + sum(e["prompt_tokens"] for e in asked[1:])
    trail = iteration_dir(result, 1) / "candidates"
    assert json.loads((trail / "3" / "verdict.json").read_text())["dropped"] == not_waited
    assert not (trail / "3" / "response.txt").exists()
    # A resume and the bench count them from the trail as the run did: 3 calls, 3 prompts.
    trail_events = RunDirectory(Path(result.run_dir)).events()
    assert resume_state([e for e in trail_events if e.type != "RunFinished"]).tokens == (
        result.tokens
    )
    watch = RunWatch("t/1", "cand3", lambda said: None)
    for event in trail_events:
        watch.emit(event)
    assert (watch.spend.model_calls, watch.spend.prompt_tokens) == (3, result.tokens)


async def test_without_an_ok_yet_every_late_candidate_is_waited_for(tmp_path: Path) -> None:
    # Candidate 1 fails; the late candidate 2 is the fix: waited for, verified, chosen.
    model = Unhurried(answer(("app.py", WRONG)), answer(("app.py", FIXED)), slow={2}, wait=0.5)
    result = await run_loop(tmp_path, model, gate=PolicyGate(), candidates=2)
    assert (result.status.value, len(result.iterations)) == ("ok", 1)
    assert model.cancelled == []
    verified = {e["k"]: e["verdict"] for e in of_type(result, "CandidateVerified")}
    assert verified == {1: "failing", 2: "ok"}
    assert of_type(result, "ModelGivenUp") == []


async def test_a_person_choosing_sees_every_candidate_however_late(tmp_path: Path) -> None:
    gate = ScriptedGate(pick=2)
    model = Unhurried(*[answer(("app.py", FIXED)), answer(("app.py", WRONG))], slow={2}, wait=0.5)
    result = await run_loop(tmp_path, model, gate=gate, candidates=2, max_iterations=1)
    assert model.cancelled == []
    assert [(c.k, c.verdict) for c in gate.choices[0]] == [(1, "ok"), (2, "failing")]
    assert [e["k"] for e in of_type(result, "CandidateChosen")] == [2]


async def test_a_candidate_the_model_fails_to_answer_is_dropped_not_fatal(
    tmp_path: Path,
) -> None:
    model = ScriptedModel(answer(("app.py", "VALUE = 3\n")), TRUNCATED, answer(("app.py", FIXED)))
    result = await run_loop(tmp_path, model, candidates=3)
    assert (result.status.value, len(result.iterations)) == ("ok", 1)
    dropped = {e["k"]: e["dropped"] for e in of_type(result, "CandidateVerified")}
    assert dropped[2] == "no answer: answer truncated at max_tokens=4096 (finish_reason length)"
    assert [e["k"] for e in of_type(result, "CandidateChosen")] == [3]


async def test_when_every_candidate_fails_to_answer_the_run_ends_in_error(tmp_path: Path) -> None:
    model = ScriptedModel(TRUNCATED, TRUNCATED)
    result = await run_loop(tmp_path, model, candidates=2)
    assert result.status.value == "error"
    assert "truncated at max_tokens=4096" in result.reason


async def test_the_person_picks_a_candidate_that_is_not_the_best(tmp_path: Path) -> None:
    gate = ScriptedGate(pick=1)
    model = ScriptedModel(
        answer(("app.py", "VALUE = 3\n")),
        answer(("app.py", FIXED)),
        answer(("app.py", FIXED)),  # the same as candidate 2: not verified twice
        answer(("app.py", FIXED)),
    )
    result = await run_loop(tmp_path, model, gate=gate, candidates=3, max_iterations=1)
    assert [c.k for c in gate.choices[0]] == [1, 2]
    dropped = {e["k"]: e["dropped"] for e in of_type(result, "CandidateVerified")}
    assert dropped[3] == "the same as candidate 2"
    assert of_type(result, "CandidateChosen")[0]["by"] == "person"
    assert result.iterations[0].status == "failing"
    repo = git.Repo(tmp_path / "project")
    assert repo.git.show(f"fixloop/{RUN_ID}:app.py") == "VALUE = 3"


async def test_no_usable_candidate_costs_the_iteration_with_the_first_problem(
    tmp_path: Path,
) -> None:
    fixed = answer(("app.py", FIXED))
    model = ScriptedModel("no edits here", "nor here", fixed, fixed)
    result = await run_loop(tmp_path, model, candidates=2)
    assert [r.status for r in result.iterations] == ["format_error", "ok"]
    assert "Your answer could not be used" in model.prompt(3)
    dropped = [e["dropped"] for e in of_type(result, "CandidateVerified")]
    assert all(str(d).startswith("unusable: ") for d in dropped[:2])
    assert dropped[3] == "the same as candidate 1"


async def test_with_reask_candidates_no_candidate_left_is_asked_once_more_in_the_iteration(
    tmp_path: Path,
) -> None:
    unchanged = answer(("app.py", BROKEN))
    model = ScriptedModel(unchanged, unchanged, answer(("app.py", FIXED)))
    result = await run_loop(tmp_path, model, candidates=2, reask_candidates=True)
    assert (result.status.value, len(result.iterations)) == ("ok", 1)
    # Two candidates, then the re-ask at its own temperature and the iteration's seed.
    assert model.sampling == [(None, None), (0.8, 1), (0.7, 1)]
    assert "Your last answer changed nothing (app.py came back with the same code)" in (
        model.prompt(3)
    )
    reasked = of_type(result, "AnswerReasked")
    assert [(e["n"], e["reason"]) for e in reasked] == [(1, NO_FILE)]
    asked = [e["candidate"] for e in of_type(result, "ModelRequested")]
    assert asked == [1, 2, 3]
    verified = {e["k"]: e["verdict"] or e["dropped"] for e in of_type(result, "CandidateVerified")}
    assert verified == {1: "changes no file", 2: "changes no file", 3: "ok"}
    assert [e["k"] for e in of_type(result, "CandidateChosen")] == [3]
    trail = iteration_dir(result, 1) / "candidates"
    assert sorted(p.name for p in trail.iterdir()) == ["1", "2", "3"]
    assert "+VALUE = 2" in (trail / "3" / "patch.diff").read_text()


async def test_a_candidates_reask_that_changes_nothing_too_is_two_idle_answers(
    tmp_path: Path,
) -> None:
    unchanged = answer(("app.py", BROKEN))
    model = ScriptedModel(*[unchanged] * 3)
    result = await run_loop(
        tmp_path, model, candidates=2, reask_candidates=True, restart_on_stall=False
    )
    # The candidates and their re-ask changed nothing: two idle answers in a row for the
    # stall guard, as an answer and its re-ask are (one, without the re-ask).
    assert (result.status.value, result.reason) == ("stalled", "2 answers in a row changed no code")
    assert [r.status for r in result.iterations] == ["no_change"]
    assert len(model.prompts) == 3


async def test_later_iterations_sample_new_candidates_and_the_first_after_an_echo(
    tmp_path: Path,
) -> None:
    unchanged = answer(("app.py", BROKEN))
    model = ScriptedModel(
        unchanged, unchanged, answer(("app.py", WRONG)), answer(("app.py", FIXED))
    )
    result = await run_loop(tmp_path, model, candidates=2, sample_after_noop=True)
    assert [r.status for r in result.iterations] == ["no_change", "ok"]
    # Iteration 1: greedy, then seed 1. Iteration 2: the first candidate sampled (the greedy
    # one changed nothing: asked again it would be the same), the second from a seed of its
    # own (seed 1 again drew the same answer: QuixBugs' bucketsort, three iterations).
    assert model.sampling == [(None, None), (0.8, 1), (0.7, 102), (0.8, 9)]
    requested = [
        (e["n"], e["candidate"], e["temperature"], e["sampled_because"])
        for e in of_type(result, "ModelRequested")
    ]
    assert requested == [(1, 1, None, ""), (1, 2, 0.8, ""), (2, 1, 0.7, ECHOED), (2, 2, 0.8, "")]
    unchanged_first = [
        (e["n"], e["k"]) for e in of_type(result, "CandidateVerified") if e["unchanged"]
    ]
    assert unchanged_first == [(1, 1), (1, 2)]


@pytest.mark.parametrize(
    ("first", "sample_after_noop", "statuses"),
    [
        # Off: the first candidate stays greedy though it changed nothing.
        (BROKEN, False, ["no_change", "ok"]),
        # On, but the greedy one changed something: candidate 2's unchanged answer is a
        # sample's, not the greedy answer's, so no echo.
        (WRONG, True, ["failing", "ok"]),
    ],
)
async def test_the_first_candidate_stays_greedy_without_an_echo_to_sample_after(
    tmp_path: Path, first: str, sample_after_noop: bool, statuses: list[str]
) -> None:
    unchanged = answer(("app.py", BROKEN))
    model = ScriptedModel(
        answer(("app.py", first)), unchanged, answer(("app.py", FIXED)), unchanged
    )
    result = await run_loop(tmp_path, model, candidates=2, sample_after_noop=sample_after_noop)
    assert [r.status for r in result.iterations] == statuses
    assert model.sampling == [(None, None), (0.8, 1), (None, None), (0.8, 9)]


async def test_without_reask_candidates_or_with_one_verified_nothing_is_reasked(
    tmp_path: Path,
) -> None:
    unchanged = answer(("app.py", BROKEN))
    off = ScriptedModel(unchanged, unchanged, answer(("app.py", FIXED)), unchanged)
    result = await run_loop(tmp_path / "off", off, candidates=2)
    assert not of_type(result, "AnswerReasked")
    assert [r.status for r in result.iterations] == ["no_change", "ok"]
    wrong = ScriptedModel(answer(("app.py", WRONG)), unchanged)
    result = await run_loop(
        tmp_path / "one", wrong, candidates=2, reask_candidates=True, max_iterations=1
    )
    assert not of_type(result, "AnswerReasked")  # candidate 1 was verified (failing)
    assert [r.status for r in result.iterations] == ["failing"]
