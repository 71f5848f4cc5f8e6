"""`report.md`: what a person reads after a run that did not end green.

The task, every attempt (its explanation, diff and what the verifier said), the
reason the run stopped, what to look at, and the commands to inspect the branch.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from engine.project.run_directory import RunDirectory
from engine.project.workspace import Workspace
from engine.run.guards import IDLE_STALL, RunStatus
from engine.spec.report import report_lines

if TYPE_CHECKING:
    from engine.run.outcome import RunConfig, RunResult

DIFF_LINES = 120

LOOK_AT = {
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
    RunStatus.EXHAUSTED: "Every attempt failed. The last packet says what still fails; the "
    "branch holds every attempt.",
    RunStatus.BUDGET_EXCEEDED: "The run hit its budget. Raise --max-tokens / --max-cost / "
    "--wall-clock, or narrow the task.",
    RunStatus.ABORTED: "The run was stopped. Every applied attempt is committed on the branch.",
    RunStatus.ERROR: "fixloop itself failed (model or sandbox). The reason says what; "
    "`fixloop-tui doctor` checks the machine.",
}


# A stall of answers that sent the code back unchanged: no failure was repeated.
LOOK_AT_IDLE = (
    "The model kept sending the code back unchanged: it did not find the bug. Point it at the "
    "code (--file), describe the bug in the task (--task), or try a stronger model."
)


def look_at(result: RunResult) -> str:
    """What the report tells the person to look at, for how the run ended."""
    if result.status is RunStatus.STALLED and IDLE_STALL in result.reason:
        return LOOK_AT_IDLE
    return LOOK_AT.get(result.status, "")


def write_report(
    config: RunConfig,
    result: RunResult,
    workspace: Workspace,
    run_dir: RunDirectory,
    *,
    committed: bool,
) -> Path:
    """report.md; `committed`: whether the run committed anything (else no branch is kept)."""
    lines = [
        f"# fixloop run {result.run_id}: {result.status.value}",
        "",
        f"**Task:** {config.task}",
        "",
        f"**Ended:** `{result.status.value}` — {result.reason}",
        "",
        f"**Model:** {config.model} · **iterations:** {len(result.iterations)}/"
        f"{config.max_iterations} · **tokens:** {result.tokens} · "
        f"**cost:** ${result.cost_usd:.4f} · **time:** {result.duration_s:.1f} s",
        "",
        "## What to look at",
        "",
        look_at(result),
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
            diff = workspace.diff(record.commit).splitlines()
            shown = diff[:DIFF_LINES]
            if len(diff) > DIFF_LINES:
                shown.append(f"... {len(diff) - DIFF_LINES} more lines: git show {record.commit}")
            lines += [f"Commit `{record.commit[:12]}`:", "", "```diff", *shown, "```", ""]
    if not committed:  # its branch is removed
        lines += ["The run committed nothing, so no branch was kept.", ""]
        return run_dir.write_text("report.md", "\n".join(lines))
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
    return run_dir.write_text("report.md", "\n".join(lines))
