"""What a bench run is configured with and what it found, as data (`--json` prints `BenchRun`),
and the events its progress printer hears."""

from __future__ import annotations

import os
import platform
from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from bench.suite.arms import DEFAULT_ARMS
from bench.suite.harness import TestLayout
from bench.suite.mutants import Mutant
from bench.suite.tasks import BenchTask
from engine.run.guards import RunStatus
from engine.run.outcome import RunResult

Mode = Literal["generate", "repair"]


def _default_arms() -> list[str]:
    return list(DEFAULT_ARMS)


class BenchConfig(BaseModel):
    model_config = ConfigDict(frozen=True)

    suite: str
    mode: Mode = "generate"
    model: str
    arms: list[str] = Field(default_factory=_default_arms, min_length=1)
    max_rounds: int = Field(default=2, ge=0, le=99, description="repair rounds after round 0")
    limit: int | None = Field(default=None, ge=1)
    seed: int = 0
    exec_timeout_s: float = Field(default=30.0, gt=0)
    mutants_per_task: int = Field(default=1, ge=1)
    test_layout: TestLayout = "literal"


class BenchItem(BaseModel):
    """What the model is asked to get right: a task, and in repair mode the mutant."""

    model_config = ConfigDict(frozen=True)

    item_id: str
    task: BenchTask
    mutant: Mutant | None = None


class ModelSpend(BaseModel):
    """What the model calls of one run cost, summed from its `ModelResponded` events."""

    model_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0


class ArmResult(BaseModel):
    """One run of the loop on one item, with one arm's options."""

    arm: str
    status: str  # how the run ended (a RunStatus)
    reason: str = ""
    rounds: list[str]  # round r: the verdict of iteration r + 1 (format_error, no_change ...)
    passed_round: int | None  # the first round from which the task passes, None if never
    spend: ModelSpend = Field(default_factory=ModelSpend)
    wall_s: float
    run_dir: str  # the audit trail: events.jsonl, iterations/NN/ (gone unless --keep)
    round_s: list[float] = Field(default_factory=list)  # each iteration's wall time
    # A seeded bug in a project: whether the run's last commit changed the bug's function.
    touched_bug: bool | None = None


def arm_result(arm: str, result: RunResult, spend: ModelSpend, wall_s: float) -> ArmResult:
    """Rounds from the run's iterations: round r is iteration r + 1; a run that ended ok at
    iteration k passes at every round from k - 1 (at round 0 when the baseline passed)."""
    rounds = [record.status for record in result.iterations]
    round_s = [round(record.duration_s, 3) for record in result.iterations]
    passed = None
    if result.status is RunStatus.OK:
        passed = result.iterations[-1].n - 1 if result.iterations else 0
    return ArmResult(
        arm=arm,
        status=result.status.value,
        reason=result.reason,
        rounds=rounds,
        passed_round=passed,
        spend=spend,
        wall_s=wall_s,
        run_dir=result.run_dir,
        round_s=round_s,
    )


class ItemResult(BaseModel):
    item_id: str
    task_id: str
    mutant: str | None = None
    arms: dict[str, ArmResult]


class SkippedTask(BaseModel):
    task_id: str
    reason: str


class BenchRun(BaseModel):
    """Everything a run did, as `--json` prints it (with the scores added)."""

    config: BenchConfig
    started: str
    machine: dict[str, str]
    duration_s: float
    items: list[ItemResult]
    skipped: list[SkippedTask] = Field(default_factory=list)
    trails: str = ""  # the directory of the task repositories (removed unless --keep)
    ledger: str = ""  # `--ledger FILE`, if given
    reused_runs: int = 0  # runs read from the ledger, measured in earlier sittings
    revisions: list[str] = Field(default_factory=list)  # the fixloop sources they measured


# --- progress --------------------------------------------------------------------------------


class Preparing(BaseModel):
    type: Literal["Preparing"] = "Preparing"
    detail: str


class ItemStarted(BaseModel):
    type: Literal["ItemStarted"] = "ItemStarted"
    index: int
    total: int
    item_id: str


class RoundVerified(BaseModel):
    """An iteration of one arm's run came back from the tests (or was unusable)."""

    type: Literal["RoundVerified"] = "RoundVerified"
    item_id: str
    arm: str
    round: int
    verdict: str
    detail: str = ""


class ArmFinished(BaseModel):
    type: Literal["ArmFinished"] = "ArmFinished"
    item_id: str
    result: ArmResult
    reused: bool = False  # measured in an earlier sitting, read from `--ledger`


class ItemFinished(BaseModel):
    type: Literal["ItemFinished"] = "ItemFinished"
    index: int
    total: int
    result: ItemResult


BenchEvent = Preparing | ItemStarted | RoundVerified | ArmFinished | ItemFinished
Listener = Callable[[BenchEvent], None]


def machine() -> dict[str, str]:
    """What the numbers were measured on."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            cpu = next(
                (line.split(":", 1)[1].strip() for line in info if line.startswith("model name")),
                cpu,
            )
    except OSError:
        pass
    return {
        "platform": platform.platform(),
        "cpu": cpu,
        "cores": str(os.cpu_count() or 0),
        "python": platform.python_version(),
    }
