"""The headless printer's line for each of the repair levers' events: a re-asked answer, each
candidate (verified or dropped), the chosen one, a change of strategy; the events as the loop
emits them."""

from __future__ import annotations

import io

from engine.run.events import (
    AnswerReasked,
    BaseEvent,
    CandidateChosen,
    CandidateVerified,
    EditsApplied,
    Formatted,
    IterationStarted,
    ModelGivenUp,
    ModelRequested,
    StrategyChanged,
)
from tui.headless import ProgressPrinter
from tui.screens.main import empty_diff_note
from tui.widgets.run_view import RunView

TESTS = {"collected": 5, "passed": 4, "failed": 1, "errors": 0, "skipped": 0}


def printed(*events: BaseEvent) -> list[str]:
    stream = io.StringIO()
    printer = ProgressPrinter(stream)
    for event in [IterationStarted(n=1, max_n=4), *events]:
        printer.emit(event)
    return stream.getvalue().splitlines()


def test_a_reasked_answer_is_one_line_with_its_temperature() -> None:
    event = AnswerReasked(n=1, reason="the answer changed no file", temperature=0.7)
    assert printed(event) == [
        "fixloop: [1/4] the answer changed no file: asked again at temperature 0.7"
    ]


def test_a_sampled_first_answer_is_one_line_saying_why_in_both_front_ends() -> None:
    sampled = ModelRequested(
        n=1,
        model="m",
        temperature=0.7,
        sampled_because="an earlier answer changed nothing",
    )
    greedy, reask = ModelRequested(n=1, model="m"), ModelRequested(n=1, model="m", temperature=0.7)
    line = "first answer sampled at temperature 0.7: an earlier answer changed nothing"
    assert printed(greedy, sampled, reask) == [f"fixloop: [1/4] {line}"]
    view = RunView()
    for event in (IterationStarted(n=1, max_n=4), greedy, sampled, reask):
        view.apply(event)
    assert view.iterations[1].levers == [line]


def test_candidates_asked_in_one_request_are_one_line_in_both_front_ends() -> None:
    asked = [
        ModelRequested(n=1, model="m", candidate=1),
        ModelRequested(n=1, model="m", candidate=2, temperature=0.8, together=3),
        ModelRequested(n=1, model="m", candidate=3, temperature=0.8, together=3),
        ModelRequested(n=1, model="m", candidate=4, temperature=0.8, together=3),
    ]
    line = "candidates 2-4 asked in one request (n = 3)"
    assert printed(*asked) == [f"fixloop: [1/4] {line}"]
    view = RunView()
    for event in (IterationStarted(n=1, max_n=4), *asked):
        view.apply(event)
    assert view.iterations[1].levers == [line]
    alone = [ModelRequested(n=1, model="m", candidate=k, temperature=0.8) for k in (2, 3)]
    assert printed(*alone) == []


def test_a_candidate_given_up_on_is_one_line_and_its_prompt_counts_in_both_front_ends() -> None:
    given_up = ModelGivenUp(n=1, candidate=3, prompt_tokens=120)
    assert printed(given_up) == ["fixloop: [1/4] candidate 3 not waited for: another verified ok"]
    view = RunView()
    for event in (IterationStarted(n=1, max_n=4), given_up):
        view.apply(event)
    assert (view.iterations[1].tokens, view.tokens) == (120, 120)


def test_an_answer_that_changed_no_file_says_so() -> None:
    assert printed(EditsApplied(n=1, files=[])) == [
        "fixloop: [1/4] the answer changed no file: nothing to commit"
    ]
    assert printed(EditsApplied(n=1, files=["a.py"])) == []
    only_docs = "the answer changed only docstrings, comments or layout"  # `--docs-noop`
    assert printed(EditsApplied(n=1, unchanged=True, because=only_docs)) == [
        f"fixloop: [1/4] {only_docs}: nothing to commit"
    ]
    # The app's diff pane says the same of that iteration.
    view = RunView()
    for event in (IterationStarted(n=1, max_n=4), EditsApplied(n=1, because=only_docs)):
        view.apply(event)
    assert (view.iterations[1].status, empty_diff_note(view.iterations[1])) == (
        "no_change",
        only_docs,
    )
    view.apply(EditsApplied(n=2, files=[]))
    assert empty_diff_note(view.iterations[2]) == "the proposal changed no file"


def test_held_back_files_are_named_with_why_they_are_pinned() -> None:
    event = EditsApplied(n=1, files=["pkg/stats.py"], held_back=["conftest.py", "tests/test_a.py"])
    assert printed(event) == [
        "fixloop: [1/4] test edits held back: conftest.py (its hooks and fixtures decide how "
        "tests run and what they report), tests/test_a.py"
    ]


