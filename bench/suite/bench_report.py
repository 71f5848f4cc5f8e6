"""A bench run for people: the table (plain text, at most 100 columns), each arm's options
and endings, the per-task outcomes, a terminal bar chart of pass rate per round, and the
same as a PNG."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path

from bench.errors import PlotError
from bench.suite.arms import ARMS, describe
from bench.suite.bench_run import BenchRun
from bench.suite.scoring import ArmScore, score

WIDTH = 100
BAR = 40
LABEL = 24
ID_CHARS = 44


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
    lines = [
        first.format(_tail(suite, WIDTH - len(first) + 2)),
        f"seed {config.seed}, {limit}, up to {config.max_rounds} repair rounds, through the loop",
        f"{run.started} on {run.machine.get('cpu', '?')} ({run.machine.get('cores', '?')} cores)",
    ]
    if run.ledger:
        runs = sum(len(item.arms) for item in run.items)
        lines.append(f"{run.reused_runs} of {runs} runs from earlier sittings")
        lines.append(f"ledger {_tail(str(run.ledger), WIDTH - len('ledger '))}")
        if run.revisions:
            lines.append(f"measured with fixloop {', '.join(run.revisions)}")
    return "\n".join(line[:WIDTH] for line in lines)


def _tail(path: str, room: int) -> str:
    """A long path cut at its start: its end (the file) says more than its start."""
    return path if len(path) <= room else "…" + path[-(room - 1) :]


def _optional(value: float | None, form: str) -> str:
    return "-" if value is None else format(value, form)


def _optional_duration(seconds: float | None) -> str:
    return "-" if seconds is None else duration(seconds)


def _gained_lost(s: ArmScore) -> str:
    return "-" if s.gained is None or s.lost is None else f"+{s.gained} -{s.lost}"


def table(run: BenchRun, scores: Sequence[ArmScore]) -> str:
    """One column per arm, one row per measure."""
    rows: list[tuple[str, list[str]]] = [
        ("tasks", [str(s.tasks) for s in scores]),
        ("pass@1 (round 0)", [_percent(s.pass_at_1) for s in scores]),
    ]
    for r in range(1, run.config.max_rounds + 1):
        rows.append((f"pass after round {r}", [_percent(s.pass_after_round[r]) for s in scores]))
    rows += [
        ("mean rounds to pass", [_optional(s.mean_rounds_to_pass, ".2f") for s in scores]),
        ("model calls", [str(s.model_calls) for s in scores]),
        ("prompt tokens", [f"{s.prompt_tokens:,}" for s in scores]),
        ("prompt tokens per fix", [_optional(s.prompt_tokens_per_fix, ",.0f") for s in scores]),
        ("completion tokens", [f"{s.completion_tokens:,}" for s in scores]),
        ("cost (USD)", [f"{s.cost_usd:.4f}" for s in scores]),
        ("wall time per task", [_optional_duration(s.wall_s_per_task) for s in scores]),
        ("wall time per fix", [_optional_duration(s.wall_s_per_fix) for s in scores]),
        (
            "time per round",
            [_optional(s.round_s, ".1f") + "s" * (s.round_s is not None) for s in scores],
        ),
        ("median wall time a run", [_optional_duration(s.median_wall_s) for s in scores]),
        ("wall time", [duration(s.wall_s) for s in scores]),
    ]
    if len(scores) > 1:  # each arm against the first, on the tasks both ran
        rows += [
            ("fixes vs first arm +/-", [_gained_lost(s) for s in scores]),
            ("sign test p (vs first)", [_optional(s.sign_test_p, ".2f") for s in scores]),
        ]
    columns = []
    for i, s in enumerate(scores):
        values = [row_values[i] for _, row_values in rows]
        columns.append((s.arm, values, max(10, len(s.arm), *(len(v) for v in values))))
    # Arms that do not fit beside each other go on in another block below.
    blocks: list[list[tuple[str, list[str], int]]] = [[]]
    for column in columns:
        used = LABEL + sum(2 + w for _, _, w in blocks[-1])
        if blocks[-1] and used + 2 + column[2] > WIDTH:
            blocks.append([])
        blocks[-1].append(column)
    texts = []
    for block in blocks:
        lines = [f"{'':{LABEL}}" + "".join(f"  {arm:>{w}}" for arm, _, w in block)]
        lines += [
            f"{label:{LABEL}}" + "".join(f"  {values[r]:>{w}}" for _, values, w in block)
            for r, (label, _) in enumerate(rows)
        ]
        texts.append("\n".join(line.rstrip() for line in lines))
    return "\n\n".join(texts)


def arms_and_endings(scores: Sequence[ArmScore]) -> str:
    """Each arm's options, and how its runs ended."""
    lines = []
    for s in scores:
        options = describe(s.arm) if s.arm in ARMS else "?"
        ended = ", ".join(f"{status} {count}" for status, count in s.endings.items())
        # Wrapped, not cut: the end of `today`'s options is which levers are off.
        lines += textwrap.wrap(f"{s.arm}: {options}", WIDTH, subsequent_indent="    ")
        lines.append(f"  runs ended: {ended or '-'}"[:WIDTH])
    return "\n".join(lines)


