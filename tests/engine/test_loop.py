"""The loop itself, step by step, without gVisor: a scripted model, a sandbox whose tests are a
pure function of the tree it is shown, and a scripted gate, over a real git repository."""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

import git
import pytest

from engine.edits.proposal import Edit, Proposal
from engine.errors import ModelError
from engine.model.local import EMBEDDED_MODEL
from engine.model.types import Completion, Message, Usage
from engine.project.paths import run_path
from engine.project.settings import Settings, load_settings
from engine.project.workspace import Workspace
from engine.run.events import RunFinished
from engine.run.gate import CandidateView, Choice, PassReview, PolicyGate, Review
from engine.run.guards import Budget, RunInterrupted
from engine.run.loop import Deps, FixLoop
from engine.run.outcome import RunConfig, RunResult
from engine.run.resume import ResumeState, resume_state
from engine.run.run_directory import RunDirectory
from engine.run.start import run_config, start_run
from engine.verify.execute import Verifier
from engine.verify.results import StageKind, TestCase, TestCounts, TestReport
from engine.verify.stages import Stage
from sandbox import ExecRequest, ExecResult, SandboxError
from sandbox.contract import BackendName

RUN_ID = "20260101-000000-loop"
BROKEN = "VALUE = 1\n"
FIXED = "VALUE = 2\n"
TEST = "from app import VALUE\n\n\ndef test_value():\n    assert VALUE == 2\n"
CHEAT = "def test_value():\n    pass  # cheat\n"


pytestmark = pytest.mark.usefixtures("git_as_tester")


class TreeSandbox:
    """Runs "the tests" by reading the tree: green when app.py holds the fix or the test
    was gutted; else a failure that quotes app.py, so the same code fails the same way.
    `down` raises the sandbox's own failure for that many jobs."""

    def __init__(self, down: int = 0, no_tests: bool = False) -> None:
        self.down = down
        self.no_tests = no_tests
        self.jobs = 0

    @property
    def name(self) -> BackendName:
        return "unsafe-local"

    async def run(self, request: ExecRequest) -> ExecResult:
        self.jobs += 1
        if self.down:
            self.down -= 1
            raise SandboxError("runsc: cannot start the sandbox")
        if self.no_tests:  # pytest's exit 5: nothing collected
            return self.result(TestReport(exitstatus=5), 5, "no tests ran", request)
        app = (request.workdir / "app.py").read_text()
        test = (request.workdir / "tests" / "test_app.py").read_text()
        green = app == FIXED or "cheat" in test
        nodeid = "tests/test_app.py::test_value"
        if "pytest.skip" in app:  # the code under test skips the test that would fail
            skipped = TestCase(nodeid=nodeid, outcome="skipped", when="setup")
            counts = TestCounts(collected=1, skipped=1)
            report = TestReport(exitstatus=0, counts=counts, nodeids=[nodeid], tests=[skipped])
            return self.result(report, 0, "1 skipped", request)
        failed = TestCase(
            nodeid=nodeid,
            outcome="failed",
            file="tests/test_app.py",
            line=4,
            assertion="assert VALUE == 2",
            exception_type="AssertionError",
            exception_message=f"assert {app.strip()} == 2",
        )
        report = TestReport(
            exitstatus=0 if green else 1,
            counts=TestCounts(collected=1, passed=1 if green else 0, failed=0 if green else 1),
            nodeids=[nodeid],
            tests=[] if green else [failed],
        )
        stdout = "" if green else f"FAILED {nodeid} - assert {app.strip()} == 2"
        return self.result(report, 0 if green else 1, stdout, request)

    def result(
        self, report: TestReport, exit_code: int, stdout: str, request: ExecRequest
    ) -> ExecResult:
        nonce = request.env["FIXLOOP_REPORT_NONCE"]
        return ExecResult(
            exit_code=exit_code,
            stdout=stdout,
            stderr=nonce + report.model_dump_json(),
            duration_ms=5,
            backend="unsafe-local",
            workdir="/work",
        )

    async def close(self) -> None:
        return None


