"""Each kind of sentence report.md writes, checked against the events it is built from: a run's
trail written as the loop writes it (its events, its sealed record, its commits on real git),
read back by `report_from_trail`, and each sentence compared with what the events say.

The kinds: the heading and the ending; the spent line; what to look at (by status, an idle or
held-back stall, an accepted suspicious pass) and where the attempts are now; each iteration's
heading, explanation, tests, verifier line and commit; the packet's progress line ("N new
failures"), quoted with the packet; a run that committed nothing; the commands to inspect the
branch; the person's decision. (Spec runs' lines: test_spec_report.)"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import git
import pytest

from engine.feedback.distill import progress_between
from engine.project.paths import run_path
from engine.project.settings import Settings
from engine.project.workspace import Workspace, iteration_message
from engine.run.events import (
    Committed,
    EditsApplied,
    IterationStarted,
    ModelResponded,
    PacketReady,
    ProposalReady,
    RunFinished,
    RunStarted,
)
from engine.run.finish import finish_run
from engine.run.guards import HELD_BACK_STALL, IDLE_STALL
from engine.run.no_change import ONLY_HELD_BACK
from engine.run.outcome import RunConfig
from engine.run.report import LOOK_AT_HELD_BACK, LOOK_AT_IDLE, report_from_trail
from engine.run.run_directory import RunDirectory
from engine.run.start import run_record
from engine.verify.results import (
    CollectionError,
    StageKind,
    StageResult,
    TestCase,
    TestCounts,
    TestReport,
)
from tests.engine.test_workspace import FIXED_STATS, isolated_git, make_project, root_of, write

__all__ = ["isolated_git"]  # the autouse fixture: no git config from outside tmp_path

RUN = "20261203-100000-aaaa"
BEFORE = {"collected": 3, "passed": 1, "failed": 2, "errors": 0}
HALF = {"collected": 3, "passed": 2, "failed": 1, "errors": 0}
GREEN = {"collected": 3, "passed": 3, "failed": 0, "errors": 0}
HALF_STATS = FIXED_STATS.replace("return 0.0", "return 0")


@dataclass(frozen=True)
class Attempt:
    """One iteration: an answer that edits `files` (none: it changed no code) and what the
    verifier said of it."""

    explanation: str
    files: dict[str, str] = field(default_factory=dict)
    verdict: str = "failing"
    tests: dict[str, int] | None = None
    held_back: tuple[str, ...] = ()


def trail(
    repo: git.Repo,
    attempts: list[Attempt],
    *,
    status: str,
    reason: str,
    accepted_suspicious: tuple[str, ...] = (),
) -> Path:
    """A run's trail as the loop leaves it: its events, its sealed record, a commit per attempt
    that edits; a run that committed nothing keeps no branch."""
    project = root_of(repo)
    workspace = Workspace.create(project, RUN)
    run = RunDirectory.create(project, RUN)
    config = RunConfig(task="Fix the mean.", model="openai/scripted", max_iterations=4)
    run.write_record(run_record(project, Settings(), config, Path("python3"), workspace, {}))
    run.emit(
        RunStarted(
            run_id=RUN,
            task=config.task,
            project=str(project),
            model=config.model,
            sandbox="gvisor",
            max_iterations=4,
            branch=workspace.branch,
        )
    )
    run.emit(PacketReady(n=0, verdict="failing", error_class="assertion", tests=BEFORE))
    committed = False
    for n, attempt in enumerate(attempts, start=1):
        run.emit(IterationStarted(n=n, max_n=4))
        run.emit(ModelResponded(n=n, prompt_tokens=100, completion_tokens=20, duration_s=1.0))
        run.emit(ProposalReady(n=n, explanation=attempt.explanation, files=[*attempt.files]))
        if not attempt.files:
            because = ONLY_HELD_BACK if attempt.held_back else "the same code"
            held = list(attempt.held_back)
            run.emit(EditsApplied(n=n, held_back=held, unchanged=True, because=because))
            continue
        write(workspace.root, attempt.files)
        sha = workspace.commit(iteration_message(n, 4, attempt.explanation))
        assert sha is not None
        committed = True
        run.emit(EditsApplied(n=n, files=[*attempt.files]))
        run.emit(Committed(n=n, sha=sha, message=attempt.explanation))
        run.emit(
            PacketReady(n=n, verdict=attempt.verdict, error_class="assertion", tests=attempt.tests)
        )
    if not committed:
        workspace.discard()
    run.emit(
        RunFinished(
            status=status,
            reason=reason,
            accepted_suspicious=list(accepted_suspicious),
            iterations=len(attempts),
            branch=workspace.branch if committed else "",
            tokens=120 * len(attempts),
            cost_usd=0.0012,
            duration_s=95.0,
        )
    )
    return project


def section(report: str, heading: str) -> str:
    """The text under `## heading`, up to the next heading."""
    after = report.split(f"## {heading}\n", 1)[1]
    return after.split("\n## ", 1)[0].strip()


@pytest.fixture
def repo(tmp_path: Path) -> git.Repo:
    return make_project(tmp_path / "project")


HALF_FIX = Attempt("an empty list has mean 0", {"pkg/stats.py": HALF_STATS}, tests=HALF)
FIX = Attempt("mean of nothing is 0.0", {"pkg/stats.py": FIXED_STATS}, "ok", GREEN)


# -- the heading, the ending, the spent line ----------------------------------------------------


def test_the_heading_and_the_ended_line_are_the_runs_ending(repo: git.Repo) -> None:
    project = trail(repo, [HALF_FIX], status="exhausted", reason="4 iterations used")
    report = report_from_trail(project, RUN)
    assert report.startswith(f"# fixloop run {RUN}: exhausted\n")
    assert "**Task:** Fix the mean.\n" in report
    assert "**Ended:** `exhausted` — 4 iterations used\n" in report


def test_the_spent_line_counts_the_iterations_tokens_and_time_the_events_tell(
    repo: git.Repo,
) -> None:
    other = Attempt("and the other module", {"pkg/other.py": "OTHER = 2\n"}, tests=HALF)
    project = trail(repo, [HALF_FIX, other], status="exhausted", reason="out of iterations")
    report = report_from_trail(project, RUN)
    assert (
        "**Model:** openai/scripted · **iterations:** 2/4 · **tokens:** 240 · "
        "**cost:** $0.0012 · **time:** 1m35s"
    ) in report


# -- what to look at, and where the attempts are ------------------------------------------------


def test_an_undecided_exhausted_run_says_its_attempts_are_on_the_branch(repo: git.Repo) -> None:
    project = trail(repo, [HALF_FIX], status="exhausted", reason="out of iterations")
    said = section(report_from_trail(project, RUN), "What to look at")
    assert said == (
        "Every attempt failed. The last packet says what still fails. "
        "Every applied attempt is committed on the branch."
    )
    assert git.Repo(project).heads[f"fixloop/{RUN}"].commit.summary.startswith("fixloop[iter 1/4]")


def test_an_aborted_run_that_committed_nothing_claims_no_commit_on_a_branch(
    repo: git.Repo,
) -> None:
    project = trail(repo, [Attempt("no idea")], status="aborted", reason="aborted by you")
    report = report_from_trail(project, RUN)
    assert section(report, "What to look at") == "The run was stopped."
    assert "The run committed nothing, so no branch was kept." in report
    assert f"fixloop/{RUN}" not in [head.name for head in git.Repo(project).heads]


def test_after_a_discard_the_report_says_so_and_names_no_branch_to_inspect(
    repo: git.Repo,
) -> None:
    project = trail(repo, [HALF_FIX], status="aborted", reason="aborted by you")
    assert finish_run(project, RUN, "discard").done
    report = report_from_trail(project, RUN)
    assert section(report, "What to look at") == (
        "The run was stopped. It was discarded: its branch, and every attempt on it, is deleted."
    )
    assert "committed on the branch" not in report
    assert "## Inspect the branch" not in report
    assert report.endswith("**Decided:** discarded: its branch was deleted\n")


def test_after_an_accept_the_report_says_so_and_names_no_branch_to_inspect(
    repo: git.Repo,
) -> None:
    project = trail(repo, [FIX], status="ok", reason="verified green on iteration 1")
    finished = finish_run(project, RUN, "accept")
    assert finished.done
    report = report_from_trail(project, RUN)
    assert section(report, "What to look at") == (
        "The tests pass, honestly. It was accepted: its change is one commit on your branch, "
        "and its branch is deleted."
    )
    assert "## Inspect the branch" not in report
    assert report.endswith(f"**Decided:** accepted as {(finished.commit or '')[:10]} on main\n")
    assert git.Repo(project).head.commit.hexsha == finished.commit


def test_a_kept_run_keeps_the_commands_to_inspect_its_branch(repo: git.Repo) -> None:
    project = trail(repo, [HALF_FIX], status="exhausted", reason="out of iterations")
    assert finish_run(project, RUN, "keep").done
    report = report_from_trail(project, RUN)
    assert section(report, "What to look at").endswith(
        "Its branch was kept: every applied attempt is committed on it."
    )
    commands = section(report, "Inspect the branch")
    assert f"switch fixloop/{RUN}" in commands
    assert f"fixloop/{RUN}" in [head.name for head in git.Repo(project).heads]
    assert report.endswith("**Decided:** kept\n")


def test_an_undecided_ok_run_asks_for_a_decision(repo: git.Repo) -> None:
    project = trail(repo, [FIX], status="ok", reason="verified green on iteration 1")
    assert section(report_from_trail(project, RUN), "What to look at") == (
        "The tests pass, honestly. Read the change on the branch, then accept, keep or discard it."
    )


def test_an_accepted_suspicious_pass_is_named_with_its_reasons(repo: git.Repo) -> None:
    project = trail(
        repo,
        [FIX],
        status="ok",
        reason="verified green on iteration 1",
        accepted_suspicious=("added a skip to test_mean",),
    )
    assert section(report_from_trail(project, RUN), "What to look at").startswith(
        "The tests pass, but not honestly, and the pass was accepted: added a skip to test_mean"
    )


def test_an_idle_stall_says_the_code_came_back_unchanged(repo: git.Repo) -> None:
    idle = [Attempt("looks fine"), Attempt("looks fine")]
    project = trail(repo, idle, status="stalled", reason=f"2 {IDLE_STALL}")
    report = report_from_trail(project, RUN)
    assert section(report, "What to look at") == LOOK_AT_IDLE
    assert "The run committed nothing, so no branch was kept." in report


def test_a_held_back_stall_says_the_model_changed_only_the_tests(repo: git.Repo) -> None:
    blame = Attempt("the test is wrong", held_back=("tests/test_stats.py",))
    project = trail(repo, [blame, blame], status="stalled", reason=f"2 {HELD_BACK_STALL}")
    assert section(report_from_trail(project, RUN), "What to look at") == LOOK_AT_HELD_BACK


# -- each iteration ---------------------------------------------------------------------------


def test_each_iterations_heading_and_tests_are_its_verification(repo: git.Repo) -> None:
    project = trail(repo, [HALF_FIX, FIX], status="ok", reason="verified green on iteration 2")
    report = report_from_trail(project, RUN)
    first, second = section(report, "Iteration 1: failing"), section(report, "Iteration 2: ok")
    assert "Tests: 2 passed, 1 failed, 0 errors" in first
    assert "Tests: 3 passed, 0 failed, 0 errors" in second


def test_the_explanation_line_is_the_proposals(repo: git.Repo) -> None:
    project = trail(repo, [HALF_FIX], status="exhausted", reason="out of iterations")
    said = section(report_from_trail(project, RUN), "Iteration 1: failing")
    assert said.startswith("Explanation: an empty list has mean 0\n")


def test_the_verifier_line_names_held_back_test_edits(repo: git.Repo) -> None:
    blame = Attempt("the test is wrong", held_back=("tests/test_stats.py",))
    project = trail(repo, [blame, FIX], status="ok", reason="verified green on iteration 2")
    said = section(report_from_trail(project, RUN), "Iteration 1: no_change")
    assert "Verifier: " in said
    assert "held back" in said.split("Verifier: ", 1)[1].splitlines()[0]
    assert "Commit `" not in said  # nothing of it was committed


def test_the_commit_and_its_diff_are_the_iterations_own(repo: git.Repo) -> None:
    project = trail(repo, [HALF_FIX, FIX], status="ok", reason="verified green on iteration 2")
    branch = git.Repo(project).heads[f"fixloop/{RUN}"].commit
    said = section(report_from_trail(project, RUN), "Iteration 2: ok")
    assert f"Commit `{branch.hexsha[:12]}`:" in said
    assert "-        return 0\n+        return 0.0" in said


def test_a_commit_gone_after_a_discard_is_said_to_be_gone(repo: git.Repo) -> None:
    project = trail(repo, [HALF_FIX], status="exhausted", reason="out of iterations")
    sha = git.Repo(project).heads[f"fixloop/{RUN}"].commit.hexsha
    assert finish_run(project, RUN, "discard").done
    git.Repo(project).git.reflog("expire", "--expire=now", "--all")
    git.Repo(project).git.gc("--prune=now", "--quiet")
    said = section(report_from_trail(project, RUN), "Iteration 1: failing")
    assert f"(commit {sha[:12]} is no longer in the repository)" in said


# -- report.md once decided ---------------------------------------------------------------------


def test_report_md_is_written_again_once_the_run_is_decided(repo: git.Repo) -> None:
    project = trail(repo, [HALF_FIX], status="exhausted", reason="out of iterations")
    path = run_path(project, RUN) / "report.md"
    path.write_text(report_from_trail(project, RUN), encoding="utf-8")  # as the run left it
    assert "## Inspect the branch" in path.read_text(encoding="utf-8")
    assert finish_run(project, RUN, "discard").done
    written = path.read_text(encoding="utf-8")
    assert "## Inspect the branch" not in written
    assert written.endswith("**Decided:** discarded: its branch was deleted\n")


# -- the packet's progress line, quoted in the report -------------------------------------------


def pytest_stage(
    nodeids: list[str],
    failed: list[str],
    *,
    collection_errors: list[CollectionError] | None = None,
    truncated: bool = False,
) -> StageResult:
    """A pytest stage as the plugin reports it: every test collected, those that failed."""
    report = TestReport(
        exitstatus=1 if failed or collection_errors else 0,
        counts=TestCounts(
            collected=len(nodeids), passed=len(nodeids) - len(failed), failed=len(failed)
        ),
        nodeids=nodeids,
        tests=[TestCase(nodeid=nodeid, outcome="failed") for nodeid in failed],
        collection_errors=collection_errors or [],
        truncated=truncated,
    )
    return StageResult(
        name="tests", kind=StageKind.TESTS, cmd="pytest", exit_code=1, duration_ms=1, report=report
    )


def test_a_failure_a_collection_error_hid_before_is_not_called_new() -> None:
    # The previous attempt broke an import: no test ran. The failure now is the baseline's.
    broken = pytest_stage(
        [],
        [],
        collection_errors=[CollectionError(nodeid="tests/test_stats.py", exception_message="boom")],
    )
    now = pytest_stage(["tests/test_stats.py::test_mean"], ["tests/test_stats.py::test_mean"])
    assert progress_between([broken], [now]) is None


def test_a_failure_a_cut_report_left_out_is_neither_new_nor_said_to_pass() -> None:
    ids = ["t::a", "t::b", "t::c"]
    cut = pytest_stage(ids, ["t::a"], truncated=True)  # t::b failed too; its entry was dropped
    now = pytest_stage(ids, ["t::a", "t::b"])
    assert progress_between([cut], [now]) == "1 still fails"


def test_a_test_that_passed_before_and_fails_now_is_one_new_failure() -> None:
    ids = ["t::a", "t::b"]
    assert progress_between([pytest_stage(ids, ["t::a"])], [pytest_stage(ids, ["t::b"])]) == (
        "1 test now passes that failed before; 1 new failure; 1 of them passed before your edit"
    )
