"""Where a run whose process died stands, rebuilt from its events.jsonl, and the guards and
spend primed from it. An iteration is done when judged (a packet) or refused (a format error);
one committed but not verified is verified on resume; one cut off earlier is asked again."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from engine.errors import ResumeError, UnsealedRecord
from engine.project.paths import run_path
from engine.run.events import (
    AnswerReasked,
    CandidateVerified,
    Committed,
    EditsApplied,
    Event,
    FilesShown,
    IterationStarted,
    ModelGivenUp,
    ModelResponded,
    PacketReady,
    ProposalReady,
    ReviewResolved,
    RunFinished,
    RunStarted,
    SpecPrepared,
    StrategyChanged,
)
from engine.run.guards import Guards, Spend
from engine.run.no_change import ONLY_HELD_BACK, held_back_summary
from engine.run.outcome import NO_CHANGE, IterationRecord
from engine.run.run_directory import RunDirectory, RunRecord
from engine.verify.results import TestCounts


class Observation(BaseModel):
    """One iteration as the guards saw it: verified, or `idle_answers` answers (an answer
    and its re-ask) that changed nothing."""

    model_config = ConfigDict(frozen=True)

    n: int
    signature: str = ""
    touched: list[str] = Field(default_factory=list)
    passed: int | None = None
    idle_answers: int = 0
    held_back: bool = False  # the idle answer's edits were all to pinned test files


class ResumeState(BaseModel):
    model_config = ConfigDict(frozen=True)

    started: RunStarted
    next_n: int
    pending_commit: tuple[int, str] | None = None  # committed, never verified
    records: list[dict[str, object]] = Field(default_factory=list)
    tokens: int = 0
    cost_usd: float = 0.0
    baseline_collected: int | None = None
    baseline_passed: int | None = None
    baseline_signature: str = ""
    observations: list[Observation] = Field(default_factory=list)
    strategy_changes: list[str] = Field(default_factory=list)  # StrategyChanged kinds, in order
    noop_seen: bool = False  # an answer (or first candidate) changed nothing: sample_after_noop
    shown_files: list[str] = Field(default_factory=list)  # the files the person added (app)

    def prime(self, guards: Guards, spend: Spend) -> None:
        """The guards and the spend as the dead run left them."""
        spend.tokens, spend.cost_usd = self.tokens, self.cost_usd
        guards.start(self.baseline_signature, self.baseline_passed)
        for seen in self.observations:
            if seen.idle_answers:
                guards.after_no_change(seen.idle_answers, held_back=seen.held_back)
            else:
                guards.after_edit(seen.signature, seen.touched, seen.passed)
        if self.strategy_changes:  # a stall was answered already: the next one ends the run
            guards.restarts = 0

    def iteration_records(self) -> list[IterationRecord]:
        return [IterationRecord.model_validate(record) for record in self.records]


def resumable(project: Path, run_id: str) -> tuple[RunRecord, ResumeState]:
    """The sealed record of a run `resume` can take up and where it stands; ResumeError, in
    one line, when it cannot (no such run, a record fixloop did not seal for this user, a run
    that ended). Reads only: the app checks this before it opens on a resumed run."""
    run_dir = RunDirectory(run_path(project, run_id))
    if not run_dir.has_record():
        raise ResumeError(f"no run {run_id!r} in {project} (see `fixloop-tui runs`)")
    try:
        record = run_dir.sealed_record()
    except UnsealedRecord as exc:
        raise ResumeError(str(exc)) from None
    return record, resume_state(run_dir.events())


def resume_state(events: Sequence[Event]) -> ResumeState:
    started = next((e for e in events if isinstance(e, RunStarted)), None)
    if started is None:
        raise ResumeError("the run's events.jsonl has no RunStarted: it cannot be resumed")
    finished = next((e for e in events if isinstance(e, RunFinished)), None)
    if finished is not None:
        raise ResumeError(f"the run already ended ({finished.status}): nothing to resume")
    baseline = [e for e in events if isinstance(e, PacketReady) and e.n == 0]
    # Spec mode has no first verification (no module yet): its examples' commit starts it.
    spec = any(isinstance(e, SpecPrepared) for e in events)
    if not baseline and not spec:
        raise ResumeError("the run died before its first verification: start a new run")
    first = baseline[-1] if baseline else None
    tests = (first.tests if first else None) or {}
    records: dict[int, dict[str, object]] = {}
    done: set[int] = set()
    touched: dict[int, list[str]] = {}
    commits: dict[int, str] = {}
    observations: dict[int, Observation] = {}  # a resume re-verifies: the last one counts
    tokens = 0
    cost = 0.0
    changed: list[str] = []
    noop_seen = False
    shown: list[str] = []
    reasked: set[int] = set()
    reask_answered: set[int] = set()  # a re-ask whose request failed is no idle answer
    for event in events:
        n = getattr(event, "n", 0)
        if isinstance(event, IterationStarted):
            records[n] = {"n": n, "status": "interrupted"}
        elif isinstance(event, ModelResponded):
            if n in reasked:  # candidates answer before their re-ask, a single answer too
                reask_answered.add(n)
            tokens += event.prompt_tokens + event.completion_tokens
            cost += event.cost_usd
            record = records.setdefault(n, {"n": n})  # several answers: re-asked, candidates
            record["tokens"] = _number(record.get("tokens")) + event.prompt_tokens
            record["tokens"] = _number(record["tokens"]) + event.completion_tokens
            record["cost_usd"] = _number(record.get("cost_usd")) + event.cost_usd
            record["model_s"] = _number(record.get("model_s")) + event.duration_s
        elif isinstance(event, ModelGivenUp):  # its prompt was read: spent all the same
            tokens += event.prompt_tokens
            record = records.setdefault(n, {"n": n})
            record["tokens"] = _number(record.get("tokens")) + event.prompt_tokens
        elif isinstance(event, FilesShown):
            shown = list(event.shown)
        elif isinstance(event, AnswerReasked):
            noop_seen = True
            reasked.add(n)
        elif isinstance(event, CandidateVerified) and event.k == 1 and event.unchanged:
            noop_seen = True  # the greedy first candidate changed nothing: later ones sample
        elif isinstance(event, StrategyChanged):
            if event.spent:
                changed.append(event.kind)
            noop_seen = noop_seen and event.kind != "escalate"  # a new model starts greedy
        elif isinstance(event, ProposalReady):
            records.setdefault(n, {"n": n})["explanation"] = event.explanation
            if event.format_error:
                records[n]["status"] = "format_error"
                done.add(n)
        elif isinstance(event, ReviewResolved) and event.decision == "reject":
            if event.kind == "proposal":  # nothing applied: the iteration is spent
                records.setdefault(n, {"n": n})["status"] = "rejected"
                done.add(n)
        elif isinstance(event, EditsApplied):
            touched[n] = event.files
            held_back = event.because == ONLY_HELD_BACK  # its edits were all to pinned tests
            if event.unchanged:  # the iteration is spent: its last answer changed nothing
                # With no re-ask (noop_retry off), only this says the code came back as it was.
                noop_seen = noop_seen or not held_back
                record = records.setdefault(n, {"n": n})
                summary = held_back_summary(event.held_back) if held_back else NO_CHANGE
                record["status"], record["summary"] = "no_change", summary
                done.add(n)
                idle = 2 if n in reask_answered else 1
                observations[n] = Observation(n=n, idle_answers=idle, held_back=held_back)
        elif isinstance(event, Committed):
            commits[n] = event.sha
            records.setdefault(n, {"n": n})["commit"] = event.sha
        elif isinstance(event, PacketReady) and n > 0:
            record = records.setdefault(n, {"n": n})
            record["status"] = event.verdict
            record["error_class"] = event.error_class
            record["tests"] = TestCounts(**event.tests) if event.tests else None
            done.add(n)
            observations[n] = Observation(
                n=n,
                signature=event.signature,
                touched=touched.get(n, []),
                passed=(event.tests or {}).get("passed"),
            )
    last = max(records, default=0)
    pending = None
    if last and last not in done and last in commits:
        pending = (last, commits[last])
        done.add(last)
    kept = [records[n] for n in sorted(records) if n in done]
    next_n = max(done, default=0) + 1
    return ResumeState(
        started=started,
        next_n=next_n,
        pending_commit=pending,
        records=kept,
        tokens=tokens,
        cost_usd=cost,
        baseline_collected=tests.get("collected"),
        baseline_passed=tests.get("passed"),
        baseline_signature=first.signature if first else "",
        observations=[observations[n] for n in sorted(observations)],
        strategy_changes=changed,
        noop_seen=noop_seen,
        shown_files=shown,
    )


def _number(value: object) -> float:
    return value if isinstance(value, int | float) else 0