class ScriptedModel:
    """Answers with the next scripted text; keeps every prompt it was sent."""

    model = "scripted"

    def __init__(self, *answers: str | ModelError, tokens: int = 10) -> None:
        self.answers = list(answers)  # a ModelError is raised in its turn
        self.prompts: list[list[Message]] = []
        self.sampling: list[tuple[float | None, int | None]] = []
        self.tokens = tokens

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        on_text: Callable[[str], None] | None = None,
        temperature: float | None = None,
        seed: int | None = None,
    ) -> Completion:
        self.prompts.append(list(messages))
        self.sampling.append((temperature, seed))
        usage = Usage(prompt_tokens=self.tokens, completion_tokens=0, cost_usd=0.0)
        text = self.answers.pop(0)
        if isinstance(text, ModelError):
            raise text
        return Completion(
            text=text, usage=usage, finish_reason="stop", model=self.model, attempts=1, duration_s=0
        )

    def prompt(self, n: int) -> str:
        return self.prompts[n - 1][-1].content


class ScriptedGate:
    """Approves (or aborts) every proposal, or gives the scripted `reviews` in turn."""

    def __init__(
        self,
        decision: str = "approve",
        keep_repairing: bool = False,
        reviews: Sequence[Review] = (),
        pick: int | None = None,
    ) -> None:
        self.decision = decision
        self.keep_repairing = keep_repairing
        self.reviews = list(reviews)
        self.passes: list[list[str]] = []
        self.pick = pick  # the candidate the person picks; None: the ranking's best
        self.choices: list[list[CandidateView]] = []

    approval = "step"

    async def review(self, n: int, proposal: Proposal, held_back: list[str]) -> Review:
        if self.reviews:
            return self.reviews.pop(0)
        if self.decision == "abort":
            return Review(decision="abort", note="not this one", by="person")
        return Review(decision="approve", allow_test_edits=True)

    async def review_pass(self, n: int, reasons: list[str]) -> PassReview:
        self.passes.append(reasons)
        return PassReview(
            accept=False, note="rejected", comment="no cheating", keep_repairing=self.keep_repairing
        )

    async def choose(self, n: int, candidates: list[CandidateView], best: Choice) -> Choice:
        self.choices.append(candidates)
        if self.pick is None:
            return best
        return Choice(decision="pick", k=self.pick, why="chosen by you", by="person")

    async def between(self, n: int) -> str | None:
        return None


class StoppingGate(ScriptedGate):
    """The person stops (or the task is cancelled) while the first proposal waits."""

    def __init__(self, raised: BaseException | None = None) -> None:
        super().__init__()
        self.raised = raised or RunInterrupted()

    async def review(self, n: int, proposal: Proposal, held_back: list[str]) -> Review:
        raise self.raised


def answer(*files: tuple[str, str]) -> str:
    edits = [{"path": path, "content": content} for path, content in files]
    return json.dumps({"explanation": "try", "edits": edits})


def project(tmp_path: Path, app: str = BROKEN) -> Path:
    root = tmp_path / "project"
    (root / "tests").mkdir(parents=True)
    (root / "app.py").write_text(app)
    (root / "tests" / "test_app.py").write_text(TEST)
    repo = git.Repo.init(root)
    repo.git.add(A=True)
    repo.index.commit("baseline")
    return root


async def run_loop(
    tmp_path: Path,
    model: ScriptedModel,
    *,
    gate: ScriptedGate | None = None,
    sandbox: TreeSandbox | None = None,
    app: str = BROKEN,
    escalation: ScriptedModel | None = None,
    **config: object,
) -> RunResult:
    root = project(tmp_path, app)
    stages = [Stage(name="test", kind=StageKind.TESTS, cmd="pytest -q")]
    deps = Deps(
        model=model,
        verifier=Verifier(sandbox or TreeSandbox(), stages),
        workspace=Workspace.create(root, RUN_ID),
        gate=gate or ScriptedGate(),
        run_dir=RunDirectory.create(root, RUN_ID),
        approval="step",
        versions={"fixloop-tui": "test"},
        escalation=escalation,
    )
    settings = RunConfig.model_validate({"model": model.model, "no_progress_limit": 9, **config})
    return await FixLoop(settings, deps).run()


