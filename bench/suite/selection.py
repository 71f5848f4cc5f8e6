"""Which tasks a run uses: a seeded order that depends only on the seed and the task ids.

Each task is ranked by SHA-256 of `"<seed>:<task_id>"`, so the same seed picks the same tasks
whatever order the suite file lists them in, and `--limit N+1` picks `--limit N`'s tasks plus
one more.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

from bench.suite.tasks import BenchTask


def rank(seed: int, key: str) -> str:
    return hashlib.sha256(f"{seed}:{key}".encode()).hexdigest()


def seeded_order(tasks: Sequence[BenchTask], seed: int) -> list[BenchTask]:
    """Every task, in the order the seed gives them."""
    return sorted(tasks, key=lambda task: (rank(seed, task.task_id), task.task_id))


def select(tasks: Sequence[BenchTask], limit: int | None, seed: int) -> list[BenchTask]:
    """The first `limit` tasks of the seeded order (all when None), listed by natural id."""
    chosen = seeded_order(tasks, seed)[: limit if limit is not None else len(tasks)]
    return sorted(chosen, key=lambda task: natural_key(task.task_id))


def natural_key(text: str) -> tuple[tuple[int, int | str], ...]:
    """ "HumanEval/2" before "HumanEval/10"."""
    return tuple(
        (0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", text) if part
    )