def outcomes(run: BenchRun) -> str:
    """Per task and arm: the round from which it passed (r0 = the first answer), or "-"."""
    arms = run.config.arms
    widths = [max(4, len(arm)) for arm in arms]
    room = WIDTH - sum(2 + w for w in widths)
    ids = max([4, *(len(item.item_id) for item in run.items)])
    id_chars = max(12, min(ID_CHARS, ids, room))
    lines = [
        f"{'task':{id_chars}}" + "".join(f"  {a:>{w}}" for a, w in zip(arms, widths, strict=True))
    ]
    for item in run.items:
        name = item.item_id if len(item.item_id) <= id_chars else item.item_id[: id_chars - 1] + "…"
        cells = []
        for arm in arms:
            result = item.arms.get(arm)
            passed = result.passed_round if result else None
            cells.append(f"r{passed}" if passed is not None else "-")
        lines.append(
            f"{name:{id_chars}}"
            + "".join(f"  {c:>{w}}" for c, w in zip(cells, widths, strict=True))
        )
    for skipped in run.skipped:
        lines.append(f"skipped {skipped.task_id}: {skipped.reason}"[:WIDTH])
    lines.append(throughput(run))
    return "\n".join(line.rstrip() for line in lines)


def throughput(run: BenchRun) -> str:
    """Tasks (each with every arm) per minute of the bench's wall time: what more workers buy
    (`bench --ray`)."""
    tasks, arms = len(run.items), len(run.config.arms)
    rate = tasks / run.duration_s * 60 if run.duration_s > 0 else 0.0
    return (
        f"{tasks} task{'s' * (tasks != 1)} x {arms} arm{'s' * (arms != 1)} in "
        f"{duration(run.duration_s)}: {rate:.2f} tasks per minute"
    )


def is_project_suite(suite: str) -> bool:
    """Seeded bugs in whole projects (`--suite real`, `--suite mutants --repo PATH`)."""
    return suite == "real" or suite.startswith("mutants:")


def by_project(run: BenchRun) -> str:
    """Per project and arm, then over all: bugs, fixed, rounds to the fix, prompt tokens and
    wall time per fix, time per round, fixes that changed the bug's function, endings."""
    projects = list(dict.fromkeys(item.task_id for item in run.items))
    header = (
        f"{'project':<24}{'arm':<8}{'bugs':>5}{'fixed':>7}{'rounds':>7}{'tok/fix':>9}"
        f"{'time/fix':>9}{'/round':>8}{'touched':>8}  endings"
    )
    lines = [header]
    groups = [(p, [i for i in run.items if i.task_id == p]) for p in projects]
    if len(projects) > 1:
        groups.append(("all", list(run.items)))
    for name, items in groups:
        for s in score(run.model_copy(update={"items": items})):
            touched = "-" if s.fixes_touching_bug is None else f"{s.fixes_touching_bug}/{s.passed}"
            ended = ", ".join(f"{status} {count}" for status, count in s.endings.items())
            lines.append(
                f"{_tail(name, 23):<24}{s.arm[:7]:<8}{s.tasks:>5}"
                f"{_percent(s.passed / s.tasks if s.tasks else 0.0):>7}"
                f"{_optional(s.mean_rounds_to_pass, '.1f'):>7}"
                f"{_optional(s.prompt_tokens_per_fix, ',.0f'):>9}"
                f"{_optional_duration(s.wall_s_per_fix):>9}"
                f"{_optional(s.round_s, '.0f') + 's' * (s.round_s is not None):>8}"
                f"{touched:>8}  {ended}"[:WIDTH]
            )
    lines.append(
        "rounds: mean repair rounds to the fix (0 = the first answer); touched: fixes whose "
        "last commit"
    )
    lines.append("changed the function the bug is in")
    return "\n".join(line.rstrip() for line in lines)


def render(run: BenchRun, scores: Sequence[ArmScore]) -> str:
    """What `fixloop-tui bench` prints: heading, (for seeded bugs in projects, the table per
    project,) the table, per-task outcomes, the chart."""
    return (
        "\n\n".join(
            [
                heading(run),
                *([by_project(run)] if is_project_suite(run.config.suite) else []),
                table(run, scores),
                arms_and_endings(scores),
                outcomes(run),
                terminal_plot(scores, run.config.max_rounds),
            ]
        )
        + "\n"
    )


def terminal_plot(scores: Sequence[ArmScore], rounds: int) -> str:
    """Pass rate by round as horizontal bars, one per arm, 0-100% over BAR characters."""
    lines = ["pass rate by round (cumulative; r0 = the first answer)"]
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
    axes.set_xticks(xs, [f"r{x}" if x else "r0\n(first answer)" for x in xs])
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