def events(result: RunResult) -> list[dict[str, object]]:
    lines = (Path(result.run_dir) / "events.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


async def test_green_on_the_first_edit_ends_ok(tmp_path: Path) -> None:
    result = await run_loop(tmp_path, ScriptedModel(answer(("app.py", FIXED))))
    assert (result.status.value, result.reason) == ("ok", "verified green on iteration 1")
    assert [(r.status, r.commit is not None) for r in result.iterations] == [("ok", True)]


async def test_a_project_already_green_ends_ok_without_asking(tmp_path: Path) -> None:
    model = ScriptedModel()
    result = await run_loop(tmp_path, model, app=FIXED)
    assert result.status.value == "ok"
    assert result.reason == "already green before any edit: nothing to fix"
    assert model.prompts == []


async def test_an_environment_failure_at_the_baseline_is_tried_twice_then_ends(
    tmp_path: Path,
) -> None:
    sandbox = TreeSandbox(down=2)
    result = await run_loop(tmp_path, ScriptedModel(), sandbox=sandbox)
    assert result.status.value == "env_failure"
    assert "run `fixloop-tui doctor`" in result.reason
    assert sandbox.jobs == 2


async def test_an_unusable_answer_costs_an_iteration_and_the_model_hears_why(
    tmp_path: Path,
) -> None:
    model = ScriptedModel("I would rather not.", answer(("app.py", FIXED)))
    result = await run_loop(tmp_path, model)
    assert [r.status for r in result.iterations] == ["format_error", "ok"]
    assert result.iterations[0].summary in model.prompt(2)


async def test_the_same_failure_after_two_edits_stalls(tmp_path: Path) -> None:
    model = ScriptedModel(answer(("notes.txt", "one\n")), answer(("notes.txt", "two\n")))
    result = await run_loop(tmp_path, model, restart_on_stall=False)
    assert result.status.value == "stalled"
    assert [r.status for r in result.iterations] == ["failing", "failing"]


async def test_the_repeat_note_is_rendered_once_into_the_packet_the_model_sees(
    tmp_path: Path,
) -> None:
    model = ScriptedModel(
        answer(("notes.txt", "one\n")), answer(("notes.txt", "two\n")), answer(("app.py", FIXED))
    )
    result = await run_loop(tmp_path, model, no_progress_limit=9, restart_on_stall=False)
    assert result.status.value == "stalled"  # the grace was the first edit's
    note = "This is the 2nd time you see this exact error"
    first = Path(result.run_dir) / "iterations" / "01"
    packet = (first / "packet.txt").read_text()
    assert note in packet
    assert packet in model.prompt(2)
    assert json.loads((first / "packet.json").read_text())["repeat_note"].startswith(note)


async def test_two_answers_in_a_row_that_change_nothing_stall(tmp_path: Path) -> None:
    model = ScriptedModel(answer(("app.py", BROKEN)), answer(("app.py", BROKEN)))
    result = await run_loop(tmp_path, model, noop_retry=False, restart_on_stall=False)
    assert (result.status.value, result.reason) == ("stalled", "2 answers in a row changed no code")
    assert [r.status for r in result.iterations] == ["no_change", "no_change"]
    assert "Your last answer changed no file" in model.prompt(2)


async def test_spending_over_the_token_budget_ends_the_run(tmp_path: Path) -> None:
    model = ScriptedModel(answer(("app.py", FIXED)), tokens=50)
    result = await run_loop(tmp_path, model, budget=Budget(max_tokens=20))
    assert result.status.value == "budget_exceeded"
    assert result.reason == "used 50 tokens, over the cap of 20"
    assert [(r.status, r.tokens) for r in result.iterations] == [("running", 50)]


async def test_an_abort_at_the_gate_ends_the_run_aborted_with_nothing_applied(
    tmp_path: Path,
) -> None:
    result = await run_loop(
        tmp_path, ScriptedModel(answer(("app.py", FIXED))), gate=ScriptedGate("abort")
    )
    assert (result.status.value, result.reason) == ("aborted", "not this one")
    assert result.final_commit is None
    # Nothing was committed: no branch is left to accept, keep or discard.
    assert result.branch == ""
    assert RUN_ID not in git.Repo(tmp_path / "project").git.branch("--list", "fixloop/*")


async def test_a_rejected_suspicious_pass_keeps_repairing_then_green(tmp_path: Path) -> None:
    gate = ScriptedGate(keep_repairing=True)
    model = ScriptedModel(
        answer(("tests/test_app.py", CHEAT)),
        answer(("tests/test_app.py", TEST), ("app.py", FIXED)),
    )
    result = await run_loop(tmp_path, model, gate=gate)
    assert len(gate.passes) == 1
    # The gutted test was reverted in a commit of its own, and the tree verified again...
    reverts = [e for e in events(result) if "revert the test changes" in str(e.get("message"))]
    assert len(reverts) == 1
    repo = git.Repo(tmp_path / "project")
    assert repo.git.show(f"{reverts[0]['sha']}:tests/test_app.py") + "\n" == TEST
    # ...so the next prompt is the normal one: the packet of the real failure, and why.
    second = model.prompt(2)
    assert "assert VALUE = 1 == 2" in second
    assert "the pass was rejected as not honest" in second
    assert "Your changes to tests/test_app.py were reverted." in second
    assert "The reviewer said: no cheating." in second
    assert [r.status for r in result.iterations] == ["failing", "ok"]
    assert result.status.value == "ok"
    assert result.accepted_suspicious == []


async def test_a_rejected_proposal_is_not_applied_and_the_model_hears_the_note(
    tmp_path: Path,
) -> None:
    note = "use the constant from the spec\nand keep it an int"
    gate = ScriptedGate(
        reviews=[Review(decision="reject", comment=note, note="rejected by you", by="person")]
    )
    model = ScriptedModel(answer(("app.py", "VALUE = 3\n")), answer(("app.py", FIXED)))
    result = await run_loop(tmp_path, model, gate=gate)
    assert result.status.value == "ok"
    first = result.iterations[0]
    assert (first.status, first.commit) == ("rejected", None)
    assert first.summary == "rejected by you: use the constant from the spec"
    second = model.prompt(2)
    assert "Your last proposal (to app.py) was rejected by the reviewer and NOT applied." in second
    assert "The reviewer said: use the constant from the spec\nand keep it an int." in second
    assert "assert VALUE = 1 == 2" in second  # the same packet as before
    commits = git.Repo(tmp_path / "project").git.log("--format=%s", f"fixloop/{RUN_ID}")
    assert "VALUE = 3" not in commits
    assert commits.count("fixloop[iter") == 1
    resolved = [e for e in events(result) if e["type"] == "ReviewResolved"]
    assert (resolved[0]["decision"], resolved[0]["comment"]) == ("reject", note)


async def test_raw_feedback_tells_the_model_the_output_instead_of_the_packet(
    tmp_path: Path,
) -> None:
    model = ScriptedModel(answer(("app.py", "VALUE = 3\n")), answer(("app.py", FIXED)))
    result = await run_loop(tmp_path, model, feedback="raw")
    assert result.status.value == "ok"
    for n, value in ((1, 1), (2, 3)):
        told = model.prompt(n)
        failed = f"FAILED tests/test_app.py::test_value - assert VALUE = {value} == 2"
        assert f"$ pytest -q  (exit 1)\n{failed}\n\nPlease fix it." in told
        assert "Verification failed" not in told
    # The distilled packet is still in the trail; what the model was told is packet.txt.
    iteration = Path(result.run_dir) / "iterations" / "01"
    assert (iteration / "packet.json").is_file()
    assert (iteration / "packet.txt").read_text().startswith("$ pytest -q  (exit 1)")


async def test_a_note_with_an_approval_goes_with_the_next_prompt(tmp_path: Path) -> None:
    gate = ScriptedGate(reviews=[Review(decision="approve", comment="also check 0", by="person")])
    model = ScriptedModel(answer(("app.py", "VALUE = 3\n")), answer(("app.py", FIXED)))
    result = await run_loop(tmp_path, model, gate=gate)
    assert [r.status for r in result.iterations] == ["failing", "ok"]
    assert "The reviewer approved your last proposal and said: also check 0." in model.prompt(2)


async def test_a_proposal_kept_in_part_tells_the_model_the_dropped_hunks_and_the_note(
    tmp_path: Path,
) -> None:
    part = Proposal(
        explanation="edited by you",
        edits=[Edit(path="app.py", content="VALUE = 3\n")],
        format="json",
    )
    kept = Review(
        decision="edit",
        proposal=part,
        note="edited by you",
        comment="leave the docstring alone",
        by="person",
        dropped=["app.py lines 1-3"],
    )
    gate = ScriptedGate(reviews=[kept])
    model = ScriptedModel(answer(("app.py", '"""x"""\nVALUE = 3\n')), answer(("app.py", FIXED)))
    result = await run_loop(tmp_path, model, gate=gate)
    assert [r.status for r in result.iterations] == ["failing", "ok"]
    assert (
        "The reviewer applied only part of your last proposal and dropped your changes to "
        "app.py lines 1-3: those lines stay as they were. "
        "The reviewer said: leave the docstring alone."
    ) in model.prompt(2)
    resolved = [e for e in events(result) if e["type"] == "ReviewResolved"]
    assert (resolved[0]["note"], resolved[0]["dropped"]) == ("edited by you", ["app.py lines 1-3"])


async def test_a_baseline_without_tests_is_refused_before_the_model_is_asked(
    tmp_path: Path,
) -> None:
    model = ScriptedModel(answer(("app.py", FIXED)))
    result = await run_loop(tmp_path, model, sandbox=TreeSandbox(no_tests=True))
    assert result.status.value == "no_tests"
    assert "the test command ran none" in result.reason
    assert model.prompts == []
    assert result.branch == ""


async def test_a_stop_keeps_the_run_resumable(tmp_path: Path) -> None:
    gate = StoppingGate()
    with pytest.raises(RunInterrupted):
        await run_loop(tmp_path, ScriptedModel(answer(("app.py", FIXED))), gate=gate)
    run_dir = RunDirectory(run_path(tmp_path / "project", RUN_ID))
    kinds = [type(e).__name__ for e in run_dir.events()]
    assert kinds[-1] == "RunStopped"
    assert "RunFinished" not in kinds
    state = resume_state(run_dir.events())
    assert state.next_n == 1
    resumed = await resume_loop(tmp_path, state, ScriptedModel(answer(("app.py", FIXED))))
    assert (resumed.status.value, resumed.iterations[-1].status) == ("ok", "ok")


async def resume_loop(
    tmp_path: Path, state: ResumeState, model: ScriptedModel, **config: object
) -> RunResult:
    """The stopped run of `run_loop` picked up where its events end, as `resume` does."""
    root = tmp_path / "project"
    workspace = Workspace.reopen(
        root,
        RUN_ID,
        start_head=state.started.baseline,
        user_branch=None,
        baseline=state.started.baseline,
    )
    stages = [Stage(name="test", kind=StageKind.TESTS, cmd="pytest -q")]
    deps = Deps(
        model=model,
        verifier=Verifier(TreeSandbox(), stages),
        workspace=workspace,
        gate=ScriptedGate(),
        run_dir=RunDirectory(run_path(root, RUN_ID)),
    )
    settings = RunConfig.model_validate({"model": "scripted", "no_progress_limit": 9, **config})
    return await FixLoop(settings, deps, state).run()


async def test_a_resumed_run_remembers_that_the_model_sent_a_file_back_unchanged(
    tmp_path: Path,
) -> None:
    wrong = answer(("app.py", "VALUE = 3\n"))
    with pytest.raises(RunInterrupted):  # stopped at the review of the re-asked answer
        await run_loop(
            tmp_path,
            ScriptedModel(answer(("app.py", BROKEN)), wrong),
            gate=StoppingGate(),
            sample_after_noop=True,
        )
    run_dir = RunDirectory(run_path(tmp_path / "project", RUN_ID))
    state = resume_state(run_dir.events())
    assert (state.next_n, state.noop_seen) == (1, True)
    model = ScriptedModel(answer(("app.py", FIXED)))
    resumed = await resume_loop(tmp_path, state, model, sample_after_noop=True)
    assert resumed.status.value == "ok"
    assert model.sampling == [(0.7, 101)]  # sampled from the start, as before the stop


class StopsAtChoice(ScriptedGate):
    """The person stops while iteration `at`'s candidates wait to be chosen from."""

    def __init__(self, at: int) -> None:
        super().__init__()
        self.at = at

    async def choose(self, n: int, candidates: list[CandidateView], best: Choice) -> Choice:
        if n == self.at:
            raise RunInterrupted()
        return await super().choose(n, candidates, best)


async def test_a_resumed_run_remembers_a_first_candidate_that_changed_nothing(
    tmp_path: Path,
) -> None:
    model = ScriptedModel(
        answer(("app.py", BROKEN)),  # iteration 1: the greedy first candidate changes nothing
        answer(("app.py", "VALUE = 3\n")),  # and the sampled one is wrong
        answer(("app.py", "VALUE = 4\n")),
        answer(("app.py", "VALUE = 5\n")),
    )
    levers = {"candidates": 2, "sample_after_noop": True}
    with pytest.raises(RunInterrupted):
        await run_loop(tmp_path, model, gate=StopsAtChoice(2), **levers)
    state = resume_state(RunDirectory(run_path(tmp_path / "project", RUN_ID)).events())
    assert (state.next_n, state.noop_seen) == (2, True)
    model = ScriptedModel(answer(("app.py", FIXED)), answer(("app.py", BROKEN)))
    resumed = await resume_loop(tmp_path, state, model, **levers)
    assert resumed.status.value == "ok"
    assert model.sampling == [(0.7, 102), (0.8, 9)]  # sampled, as the run would have gone on


async def stopped_after_an_unchanged_answer(tmp_path: Path, **levers: object) -> ResumeState:
    """A run whose iteration 1 answer changed nothing (not re-asked), stopped at the review of
    iteration 2's: the state a resume starts from."""
    model = ScriptedModel(answer(("app.py", BROKEN)), answer(("app.py", "VALUE = 3\n")))
    with pytest.raises(RunInterrupted):
        await run_loop(tmp_path, model, gate=StoppingGate(), **levers)
    return resume_state(RunDirectory(run_path(tmp_path / "project", RUN_ID)).events())


async def test_without_the_reask_a_resumed_run_still_remembers_an_unchanged_answer(
    tmp_path: Path,
) -> None:
    levers = {"sample_after_noop": True, "noop_retry": False}
    state = await stopped_after_an_unchanged_answer(tmp_path, **levers)
    assert (state.next_n, state.noop_seen) == (2, True)
    model = ScriptedModel(answer(("app.py", FIXED)))
    resumed = await resume_loop(tmp_path, state, model, **levers)
    assert [r.status for r in resumed.iterations] == ["no_change", "ok"]
    assert model.sampling == [(0.7, 102)]  # sampled, as the run would have gone on


async def test_a_resumed_run_counts_the_answers_that_changed_nothing_before_the_stop(
    tmp_path: Path,
) -> None:
    levers = {"noop_retry": False, "restart_on_stall": False}
    state = await stopped_after_an_unchanged_answer(tmp_path, **levers)
    # The second unchanged answer in a row, as the stopped run would have counted it.
    again = ScriptedModel(answer(("app.py", BROKEN)))
    resumed = await resume_loop(tmp_path, state, again, **levers)
    assert resumed.status.value == "stalled"
    assert resumed.reason == "2 answers in a row changed no code"


async def test_a_resumed_run_counts_a_failed_reask_as_no_answer(tmp_path: Path) -> None:
    """As the run counted it: iteration 1's answer changed nothing and its re-ask failed, one
    idle answer (an answer and a re-ask that both changed nothing are two)."""
    truncated = ModelError("answer truncated", cause="answer truncated", answered=True)
    model = ScriptedModel(answer(("app.py", BROKEN)), truncated, answer(("app.py", "VALUE = 3\n")))
    with pytest.raises(RunInterrupted):  # at the review of iteration 2's answer
        await run_loop(tmp_path, model, gate=StoppingGate())
    state = resume_state(RunDirectory(run_path(tmp_path / "project", RUN_ID)).events())
    assert [(seen.n, seen.idle_answers) for seen in state.observations] == [(1, 1)]


async def test_a_resumed_run_keeps_a_restart_that_put_nothing_back_under_keep_asking(
    tmp_path: Path,
) -> None:
    unchanged = answer(("app.py", BROKEN))
    model = ScriptedModel(unchanged, unchanged, answer(("app.py", "VALUE = 3\n")))
    with pytest.raises(RunInterrupted):  # at the review of iteration 2's answer
        await run_loop(tmp_path, model, gate=StoppingGate(), keep_asking=True)
    state = resume_state(RunDirectory(run_path(tmp_path / "project", RUN_ID)).events())
    assert state.strategy_changes == []  # the stall of iteration 1 spent no restart


async def test_a_cancelled_run_ends_aborted_by_you(tmp_path: Path) -> None:
    gate = StoppingGate(asyncio.CancelledError())
    with pytest.raises(asyncio.CancelledError):
        await run_loop(tmp_path, ScriptedModel(answer(("app.py", FIXED))), gate=gate)
    run_dir = RunDirectory(run_path(tmp_path / "project", RUN_ID))
    finished = run_dir.events()[-1]
    assert isinstance(finished, RunFinished)
    assert (finished.status, finished.reason) == ("aborted", "aborted by you")


async def test_a_baseline_test_skipped_by_the_code_under_test_is_a_suspicious_pass(
    tmp_path: Path,
) -> None:
    """No test file changed and no skip marker was added: only the baseline's test ids show
    that the test the run started with no longer runs."""
    skipping = 'import pytest\n\npytest.skip("flaky")\nVALUE = 1\n'
    result = await run_loop(tmp_path, ScriptedModel(answer(("app.py", skipping))))
    assert result.status.value == "suspicious_pass"
    assert "1 baseline test now skipped: tests/test_app.py::test_value" in result.reason.split("; ")


async def test_a_suspicious_pass_not_kept_repairing_ends_the_run(tmp_path: Path) -> None:
    model = ScriptedModel(answer(("tests/test_app.py", CHEAT)))
    result = await run_loop(tmp_path, model)
    assert result.status.value == "suspicious_pass"


async def test_every_proposal_failing_differently_exhausts_the_iterations(tmp_path: Path) -> None:
    model = ScriptedModel(answer(("app.py", "VALUE = 3\n")), answer(("app.py", "VALUE = 4\n")))
    result = await run_loop(tmp_path, model, max_iterations=2)
    assert (result.status.value, result.reason) == ("exhausted", "2 proposals did not pass")
    assert [r.status for r in result.iterations] == ["failing", "failing"]


async def test_the_run_started_event_records_the_approval_mode_and_versions(
    tmp_path: Path,
) -> None:
    result = await run_loop(tmp_path, ScriptedModel(answer(("app.py", FIXED))))
    started = events(result)[0]
    assert started["type"] == "RunStarted"
    assert (started["mode"], started["versions"]) == ("step", {"fixloop-tui": "test"})


async def test_the_iteration_records_are_the_result_and_the_events_agree(tmp_path: Path) -> None:
    model = ScriptedModel("no edits here", answer(("app.py", FIXED)))
    result = await run_loop(tmp_path, model)
    saved = json.loads((Path(result.run_dir) / "result.json").read_text())
    assert [r["status"] for r in saved["iterations"]] == ["format_error", "ok"]
    finished = events(result)[-1]
    assert (finished["type"], finished["iterations"]) == ("RunFinished", 2)


@pytest.mark.parametrize("mode", ["step", "auto"])
async def test_a_run_started_from_settings_records_its_gates_approval_mode_and_versions(
    tmp_path: Path, mode: str
) -> None:
    root = project(tmp_path)
    settings = load_settings(root, {"model": "openai/scripted"})
    model = ScriptedModel(answer(("app.py", FIXED)))
    gate = ScriptedGate()
    gate.approval = mode
    result = await start_run(root, settings, gate=gate, model_client=model, sandbox=TreeSandbox())
    started = events(result)[0]
    assert started["mode"] == mode
    versions = started["versions"]
    assert isinstance(versions, dict)
    assert {"python", "fixloop-tui", "litellm"} <= set(versions)
    assert ("runsc" in versions) == (shutil.which("runsc") is not None)


async def test_a_run_behind_the_policy_gate_records_auto_approval(tmp_path: Path) -> None:
    root = project(tmp_path)
    settings = load_settings(root, {"model": "openai/scripted", "approve": "step"})
    model = ScriptedModel(answer(("app.py", FIXED)))
    result = await start_run(
        root, settings, gate=PolicyGate(), model_client=model, sandbox=TreeSandbox()
    )
    assert events(result)[0]["mode"] == "auto"


async def test_the_run_record_keeps_the_settings_the_run_decided(tmp_path: Path) -> None:
    """What run.json says the run was configured with is what the loop ran with: the defaults
    decided per model and per project are in its settings, equal to its loop config's."""
    root = project(tmp_path)
    settings = load_settings(root, {"model": "openai/scripted"})
    model = ScriptedModel(answer(("app.py", FIXED)))
    result = await start_run(
        root, settings, gate=PolicyGate(), model_client=model, sandbox=TreeSandbox()
    )
    record = RunDirectory(Path(result.run_dir)).record()
    kept, config = record.settings, record.config
    assert (kept.edit_format, kept.candidates, kept.strategy.prompt_profile) == ("json", 1, "full")
    assert (kept.python, kept.task) == (record.python, config.task)
    assert config == RunConfig.from_settings(kept)


def test_every_run_config_field_that_mirrors_a_setting_is_copied_from_it() -> None:
    settings = Settings(
        task="make it pass",
        model="openai/x",
        edit_format="whole",
        max_iters=7,
        no_progress=5,
        max_tokens=1234,
        max_cost=0.5,
        wall_clock=60.0,
        files=["app.py"],
        allow_test_edits=True,
        candidates=2,
        strategy={"preset": "default", "prompt_profile": "small", "noop_retry": False},
        escalate_model="openai/y",
    )
    config = RunConfig.from_settings(settings)
    copied = {
        "task": settings.task,
        "model": settings.model,
        "edit_format": settings.edit_format,
        "max_iterations": settings.max_iters,
        "no_progress_limit": settings.no_progress,
        "budget": Budget(max_tokens=1234, max_cost_usd=0.5, wall_clock_s=60.0),
        "files": settings.files,
        "allow_test_edits": settings.allow_test_edits,
        "candidates": settings.candidates,
        "strategy": settings.strategy,
        "escalate_model": settings.escalate_model,
    }
    the_loops_own = {"packet_cap", "spec"}
    assert set(RunConfig.model_fields) == set(copied) | the_loops_own
    assert {name: getattr(config, name) for name in copied} == copied


def test_the_embedded_model_asks_three_candidates_by_default_and_others_one() -> None:
    embedded = run_config(Settings(), EMBEDDED_MODEL)
    assert embedded.candidates == 3
    assert run_config(Settings(), "openai/gpt-4o-mini").candidates == 1
    assert run_config(Settings(), "local/another-gguf").candidates == 1  # not measured
    assert run_config(Settings(candidates=1), EMBEDDED_MODEL).candidates == 1  # the person's
