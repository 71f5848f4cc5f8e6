"""A batch on a Ray cluster: each task one Ray task with declared resources, retried on
another node when its worker or node dies, its outcome saying on which node each attempt
started. Ray is an optional extra (`fixloop-tui[ray]`): it is imported here, when asked."""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from engine.batch.outcome import Attempt, TaskOutcome
from engine.batch.task import run_task
from engine.batch.tasks import BatchTask
from engine.run.exit_codes import EXIT_INFRA
from sandbox import FixloopError

MIB = 1024 * 1024


class RayUnavailable(FixloopError):
    """Ray is not installed, or its cluster cannot be joined."""


@dataclass(frozen=True)
class RayOptions:
    address: str  # host:port, ray://host:port, or auto (the cluster running here)
    num_cpus: float
    memory_mb: int
    max_retries: int  # attempts after a lost worker or node; a task's own failure is final


def import_ray() -> ModuleType:
    try:
        import ray
    except ImportError:
        raise RayUnavailable(
            "--ray needs Ray on this machine and every node: pip install 'fixloop-tui[ray]'"
        ) from None
    return ray


class AttemptLedger:
    """Where each attempt of each task started, kept by an actor on the driver's node so that
    it outlives any worker node: an attempt that was not the last was lost."""

    def __init__(self) -> None:
        self.attempts: dict[str, list[Attempt]] = {}

    def started(self, task_id: str, attempt: Attempt) -> None:
        self.attempts.setdefault(task_id, []).append(attempt)

    def of(self, task_id: str) -> list[Attempt]:
        return self.attempts.get(task_id, [])


def attempt_on_node(task: BatchTask, defaults: Mapping[str, Any], ledger: Any) -> TaskOutcome:
    """One attempt, on whichever node Ray chose: noted in the ledger first, then the task as
    it runs anywhere (engine/batch/task.py). The node reads its own environment for keys."""
    ray = import_ray()
    here = Attempt(node=ray.get_runtime_context().get_node_id(), host=socket.gethostname())
    ray.get(ledger.started.remote(task.id, here))
    return run_task(task, defaults, here)


def run_on_ray(
    tasks: list[BatchTask],
    defaults: Mapping[str, Any],
    options: RayOptions,
    *,
    on_done: Callable[[TaskOutcome], None],
) -> list[TaskOutcome]:
    """Every task on the cluster, as many at once as its resources allow; `on_done` hears of
    each as it ends. In file order."""
    ray = import_ray()
    answering(options.address)
    with stdout_to_stderr():
        try:
            ray.init(address=options.address, log_to_driver=False, logging_level="warning")
        except Exception as exc:  # Ray says why in its own exception types: ConnectionError, ...
            raise RayUnavailable(
                f"cannot join the Ray cluster at {options.address}: {_first_line(exc)}"
            ) from None
        try:
            return _run(ray, tasks, defaults, options, on_done)
        finally:
            ray.shutdown()


def answering(address: str, timeout_s: float = 5.0) -> None:
    """Something listens at the cluster's address. Asked first because `ray.init` retries an
    address where nothing listens for minutes, saying so only in its own log lines."""
    if address == "auto":  # Ray reads this node's address file and says at once if none
        return
    host, _, port = address.rpartition("://")[2].rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s):
            pass
    except (OSError, ValueError) as exc:
        raise RayUnavailable(
            f"no Ray cluster answers at {address} ({getattr(exc, 'strerror', None) or exc}): "
            "give the head's host:port (`ray start --head` prints it), or auto on a node"
        ) from None


@contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """While Ray is joined, what it prints (a lost node's "(raylet) ..." notice, even with
    log_to_driver off) goes to stderr: stdout is the batch's table or its one JSON object."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def _run(
    ray: ModuleType,
    tasks: list[BatchTask],
    defaults: Mapping[str, Any],
    options: RayOptions,
    on_done: Callable[[TaskOutcome], None],
) -> list[TaskOutcome]:
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    driver_node = ray.get_runtime_context().get_node_id()
    ledger = (
        ray.remote(AttemptLedger)
        .options(
            num_cpus=0,
            scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=driver_node, soft=False),
        )
        .remote()
    )
    attempt = ray.remote(attempt_on_node)
    submitted = {
        attempt.options(
            name=f"fixloop-batch:{task.id}",
            num_cpus=options.num_cpus,
            memory=options.memory_mb * MIB,
            max_retries=options.max_retries,
            retry_exceptions=False,
        ).remote(task, dict(defaults), ledger): task
        for task in tasks
    }
    outcomes: dict[str, TaskOutcome] = {}
    pending = list(submitted)
    while pending:
        ready, pending = ray.wait(pending, num_returns=1)
        task = submitted[ready[0]]
        tried = ray.get(ledger.of.remote(task.id))
        try:
            outcome = with_attempts(ray.get(ready[0]), tried)
        except ray.exceptions.RayError as exc:  # lost on every attempt, or it crashed
            outcome = lost(task, tried, exc)
        outcomes[task.id] = outcome
        on_done(outcome)
    return [outcomes[task.id] for task in tasks]


def with_attempts(outcome: TaskOutcome, tried: list[Attempt]) -> TaskOutcome:
    """The outcome with every attempt before its own marked lost."""
    earlier = [a.model_copy(update={"lost": True}) for a in tried[:-1]]
    return outcome.model_copy(update={"attempts": [*earlier, *outcome.attempts]})


def lost(task: BatchTask, tried: list[Attempt], exc: Exception) -> TaskOutcome:
    """A task Ray gave up on: `error`, with its cause and every attempt."""
    attempts = [a.model_copy(update={"lost": True}) for a in tried]
    count = (
        f" (attempted {len(attempts)} time{'s' * (len(attempts) != 1)})"
        if attempts
        else " (no attempt started)"
    )
    return TaskOutcome(
        id=task.id,
        line=task.line,
        repo=task.repo,
        status="error",
        reason=f"{type(exc).__name__}: {_first_line(exc)}{count}",
        exit_code=EXIT_INFRA,
        attempts=attempts,
    )


def _first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else "no message"
