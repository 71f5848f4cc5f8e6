"""`report.md`: what a person reads after a run that did not end green; for any run that
ended (an ok one too), the same report read back from its trail (`report_from_trail`).

The task, every attempt (its explanation, diff and what the verifier said), the
reason the run stopped, what to look at, and the commands to inspect the branch.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from engine.errors import WorkspaceError
from engine.project.workspace import Workspace
from engine.run.guards import HELD_BACK_STALL, IDLE_STALL, RunStatus
from engine.run.run_directory import FinishRecord, RunDirectory
from engine.run.spec_report import report_lines
from engine.text.durations import said_duration

if TYPE_CHECKING:
    from engine.run.outcome import RunConfig, RunResult

DIFF_LINES = 120

LOOK_AT = {
    RunStatus.OK: "The tests pass, honestly.",
    RunStatus.NO_TESTS: "No test ran at the start, so no fix could be shown to be right. Write "
    "a test that shows the bug (or build from a spec), then run again. The model was not asked.",
    RunStatus.ENV_FAILURE: "The environment, not the code: fix what the reason names, then "
    "run again. The model was not asked about it.",
    RunStatus.SUSPICIOUS_PASS: "The tests pass, but not honestly: read the reasons and the "
    "test diff before trusting the result.",
    RunStatus.STALLED: "The model kept producing the same failure. Read the last packet and "
    "the last diff: the hypothesis is probably wrong, or the task needs a hint (--task, --file).",
    RunStatus.NO_PROGRESS: "No attempt made more tests pass. Check whether the failing tests "
    "are right, and whether the relevant files were in the prompt (--file).",
    RunStatus.EXHAUSTED: "Every attempt failed. The last packet says what still fails.",
    RunStatus.BUDGET_EXCEEDED: "The run hit its budget. Raise --max-tokens / --max-cost / "
    "--wall-clock, or narrow the task.",
    RunStatus.ABORTED: "The run was stopped.",
    RunStatus.ERROR: "fixloop itself failed (model or sandbox). The reason says what; "
    "`fixloop-tui doctor` checks the machine.",
}


# A stall of answers that sent the code back unchanged: no failure was repeated.
LOOK_AT_IDLE = (
    "The model kept sending the code back unchanged: it did not find the bug. Point it at the "
    "code (--file), describe the bug in the task (--task), or try a stronger model."
)


# A stall of answers that changed only pinned test files: the model blames the tests.
LOOK_AT_HELD_BACK = (
    "The model kept changing the tests, which are pinned, instead of the code: its test edits "
    "were held back. Point it at the code (--file) or say in the task what the code must do; "
    "if the tests themselves are wrong, allow test edits (--allow-test-edits)."
)


def look_at(
    result: RunResult, *, committed: bool = True, finish: FinishRecord | None = None
) -> str:
    """What the report tells the person to look at, for how the run ended, and where its
    attempts are: on the branch only while there is one (`committed`, and not accepted or
    discarded, both of which delete it)."""
    if result.status is RunStatus.STALLED and HELD_BACK_STALL in result.reason:
        said = LOOK_AT_HELD_BACK
    elif result.status is RunStatus.STALLED and IDLE_STALL in result.reason:
        said = LOOK_AT_IDLE
    elif result.status is RunStatus.OK and result.accepted_suspicious:
        said = "The tests pass, but not honestly, and the pass was accepted: " + "; ".join(
            result.accepted_suspicious
        )
    else:
        said = LOOK_AT.get(result.status, "")
    where = where_the_attempts_are(result.status, committed=committed, finish=finish)
    return f"{said} {where}".strip()


def where_the_attempts_are(
    status: RunStatus, *, committed: bool, finish: FinishRecord | None
) -> str:
    """Where the run's attempts are now, or "" when the report says it elsewhere (a run that
    committed nothing says so under its iterations)."""
    if not committed:
        return ""
    if finish is not None:
        return {
            "accept": "It was accepted: its change is one commit on your branch, and its branch "
            "is deleted.",
            "keep": "Its branch was kept: every applied attempt is committed on it.",
            "discard": "It was discarded: its branch, and every attempt on it, is deleted.",
        }[finish.choice]
    if status is RunStatus.OK:
        return "Read the change on the branch, then accept, keep or discard it."
    if status in (RunStatus.EXHAUSTED, RunStatus.ABORTED):
        return "Every applied attempt is committed on the branch."
    return ""


def write_report(
    config: RunConfig,
    result: RunResult,
    workspace: Workspace,
    run_dir: RunDirectory,
    *,
    committed: bool,
) -> Path:
    """report.md; `committed`: whether the run committed anything (else no branch is kept)."""
    return run_dir.write_text(
        "report.md", report_text(config, result, workspace, run_dir, committed=committed)
    )


def report_text(
    config: RunConfig,
    result: RunResult,
    workspace: Workspace,
    run_dir: RunDirectory,
    *,
    committed: bool,
    finish: FinishRecord | None = None,
) -> str:
    """What report.md says (see write_report); `finish`: what the person chose since (the
    report read back from the trail), so that no sentence names a branch that is gone."""
    lines = [
        f"# fixloop run {result.run_id}: {result.status.value}",
        "",
        f"**Task:** {config.task}",
        "",
        f"**Ended:** `{result.status.value}` — {result.reason}",
        "",
        f"**Model:** {config.model} · **iterations:** {len(result.iterations)}/"
        f"{config.max_iterations} · **tokens:** {result.tokens} · "
        f"**cost:** ${result.cost_usd:.4f} · **time:** {said_duration(result.duration_s)}",
        "",
        "## What to look at",
        "",
        look_at(result, committed=committed, finish=finish),
        "",
    ]
    if config.spec is not None:
        lines += report_lines(config.spec, run_dir.path, result.iterations)
    for record in result.iterations:
        lines += [f"## Iteration {record.n}: {record.status}", ""]
        if record.explanation:
            lines += [f"Explanation: {record.explanation}", ""]
        if record.tests is not None:
            t = record.tests
            lines += [f"Tests: {t.passed} passed, {t.failed} failed, {t.errors} errors", ""]
        if record.summary:
            lines += [f"Verifier: {record.summary}", ""]
        packet = run_dir.path / run_dir.iteration(record.n) / "packet.txt"
        if packet.is_file():
            lines += ["```text", packet.read_text(encoding="utf-8").strip(), "```", ""]
        if record.commit:
            try:
                diff = workspace.diff(record.commit).splitlines()
            except WorkspaceError:  # a discarded branch's commits may be gone
                diff = [f"(commit {record.commit[:12]} is no longer in the repository)"]
            shown = diff[:DIFF_LINES]
            if len(diff) > DIFF_LINES:
                shown.append(f"... {len(diff) - DIFF_LINES} more lines: git show {record.commit}")
            lines += [f"Commit `{record.commit[:12]}`:", "", "```diff", *shown, "```", ""]
    if not committed:  # its branch is removed
        lines += ["The run committed nothing, so no branch was kept.", ""]
        return "\n".join(lines)
    if finish is not None and finish.choice != "keep":  # accept and discard delete the branch
        return "\n".join(lines)
    project = shlex.quote(str(workspace.project))
    lines += [
        "## Inspect the branch",
        "",
        "```bash",
        f"git -C {project} log --oneline {workspace.baseline[:12]}..{workspace.branch}",
        f"git -C {project} diff {workspace.baseline[:12]} {workspace.branch}",
        f"git -C {project} switch {workspace.branch}      # try it",
        f"git -C {project} branch -D {workspace.branch}   # throw it away",
        "```",
        "",
    ]
    return "\n".join(lines)


def report_from_trail(project: Path, run_id: str) -> str:
    """The report of a run that ended, rebuilt from its run directory (`run.json` and
    `events.jsonl`): what `fixloop-tui report` prints for a run without report.md (an ok run
    writes none). Read only: nothing from the trail runs, and git is asked only for diffs, of
    the commits a sealed `run.json` names (UnsealedRecord otherwise: a run directory a repository
    committed names no revision git is given). RunNotNamed when the run has not ended."""
    from engine.errors import ResumeError, RunNotNamed
    from engine.project.paths import run_path
    from engine.run.events import RunFinished
    from engine.run.outcome import RunResult
    from engine.run.resume import resume_state
    from engine.run.run_directory import read_finish

    run_dir = RunDirectory(run_path(project, run_id))
    events = run_dir.events()
    finished = next((e for e in reversed(events) if isinstance(e, RunFinished)), None)
    if finished is None:
        raise RunNotNamed(f"run {run_id} has not ended: no report until it does")
    record = run_dir.sealed_record()
    try:  # the iterations as resume folds them, from the events before the ending
        ended = [e for e in events if not isinstance(e, RunFinished)]
        iterations = resume_state(ended).iteration_records()
    except ResumeError:  # it ended before its first verification
        iterations = []
    result = RunResult(
        run_id=run_id,
        status=RunStatus(finished.status),
        reason=finished.reason,
        accepted_suspicious=finished.accepted_suspicious,
        iterations=iterations,
        branch=finished.branch,
        final_commit=finished.final_commit,
        run_dir=str(run_dir.path),
        report=None,
        tokens=finished.tokens,
        cost_usd=finished.cost_usd,
        duration_s=finished.duration_s,
    )
    workspace = Workspace(
        project,
        run_id,
        start_head=record.start_head,
        user_branch=record.user_branch,
        baseline=record.baseline,
    )
    finish = read_finish(run_dir.path)
    text = report_text(
        record.config, result, workspace, run_dir, committed=bool(finished.branch), finish=finish
    )
    if finish is None:
        return text
    if finish.choice == "accept":
        done = f"accepted as {(finish.commit or '')[:10]} on {record.user_branch or 'HEAD'}"
    else:
        done = {"keep": "kept", "discard": "discarded: its branch was deleted"}[finish.choice]
    return text + f"\n**Decided:** {done}\n"


def refresh_report(project: Path, run_id: str) -> None:
    """report.md written again from the trail once the person decided on the run, so that it
    says what was decided and names no branch an accept or a discard deleted (a run without
    report.md, an ok one, keeps none: `fixloop-tui report` reads its trail). Reads only the
    sealed record and the events, as `report_from_trail`."""
    from engine.project.paths import run_path

    run_dir = RunDirectory(run_path(project, run_id))
    if (run_dir.path / "report.md").is_file():
        run_dir.write_text("report.md", report_from_trail(project, run_id))
