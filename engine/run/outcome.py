"""What a run is configured with and what it produced, as data: `RunConfig` in,
one `IterationRecord` per iteration and a `RunResult` out (result.json)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from engine.edits.proposal import EditFormat
from engine.feedback.packet import DEFAULT_CAP
from engine.feedback.prompts import DEFAULT_TASK
from engine.project.settings import DEFAULTS
from engine.run.guards import Budget, RunStatus
from engine.spec.definition import Spec
from engine.verify.results import TestCounts
from engine.verify.tree import Verification


class RunConfig(BaseModel):
    """The loop's own settings, resolved from every configuration source."""

    model_config = ConfigDict(frozen=True)

    task: str = DEFAULT_TASK
    model: str
    edit_format: EditFormat = "json"
    max_iterations: int = Field(default=DEFAULTS.max_iters, ge=1)
    no_progress_limit: int = Field(default=DEFAULTS.no_progress, ge=1)
    budget: Budget = Field(default_factory=Budget)
    files: list[str] = Field(default_factory=list)
    allow_test_edits: bool = False
    packet_cap: int = DEFAULT_CAP
    feedback: Literal["packet", "raw"] = "packet"  # raw: the failing output's tail, no packet
    candidates: int = Field(
        default=1, ge=1, le=8
    )  # answers per iteration (engine/run/candidates.py)
    prompt_profile: Literal["small", "full"] = "full"  # engine/feedback/prompts.py
    runtime_values: bool = True  # the failing frame's locals in the packet
    test_focus: bool = False  # the full prompt's test files cut to their failing tests
    repeat_called: bool = True  # called functions shown again though their file is whole
    called_code: bool = False  # a called function shown without its docstring
    code_last: bool = False  # the full prompt: tests, the failure, then the code to fix
    noop_retry: bool = True  # an answer that changes nothing is re-asked once, in the iteration
    reask_candidates: bool = False  # the same when no candidate is left to verify
    code_noop: bool = True  # ... or only comments and strings that run as nothing (Python)
    docs_noop: bool = False  # an answer that changes only docstrings or comments changes nothing
    # Once an answer changed nothing, later iterations' first answers are sampled, not greedy.
    sample_after_noop: bool = True
    restart_on_stall: bool = True  # a repeated failure restarts from the baseline, once
    keep_asking: bool = False  # ... and a stall with the code at the baseline uses no restart
    escalate_model: str | None = None  # takes over after a stall and for the last iteration
    spec: Spec | None = None  # spec mode: build this module and its tests (engine/spec/mode.py)


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
