"""`--feedback raw` (the A/B arm against distillation): what the model is told is the tail of
the failing stages' own output, as a naive loop would paste it, instead of the repair packet."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from engine.verify.results import StageResult

RAW_ASK = "Please fix it."


def raw_feedback(
    stages: Sequence[StageResult],
    cap: int,
    count: Callable[[str], int],
    notes: Sequence[str] = (),
) -> str:
    """Each failing stage's command, exit code and the last lines of its output that fit in
    `cap` tokens (shared by the stages), then the notes and a plain request."""
    failing = [stage for stage in stages if not stage.succeeded] or list(stages)
    budget = max(cap // max(len(failing), 1), 1)
    blocks = []
    for stage in failing:
        output = "\n".join(part for part in (stage.stdout, stage.stderr) if part.strip())
        head = f"$ {stage.cmd}  (exit {stage.exit_code})"
        blocks.append(f"{head}\n{_tail(output.rstrip(), budget, count)}".rstrip())
    return "\n\n".join([*blocks, *notes, RAW_ASK])


def _tail(text: str, cap: int, count: Callable[[str], int]) -> str:
    """The last lines of `text` that fit in `cap` tokens (at least the last line, clipped)."""
    lines = text.splitlines()
    kept: list[str] = []
    used = 0
    for line in reversed(lines):
        cost = count(line) + 1
        if kept and used + cost > cap:
            break
        kept.append(line)
        used += cost
    if len(kept) < len(lines):
        kept.append(f"[... {len(lines) - len(kept)} earlier lines cut]")
    return "\n".join(reversed(kept))
