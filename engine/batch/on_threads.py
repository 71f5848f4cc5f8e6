"""A batch on this machine: a bounded pool of tasks at once, each in a thread of its own
(a task is mostly waiting: on the model, on the sandbox)."""

from __future__ import annotations

import socket
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any

from engine.batch.batch_file import BatchTask
from engine.batch.run_task import run_task
from engine.batch.task_outcome import Attempt, TaskOutcome


def run_local(
    tasks: list[BatchTask],
    defaults: Mapping[str, Any],
    *,
    jobs: int,
    on_done: Callable[[TaskOutcome], None],
) -> list[TaskOutcome]:
    """Every task, at most `jobs` at once; `on_done` hears of each as it ends. In file order."""
    here = Attempt(node="local", host=socket.gethostname())
    outcomes: dict[str, TaskOutcome] = {}
    with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="fixloop-batch") as pool:
        running = [pool.submit(run_task, task, defaults, here) for task in tasks]
        try:
            for future in as_completed(running):
                outcome = future.result()
                outcomes[outcome.id] = outcome
                on_done(outcome)
        except KeyboardInterrupt:
            # No task starts after this; those running end first (a thread cannot be stopped).
            pool.shutdown(wait=False, cancel_futures=True)
            raise
    return [outcomes[task.id] for task in tasks]
