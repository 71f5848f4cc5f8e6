"""`bench --ray`: each run of an item with an arm is a Ray job (engine/batch/on_ray.py) that
builds the item's repository, its own model client and its own sandbox on the node it landed
on, and sends back the arm's result and the rounds it heard; the driver puts them together
into the same `BenchRun` a local bench makes, so the tables and the plot are the same."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from bench.errors import BenchStopped
from bench.suite.arms import ARMS
from bench.suite.bench_run import (
    ArmFinished,
    ArmResult,
    BenchConfig,
    BenchEvent,
    BenchItem,
    BenchRun,
    ItemFinished,
    ItemResult,
    ItemStarted,
    RoundVerified,
)
from bench.suite.runner import BenchRunner
from bench.suite.tasks import BenchTask
from engine.batch.on_ray import RayOptions, each_finished, joined
from engine.batch.task_outcome import Attempt
from engine.feedback.checkout import open_configured_sandbox
from engine.model.preflight import require_usable_model
from engine.project.settings import Settings
from engine.run.start import make_client
from sandbox import choose_backend


class ArmJob(BaseModel):
    """One item with one arm, as it crosses the network: no key, no file of the driver's."""

    model_config = ConfigDict(frozen=True)

    config: BenchConfig
    settings: Settings  # what every run shares: the model's endpoint, the sandbox backend
    index: int
    item: BenchItem
    arm: str


class ArmDone(BaseModel):
    result: ArmResult
    rounds: list[RoundVerified]
    node: Attempt


def run_arm_job(job: ArmJob, attempt: Attempt) -> ArmDone:
    """On a node: the arm's run as a local bench runs it, in a scratch directory removed
    after (its audit trail is not kept: `--keep` is for a local bench)."""
    workdir = Path(tempfile.mkdtemp(prefix="fixloop-bench-"))
    workdir.chmod(0o755)  # the sandbox runs as nobody and must reach the task repository
    try:
        return asyncio.run(_run_arm(job, attempt, workdir))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


async def _run_arm(job: ArmJob, attempt: Attempt, workdir: Path) -> ArmDone:
    settings = job.settings
    await require_usable_model(job.config.model, settings.api_base)  # this node's own key
    client = make_client(job.config.model, settings)
    backend = choose_backend(settings.sandbox, docker_url=settings.docker_url)
    sandbox = open_configured_sandbox(settings, backend, warm=max(2, ARMS[job.arm].candidates or 1))
    heard: list[BenchEvent] = []
    try:
        runner = BenchRunner(
            job.config, client, sandbox, workdir, settings=settings, listener=heard.append
        )
        result = await runner.run_arm(job.index, job.item, job.arm)
    finally:
        await sandbox.close()
    rounds = [event for event in heard if isinstance(event, RoundVerified)]
    return ArmDone(result=result, rounds=rounds, node=attempt)


async def run_bench_on_ray(
    runner: BenchRunner, tasks: Sequence[BenchTask], options: RayOptions
) -> BenchRun:
    """The bench with every item and arm on the cluster at once. The items are chosen here as
    a local bench chooses them (repair mode's mutants are screened in this machine's sandbox);
    a run lost on every attempt, or a model no node could reach, stops the bench."""
    started_at, started = runner.clock()
    items, skipped = await runner.items(tasks)
    config = runner.config
    ledger = runner.ledger
    arms: dict[int, dict[str, ArmResult]] = {index: {} for index in range(1, len(items) + 1)}
    if ledger is not None:  # runs measured in earlier sittings are not submitted again
        for index, item in enumerate(items, start=1):
            for arm in config.arms:
                if (earlier := ledger.get(item.item_id, arm)) is not None:
                    arms[index][arm] = earlier
    jobs = {
        f"{index:03d}/{arm}": (
            run_arm_job,
            (ArmJob(config=config, settings=runner.base, index=index, item=item, arm=arm),),
        )
        for index, item in enumerate(items, start=1)
        for arm in config.arms
        if arm not in arms[index]
    }
    finished_items = sum(len(measured) == len(config.arms) for measured in arms.values())
    with joined(options) if jobs else contextlib.nullcontext() as ray:
        for finished in each_finished(ray, jobs, options) if ray is not None else ():
            if finished.failure is not None:
                raise BenchStopped(f"run {finished.key} was lost: {finished.failure}")
            done: ArmDone = finished.value
            index = int(finished.key.split("/", 1)[0])
            item = items[index - 1]
            if not arms[index]:
                runner.emit(
                    ItemStarted(index=finished_items + 1, total=len(items), item_id=item.item_id)
                )
            for event in done.rounds:
                runner.emit(event)
            runner.emit(ArmFinished(item_id=item.item_id, result=done.result))
            arms[index][done.result.arm] = done.result
            if ledger is not None:
                ledger.record(item, done.result)
            if len(arms[index]) == len(config.arms):
                finished_items += 1
                result = _item_result(item, {arm: arms[index][arm] for arm in config.arms})
                runner.emit(ItemFinished(index=finished_items, total=len(items), result=result))
    results = [
        _item_result(item, {arm: arms[i][arm] for arm in config.arms})
        for i, item in enumerate(items, start=1)
    ]
    return runner.finished(started_at, started, results, skipped)


def _item_result(item: BenchItem, arms: dict[str, ArmResult]) -> ItemResult:
    return ItemResult(
        item_id=item.item_id,
        task_id=item.task.task_id,
        mutant=item.mutant.describe() if item.mutant else None,
        arms=arms,
    )
