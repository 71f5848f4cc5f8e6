"""Work on a Ray cluster: each job one Ray task with declared resources, retried on another
node when its worker or node dies, and where every attempt started, recorded. `batch --ray`
runs its tasks through here, `bench --ray` its runs. Ray is an optional extra
(`fixloop-tui[ray]`): it is imported here, and only when asked."""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from engine.batch.batch_file import BatchTask
from engine.batch.run_task import run_task
from engine.batch.task_outcome import Attempt, TaskOutcome
from engine.errors import RayUnavailable
from engine.run.exit_codes import EXIT_INFRA

MIB = 1024 * 1024


@dataclass(frozen=True)
class RayOptions:
    address: str  # host:port, ray://host:port, or auto (the cluster running here)
    num_cpus: float
    memory_mb: int
    max_retries: int  # attempts after a lost worker or node; a job's own failure is final


# A job: a function importable on every node, called there as work(*args, attempt).
Work = Callable[..., Any]


@dataclass(frozen=True)
class FinishedJob:
    """A job's end: its value, or Ray's cause when every attempt was lost (or it raised)."""

    key: str
    value: Any
    failure: str | None
    attempts: list[Attempt]  # every attempt but a value's own is `lost`


def import_ray() -> ModuleType:
    try:
        import ray
    except ImportError:
        raise RayUnavailable(
            "--ray needs Ray on this machine and every node: pip install 'fixloop-tui[ray]'"
        ) from None
    return ray


class AttemptLedger:
    """Where each attempt of each job started, kept by an actor on the driver's node so that
    it outlives any worker node: an attempt that was not the last was lost."""

    def __init__(self) -> None:
        self.attempts: dict[str, list[Attempt]] = {}

    def started(self, key: str, attempt: Attempt) -> None:
        self.attempts.setdefault(key, []).append(attempt)

    def of(self, key: str) -> list[Attempt]:
        return self.attempts.get(key, [])


def attempt_on_node(work: Work, key: str, args: tuple[Any, ...], ledger: Any) -> Any:
    """One attempt, on whichever node Ray chose: noted in the ledger first, then the work. The
    node reads its own environment for keys: none is sent."""
    ray = import_ray()
    here = Attempt(node=ray.get_runtime_context().get_node_id(), host=socket.gethostname())
    ray.get(ledger.started.remote(key, here))
    return work(*args, here)


@contextmanager
def joined(options: RayOptions) -> Iterator[ModuleType]:
    """Ray, joined to the cluster at `options.address` for the block's length."""
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
            yield ray
        finally:
            ray.shutdown()


def each_finished(
    ray: ModuleType, jobs: Mapping[str, tuple[Work, tuple[Any, ...]]], options: RayOptions
) -> Iterator[FinishedJob]:
    """Every job submitted at once (the cluster runs as many as its resources allow), each
    yielded as it ends."""
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
            name=f"fixloop:{key}",
            num_cpus=options.num_cpus,
            memory=options.memory_mb * MIB,
            max_retries=options.max_retries,
            retry_exceptions=False,
        ).remote(work, key, args, ledger): key
        for key, (work, args) in jobs.items()
    }
    pending = list(submitted)
    while pending:
        ready, pending = ray.wait(pending, num_returns=1)
        key = submitted[ready[0]]
        tried: list[Attempt] = ray.get(ledger.of.remote(key))
        try:
            value = ray.get(ready[0])
        except ray.exceptions.RayError as exc:  # lost on every attempt, or it raised
            lost = [a.model_copy(update={"lost": True}) for a in tried]
            yield FinishedJob(key, None, f"{type(exc).__name__}: {_first_line(exc)}", lost)
            continue
        earlier = [a.model_copy(update={"lost": True}) for a in tried[:-1]]
        yield FinishedJob(key, value, None, [*earlier, *tried[-1:]])


def run_on_ray(
    tasks: list[BatchTask],
    defaults: Mapping[str, Any],
    options: RayOptions,
    *,
    on_done: Callable[[TaskOutcome], None],
) -> list[TaskOutcome]:
    """Every batch task on the cluster; `on_done` hears of each as it ends. In file order."""
    by_id = {task.id: task for task in tasks}
    jobs = {task.id: (run_task, (task, dict(defaults))) for task in tasks}
    outcomes: dict[str, TaskOutcome] = {}
    with joined(options) as ray:
        for finished in each_finished(ray, jobs, options):
            task = by_id[finished.key]
            if finished.failure is None:
                outcome = finished.value.model_copy(update={"attempts": finished.attempts})
            else:
                outcome = lost(task, finished.attempts, finished.failure)
            outcomes[task.id] = outcome
            on_done(outcome)
    return [outcomes[task.id] for task in tasks]


def lost(task: BatchTask, attempts: list[Attempt], failure: str) -> TaskOutcome:
    """A task Ray gave up on: `error`, with its cause and every attempt."""
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
        reason=f"{failure}{count}",
        exit_code=EXIT_INFRA,
        attempts=attempts,
    )


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
    log_to_driver off) goes to stderr: stdout is the command's table or its one JSON object."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def _first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else "no message"
