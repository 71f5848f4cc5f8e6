"""What a run is configured with and what it produced, as data: `RunConfig` in,
one `IterationRecord` per iteration and a `RunResult` out (result.json)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from engine.edits.proposal import EditFormat
from engine.feedback.packet import DEFAULT_CAP
from engine.feedback.prompts import DEFAULT_TASK
from engine.feedback.tree import Verification
from engine.project.settings import DEFAULTS, MAX_CANDIDATES, Settings
from engine.project.strategy import Strategy, fold_levers
from engine.run.guards import Budget, RunStatus
from engine.spec.definition import Spec
from engine.verify.results import TestCounts


class RunConfig(BaseModel):
    """The loop's part of the run's settings, copied from them once (`from_settings`) and
    kept in the run record. Its defaults are `Settings`' own (or, where a setting is decided
    per model, what a record written before that field existed ran with): they read old
    records, never a new run's settings."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _levers_in_the_strategy(cls, values: Any) -> Any:
        return fold_levers(values)  # a record written before strategies, or a lever by name

    task: str = DEFAULT_TASK
    model: str
    edit_format: EditFormat = "json"
    max_iterations: int = Field(default=DEFAULTS.max_iters, ge=1)
    no_progress_limit: int = Field(default=DEFAULTS.no_progress, ge=1)
    budget: Budget = Field(default_factory=Budget)
    files: list[str] = Field(default_factory=list)
    allow_test_edits: bool = DEFAULTS.allow_test_edits
    packet_cap: int = DEFAULT_CAP
    # Answers per iteration (engine/run/candidates.py); a record from before candidates: one.
    candidates: int = Field(default=1, ge=1, le=MAX_CANDIDATES)
    # How the loop repairs, its prompt profile decided (never `auto`).
    strategy: Strategy = DEFAULTS.strategy
    escalate_model: str | None = DEFAULTS.escalate_model  # after a stall, the last iteration
    spec: Spec | None = None  # spec mode: build this module and its tests (engine/run/spec_mode.py)

    @classmethod
    def from_settings(cls, settings: Settings, spec: Spec | None = None) -> RunConfig:
        """Every field from its setting, as engine/run/start.py decided them (`decided`); the
        settings must be decided (a ValueError otherwise: none is defaulted here)."""
        model, edit_format, candidates = settings.model, settings.edit_format, settings.candidates
        if model is None or edit_format is None or candidates is None or settings.task is None:
            raise ValueError("undecided settings: build them with engine/run/start.py's decided")
        return cls(
            task=settings.task,
            model=model,
            edit_format=edit_format,
            max_iterations=settings.max_iters,
            no_progress_limit=settings.no_progress,
            budget=Budget(
                max_tokens=settings.max_tokens,
                max_cost_usd=settings.max_cost,
                wall_clock_s=settings.wall_clock,
            ),
            files=list(settings.files or []),
            allow_test_edits=settings.allow_test_edits,
            candidates=candidates,
            strategy=settings.strategy,
            escalate_model=settings.escalate_model,
            spec=spec,
        )


NO_CHANGE = "the proposal changed no file"  # a no_change iteration's summary


class IterationRecord(BaseModel):
    """One iteration as the run saw it, built when it ends (engine/run/steps.py)."""

    n: int
    status: str  # a verdict, or format_error / no_change
    tests: TestCounts | None = None
    error_class: str = ""
    commit: str | None = None
    explanation: str = ""
    summary: str = ""
    tokens: int = 0
    cost_usd: float = 0.0
    duration_s: float = 0.0
    model_s: float = 0.0
    verify_s: float = 0.0

    def judged(self, verification: Verification) -> IterationRecord:
        return self.model_copy(update=verdict_fields(verification))


def verdict_fields(verification: Verification) -> dict[str, object]:
    """What an iteration's record says of its verification."""
    judgement = verification.judgement
    return {
        "status": judgement.verdict.value,
        "tests": judgement.tests,
        "error_class": judgement.classification.error_class.value,
        "summary": verification.packet.summary if verification.packet else "",
    }


class RunResult(BaseModel):
    """How a run ended, and everything it did."""

    run_id: str
    status: RunStatus
    reason: str
    accepted_suspicious: list[str] = Field(default_factory=list)  # an ok the person allowed
    iterations: list[IterationRecord]
    branch: str
    final_commit: str | None
    run_dir: str
    report: str | None
    tokens: int
    cost_usd: float
    duration_s: float


def result_json(result: RunResult) -> dict[str, Any]:
    """The run's result as `--json` prints it (ARCHITECTURE.md, "Guards and endings").
    `duration_s` is the wall time from the run's start to its verdict, `time_per_iteration_s`
    the mean of its iterations' (None before the first)."""
    durations = [record.duration_s for record in result.iterations]
    return {
        "run_id": result.run_id,
        "status": result.status.value,
        "reason": result.reason,
        "accepted_suspicious": result.accepted_suspicious,
        "iterations": [
            {
                "n": record.n,
                "status": record.status,
                "tests": (
                    record.tests.model_dump(
                        include={"collected", "passed", "failed", "errors", "skipped"}
                    )
                    if record.tests
                    else None
                ),
                "error_class": record.error_class,
                "commit": record.commit,
                "duration_s": round(record.duration_s, 3),
                "tokens": record.tokens,
                "cost_usd": record.cost_usd,
            }
            for record in result.iterations
        ],
        "branch": result.branch,
        "final_commit": result.final_commit,
        "run_dir": result.run_dir,
        "report": result.report,
        "tokens": result.tokens,
        "cost_usd": result.cost_usd,
        "duration_s": result.duration_s,
        "time_per_iteration_s": round(sum(durations) / len(durations), 3) if durations else None,
    }