def test_an_answer_whose_test_edits_were_all_held_back_is_named_so_not_no_change() -> None:
    because = "the answer changed only test files, which are held back"
    event = EditsApplied(
        n=1, files=[], held_back=["tests/test_x.py"], unchanged=True, because=because
    )
    assert printed(event) == [
        "fixloop: [1/4] test edits held back: tests/test_x.py: nothing else to commit"
    ]
    view = RunView()
    for each in (IterationStarted(n=1, max_n=4), event):
        view.apply(each)
    it = view.iterations[1]
    assert it.levers == ["test edits held back: tests/test_x.py"]
    assert empty_diff_note(it) == "test edits held back: tests/test_x.py"


def test_each_candidate_is_one_line_verified_or_dropped_and_the_choice_counts_them() -> None:
    lines = printed(
        CandidateVerified(
            n=1,
            k=1,
            verdict="failing",
            tests=TESTS,
            files=["textstats/core.py"],
            diff_lines=2,
            summary="1 of 5 tests failing",
        ),
        CandidateVerified(n=1, k=2, dropped="changes no file"),
        CandidateVerified(
            n=1,
            k=3,
            verdict="ok",
            tests={**TESTS, "passed": 5, "failed": 0},
            files=["a.py", "b.py"],
        ),
        CandidateChosen(n=1, k=3, why="verified ok, the smallest diff of the ok ones (4 lines)"),
    )
    assert lines == [
        "fixloop: [1/4] candidate 1: failing (4 passed, 1 failed) · textstats/core.py",
        "fixloop: [1/4] candidate 2 dropped: changes no file",
        "fixloop: [1/4] candidate 3: ok (5 passed, 0 failed) · a.py, b.py",
        "fixloop: [1/4] candidate 3 of 3 chosen: verified ok, the smallest diff of the ok ones"
        " (4 lines)",
    ]


def test_the_history_pane_says_why_a_candidate_was_dropped() -> None:
    """The history says what became of the candidates not verified, in the headless printer's
    words (the candidates modal says it under the verified ones)."""
    dropped = CandidateVerified(n=1, k=2, dropped="unusable: your a.py leaves out f")
    view = RunView()
    for event in (
        IterationStarted(n=1, max_n=4),
        CandidateVerified(n=1, k=1, verdict="failing", tests=TESTS, files=["a.py"]),
        dropped,
        CandidateChosen(n=1, k=1, why="chosen by you", by="person"),
    ):
        view.apply(event)
    assert view.iterations[1].levers == [
        "candidate 2 dropped: unusable: your a.py leaves out f",
        "candidate 1 of 2 chosen by you",
    ]
    assert printed(dropped) == [
        "fixloop: [1/4] candidate 2 dropped: unusable: your a.py leaves out f"
    ]


def test_a_choice_by_the_person_says_so() -> None:
    chosen = CandidateChosen(n=1, k=1, why="chosen by you", by="person")
    assert printed(chosen) == ["fixloop: [1/4] candidate 1 chosen by you"]


def test_a_restart_and_an_escalation_are_one_line_each() -> None:
    restart = StrategyChanged(
        n=3,
        kind="restart",
        reason="the same error 2 times in a row: the code is back as it was at the start",
    )
    escalate = StrategyChanged(
        n=4, kind="escalate", reason="the last iteration", model="openai/stronger"
    )
    assert printed(restart, escalate) == [
        "fixloop: [3/4] restarted from the baseline: the same error 2 times in a row:"
        " the code is back as it was at the start",
        "fixloop: [4/4] escalated to openai/stronger: the last iteration",
    ]


def test_the_fix_pass_is_one_line_when_it_changed_or_left_out_something() -> None:
    assert printed(
        Formatted(n=1, files=["a.py", "b.py"], commit="abc"),
        Formatted(n=1, files=["a.py"], held_back=["tests/test_a.py"]),
        Formatted(n=1, failed=True),
        Formatted(n=1),
    ) == [
        "fixloop: [1/4] formatted: 2 files",
        "fixloop: [1/4] formatted: 1 file; not formatted (pinned tests): tests/test_a.py",
        "fixloop: [1/4] formatter failed: nothing applied",
    ]


def test_the_history_pane_has_the_same_line_for_the_fix_pass() -> None:
    view = RunView()
    for event in (IterationStarted(n=1, max_n=4), Formatted(n=1, files=["a.py", "b.py"])):
        view.apply(event)
    assert view.iterations[1].levers == ["formatted: 2 files"]
