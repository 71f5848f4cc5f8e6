"""`fixloop-tui batch TASKS`: many headless runs from a JSONL file, on this machine (a bounded
pool) or on a Ray cluster (`--ray`), each gathered to `--out DIR/<id>/`.

Progress goes to stderr one line per finished task; stdout gets the summary table, or with
`--json` exactly one JSON object. Exit: 0 all ok, 1 some not ok, 2 usage (a bad line of the
file, before anything runs), 6 infrastructure (the cluster could not be joined)."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from engine.batch.batch_file import BatchTask, check_local_repos, load_batch
from engine.batch.task_outcome import BatchSummary, TaskOutcome, batch_json, summarize
from engine.errors import BatchFileError
from engine.run.exit_codes import EXIT_INFRA, EXIT_USAGE
from engine.text.durations import said_duration
from sandbox import FixloopError

if TYPE_CHECKING:
    from engine.batch.on_ray import RayOptions


def ray_problem(args: argparse.Namespace) -> str | None:
    """Why `--ray` cannot be used as given (its resources, or Ray not installed), or None."""
    if args.num_cpus <= 0 or args.memory < 1 or args.max_retries < 0:
        return "--num-cpus must be above 0, --memory 1 or more, --max-retries 0 or more"
    if args.ray is None:
        return None
    from engine.batch.on_ray import import_ray
    from engine.errors import RayUnavailable

    try:
        import_ray()
    except RayUnavailable as exc:
        return str(exc)
    return None


def ray_options(args: argparse.Namespace) -> RayOptions:
    from engine.batch.on_ray import RayOptions

    return RayOptions(
        address=args.ray,
        num_cpus=args.num_cpus,
        memory_mb=args.memory,
        max_retries=args.max_retries,
    )


def batch_command(args: argparse.Namespace) -> int:
    prepared = _prepare(args)
    if isinstance(prepared, int):
        return prepared
    tasks = prepared
    defaults = {
        key: value
        for key, value in (
            ("model", args.model),
            ("api_base", args.api_base),
            ("sandbox", args.sandbox),
        )
        if value is not None
    }
    progress = Progress(len(tasks), sys.stderr)
    started = time.monotonic()
    try:
        outcomes = _run(args, tasks, defaults, progress)
    except FixloopError as exc:
        return _fail(str(exc), EXIT_INFRA)
    summary = summarize(outcomes, time.monotonic() - started)
    everything = batch_json(outcomes, summary)
    (args.out / "batch.json").write_text(everything + "\n")
    if args.json:
        print(everything)
    else:
        print(render_table(outcomes, summary))
    return 0 if summary.ok == summary.tasks else 1


def _prepare(args: argparse.Namespace) -> list[BatchTask] | int:
    """The tasks, checked, and the output directory made; or the usage exit code, said why.
    Nothing has run yet."""
    if args.jobs < 1:
        return _fail("--jobs must be 1 or more", EXIT_USAGE)
    if problem := ray_problem(args):
        return _fail(problem, EXIT_USAGE)
    try:
        tasks = load_batch(args.tasks)
        if args.ray is None:
            check_local_repos(tasks, args.tasks)
        _check_out(args.out, tasks)
    except FixloopError as exc:  # a bad line, a repo not here, --out taken
        return _fail(str(exc), EXIT_USAGE)
    return tasks


def _run(
    args: argparse.Namespace,
    tasks: list[BatchTask],
    defaults: dict[str, Any],
    progress: Progress,
) -> list[TaskOutcome]:
    def done(outcome: TaskOutcome) -> None:
        outcome.gather(args.out)
        progress.finished(outcome)

    if args.ray is None:
        from engine.batch.on_threads import run_local

        return run_local(tasks, defaults, jobs=args.jobs, on_done=done)
    from engine.batch.on_ray import run_on_ray

    return run_on_ray(tasks, defaults, ray_options(args), on_done=done)


def _check_out(out: Path, tasks: list[BatchTask]) -> None:
    """Nothing already gathered is overwritten: refused before anything runs."""
    taken = [task.id for task in tasks if (out / task.id).exists()]
    if taken:
        raise BatchFileError(
            f"--out {out} already holds {', '.join(taken[:3])}: choose another directory"
        )
    if out.exists() and not out.is_dir():
        raise BatchFileError(f"--out {out} is not a directory")
    out.mkdir(parents=True, exist_ok=True)


class Progress:
    """A bar and the task's ending, one line per finished task (it reads the same in a log)."""

    WIDTH = 20

    def __init__(self, total: int, stream: TextIO) -> None:
        self.total, self.stream, self.done = total, stream, 0

    def finished(self, outcome: TaskOutcome) -> None:
        self.done += 1
        filled = round(self.WIDTH * self.done / self.total)
        bar = "#" * filled + "-" * (self.WIDTH - filled)
        where = outcome.attempts[-1].host if outcome.attempts else "?"
        lost = sum(1 for a in outcome.attempts if a.lost)
        if outcome.attempts and outcome.attempts[-1].lost:
            retried = f", lost on every attempt ({lost})"
        elif lost:
            retried = f", retried after {lost} lost attempt{'s' * (lost > 1)}"
        else:
            retried = ""
        line = (
            f"fixloop: [{bar}] {self.done}/{self.total} {outcome.id}: {outcome.status} "
            f"in {said_duration(outcome.duration_s)} on {where}{retried}"
        )
        if not outcome.ok:
            line += f" — {outcome.reason.splitlines()[0] if outcome.reason else ''}"
        print(line, file=self.stream, flush=True)


def render_table(outcomes: list[TaskOutcome], summary: BatchSummary) -> str:
    """Each task, then the totals per status and the batch's rate."""
    rows = [("task", "status", "iters", "tokens", "cost", "wall", "node")]
    for o in outcomes:
        iterations = len(o.run["iterations"]) if o.run else 0
        node = o.attempts[-1].node[:12] if o.attempts else "?"
        if any(a.lost for a in o.attempts):
            node += f" (attempt {len(o.attempts)})"
        rows.append(
            (
                o.id,
                o.status,
                str(iterations),
                str(o.tokens),
                f"${o.cost_usd:.4f}",
                said_duration(o.duration_s),
                node,
            )
        )
    lines = _columns(rows)
    lines.append("")
    totals = [("status", "tasks", "tokens", "cost", "wall (sum)")]
    for row in summary.by_status:
        totals.append(
            (
                row.status,
                str(row.tasks),
                str(row.tokens),
                f"${row.cost_usd:.4f}",
                said_duration(row.wall_s),
            )
        )
    totals.append(
        (
            "all",
            str(summary.tasks),
            str(summary.tokens),
            f"${summary.cost_usd:.4f}",
            said_duration(sum(r.wall_s for r in summary.by_status)),
        )
    )
    lines += _columns(totals)
    lines.append(
        f"\n{summary.ok}/{summary.tasks} ok in {said_duration(summary.wall_s)} "
        f"({summary.tasks_per_minute:g} tasks/min)"
        + (f"; {summary.retried} retried after a lost node or worker" if summary.retried else "")
    )
    return "\n".join(lines)


def _columns(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]


def _fail(message: str, code: int) -> int:
    print(f"fixloop-tui: error: {message}", file=sys.stderr)
    return code
