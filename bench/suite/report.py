"""A bench run for people: the table (plain text, at most 100 columns), the per-task
outcomes, a terminal bar chart of pass rate per round, and the same as a PNG."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from bench.suite.runner import BenchRun
from bench.suite.scoring import ArmScore
from sandbox.errors import FixloopError

WIDTH = 100
BAR = 40
LABEL = 24
ID_CHARS = 44


class PlotError(FixloopError):
    """The PNG could not be written."""


def duration(seconds: float) -> str:
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def _percent(value: float) -> str:
    return f"{value * 100:.1f}%"


def heading(run: BenchRun) -> str:
    config = run.config
    limit = f"limit {config.limit}" if config.limit else "all tasks"
    suite = config.suite
    first = f"fixloop bench: {config.mode} on {{}}, model {config.model}"
    room = WIDTH - len(first) + 2
    if len(suite) > room:  # a long directory: its end says more than its start
        suite = "…" + suite[-(room - 1) :]
    lines = [
        first.format(suite),
        f"seed {config.seed}, {limit}, up to {config.max_rounds} repair rounds",
        f"{run.started} on {run.machine.get('cpu', '?')} ({run.machine.get('cores', '?')} cores)",
    ]
    return "\n".join(line[:WIDTH] for line in lines)


def table(run: BenchRun, scores: Sequence[ArmScore]) -> str:
    """One column per arm, one row per measure."""
    rounds = run.config.max_rounds
    rows: list[tuple[str, list[str]]] = [
        ("tasks", [str(s.tasks) for s in scores]),
        ("pass@1 (one-shot)", [_percent(s.pass_at_1) for s in scores]),
    ]
    for r in range(1, rounds + 1):
        rows.append((f"pass after round {r}", [_percent(s.pass_after_round[r]) for s in scores]))
    rows += [
        (
            "mean rounds to pass",
            [
                f"{s.mean_rounds_to_pass:.2f}" if s.mean_rounds_to_pass is not None else "-"
                for s in scores
            ],
        ),
        ("model calls", [str(s.model_calls) for s in scores]),
        ("prompt tokens", [f"{s.prompt_tokens:,}" for s in scores]),
        ("completion tokens", [f"{s.completion_tokens:,}" for s in scores]),
        (
            "feedback tokens/prompt",
            [
                f"{s.mean_feedback_tokens:.0f}" if s.mean_feedback_tokens is not None else "-"
                for s in scores
            ],
        ),
        ("cost (USD)", [f"{s.cost_usd:.4f}" for s in scores]),
        ("wall time", [duration(s.wall_s) for s in scores]),
    ]
    width = max(10, *(len(s.arm) for s in scores), *(len(v) for _, vs in rows for v in vs))
    lines = [f"{'':{LABEL}}" + "".join(f"  {s.arm:>{width}}" for s in scores)]
    lines += [
        f"{label:{LABEL}}" + "".join(f"  {v:>{width}}" for v in values) for label, values in rows
    ]
    return "\n".join(line.rstrip() for line in lines)


def outcomes(run: BenchRun) -> str:
    """Per task and arm: the round that passed (r0 = one-shot), or "-" for never."""
    arms = run.config.arms
    lines = [f"{'task':{ID_CHARS}}" + "".join(f"  {arm:>7}" for arm in arms)]
    for item in run.items:
        name = item.item_id if len(item.item_id) <= ID_CHARS else item.item_id[: ID_CHARS - 1] + "…"
        cells = []
        for arm in arms:
            result = item.arms.get(arm)
            passed = result.passed_round if result else None
            cells.append(f"r{passed}" if passed is not None else "-")
        lines.append(f"{name:{ID_CHARS}}" + "".join(f"  {c:>7}" for c in cells))
    for skipped in run.skipped:
        lines.append(f"skipped {skipped.task_id}: {skipped.reason}"[:WIDTH])
    return "\n".join(line.rstrip() for line in lines)


def render(run: BenchRun, scores: Sequence[ArmScore]) -> str:
    """What `fixloop-tui bench` prints: heading, table, per-task outcomes, the chart."""
    return (
        "\n\n".join(
            [
                heading(run),
                table(run, scores),
                outcomes(run),
                terminal_plot(scores, run.config.max_rounds),
            ]
        )
        + "\n"
    )


def terminal_plot(scores: Sequence[ArmScore], rounds: int) -> str:
    """Pass rate by round as horizontal bars, one per arm, 0-100% over BAR characters."""
    lines = ["pass rate by round (cumulative; r0 = one-shot)"]
    name = max(len(s.arm) for s in scores) if scores else 0
    for r in range(rounds + 1):
        for index, s in enumerate(scores):
            value = s.pass_after_round[r] if r < len(s.pass_after_round) else 0.0
            eighths = round(value * BAR * 8)
            bar = "█" * (eighths // 8) + ("▏▎▍▌▋▊▉"[eighths % 8 - 1] if eighths % 8 else "")
            label = f"r{r}" if index == 0 else ""
            lines.append(f"{label:>3} {s.arm:<{name}} |{bar:<{BAR}}| {_percent(value):>6}")
    return "\n".join(lines)


def write_png(scores: Sequence[ArmScore], rounds: int, path: Path, title: str) -> Path:
    """The pass-rate-per-round lines of each arm as a PNG (matplotlib, no display needed)."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise PlotError("--plot needs matplotlib: pip install 'fixloop-tui[bench]'") from None
    figure = Figure(figsize=(7, 4.5), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    xs = list(range(rounds + 1))
    # Arms often tie: each gets its own marker, dash and width so a line under another shows.
    styles = [("o", "-", 3.0, 9), ("s", "--", 1.5, 5), ("^", ":", 1.5, 5)]
    for i, s in enumerate(scores):
        ys = [100 * v for v in s.pass_after_round[: rounds + 1]]
        marker, dash, width, size = styles[i % len(styles)]
        axes.plot(
            xs,
            ys,
            marker=marker,
            linestyle=dash,
            linewidth=width,
            markersize=size,
            label=f"{s.arm} ({s.tasks} tasks)",
        )
    axes.set_xticks(xs, [f"r{x}" if x else "r0\n(one-shot)" for x in xs])
    axes.set_ylim(-3, 103)  # a line at 0% or 100% stays clear of the frame
    axes.set_yticks(range(0, 101, 20))
    axes.set_xlabel("repair round")
    axes.set_ylabel("tasks passed by this round (%)")
    axes.set_title(title, fontsize=10)
    axes.grid(alpha=0.3)
    axes.legend(loc="lower right")
    figure.tight_layout()
    try:
        figure.savefig(path, format="png")
    except OSError as exc:
        raise PlotError(f"cannot write the plot to {path}: {exc.strerror}") from None
    return path
