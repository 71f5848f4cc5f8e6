"""The repair loop (ARCHITECTURE.md, "One iteration, step by step"): prompt, model, parse, gate,
apply + commit, verify, judge, then the next packet or an ending (a `RunEnded`, always)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from engine.errors import ModelError
from engine.feedback.prompts import said_lines
from engine.feedback.tree import Verification, shown_again
from engine.model.types import ModelClient
from engine.project.workspace import Workspace
from engine.run.answers import Answers
from engine.run.checker import IterationChecker
from engine.run.events import (
    EventSink,
    IterationStarted,
    RunStopped,
)
from engine.run.gate import Gate
from engine.run.guards import (
    Guards,
    ModelUnreachable,
    RunEnded,
    RunStatus,
    Spend,
    abort_reason,
    stop_of,
)
from engine.run.journal import Journal
from engine.run.outcome import IterationRecord, RunConfig, RunResult
from engine.run.report import write_report
from engine.run.resume import ResumeState
from engine.run.run_directory import RunDirectory
from engine.run.spec_mode import run_mode
from engine.run.stall import ApproachChange
from engine.run.steps import Steps, apply_and_commit
from engine.run.streaming import OnPiece
from engine.run.talk import Talk
from engine.verify.execute import Verifier
from sandbox import FixloopError
from sandbox.contract import describe


@dataclass
class Deps:
    model: ModelClient
    verifier: Verifier
    workspace: Workspace
    gate: Gate
    run_dir: RunDirectory
    sinks: list[EventSink] = field(default_factory=list)
    on_model_text: OnPiece | None = None  # each answer's pieces as they stream
    approval: Literal["step", "auto"] = "step"  # for the audit trail: who approves proposals
    versions: dict[str, str] = field(default_factory=dict)
    escalation: ModelClient | None = None  # `escalate_model`: after a stall, and for the last
    talk: Talk | None = None  # what the person says while the run goes on (the app)


class FixLoop:
    """One run, from its start (or a resume) to its one ending."""

    def __init__(self, config: RunConfig, deps: Deps, resume: ResumeState | None = None) -> None:
        self.config, self.deps, self.resume = config, deps, resume
        self.journal = Journal(deps.run_dir, deps.sinks)
        self.spend = Spend()
        restarts = 1 if config.strategy.restart_on_stall or deps.escalation is not None else 0
        self.guards = Guards(config.no_progress_limit, restarts, config.max_iterations)
        self.mode = run_mode(config, deps.workspace, deps.run_dir, self.journal.emit)
        self.checker = IterationChecker(
            config, deps.verifier, deps.workspace, deps.gate, self.journal, self.guards, self.mode
        )
        self.answers = Answers(
            config,
            deps.model,
            deps.workspace,
            deps.gate,
            self.journal,
            self.mode,
            self.checker,
            self.spend,
            deps.on_model_text,
            self.check_budget,
        )
        self.approach = ApproachChange(
            config,
            deps.workspace,
            self.answers,
            self.checker,
            self.guards,
            self.journal,
            deps.escalation,
        )
        self.records: list[IterationRecord] = []

    async def run(self) -> RunResult:
        """The run's result; a stop by the person raises `RunInterrupted` (the run stays
        resumable), any other cut ends it as aborted and re-raises."""
        if self.resume is None:
            d = self.deps
            sandbox = describe(d.verifier.sandbox)
            self.journal.started(self.config, d.workspace, sandbox, d.approval, d.versions)
        try:
            ending = await self.ending()
        except BaseException as exc:
            if (stop := stop_of(exc)) is not None:
                self.journal.emit(RunStopped(n=len(self.records), reason=stop.reason))
                raise stop from None
            self.finish(RunEnded(RunStatus.ABORTED, abort_reason(exc)))
            raise
        return self.finish(ending)

    async def ending(self) -> RunEnded:
        try:
            await self.iterate()
        except RunEnded as ended:
            return ended
        except ModelError as exc:
            if exc.unreachable:  # an outage pauses the run: resumable, never `error`
                raise ModelUnreachable(str(exc)) from None
            return RunEnded(RunStatus.ERROR, str(exc))
        except FixloopError as exc:  # the sandbox failed for good
            return RunEnded(RunStatus.ERROR, str(exc))
        return RunEnded(RunStatus.ERROR, "the run ended unexpectedly")

    async def iterate(self) -> None:
        """Every iteration until an ending; running out of iterations is one."""
        current, first = await self.start()
        notes: list[str] = []
        for n in range(first, self.config.max_iterations + 1):
            self.check_budget(n)
            if stop := await self.deps.gate.between(n):
                raise RunEnded(RunStatus.ABORTED, stop)
            self.journal.emit(IterationStarted(n=n, max_n=self.config.max_iterations))
            steps = Steps(n)
            try:
                shown = shown_again(current, n, self.config.model)
                notes = [*notes, *self.heard(n)]
                current, notes = await self.iteration(steps, shown, notes)
            finally:  # an ending mid-iteration keeps what the iteration got to
                self.records.append(steps.record())
        raise RunEnded(RunStatus.EXHAUSTED, f"{self.config.max_iterations} proposals did not pass")

    async def iteration(
        self, steps: Steps, current: Verification, notes: list[str]
    ) -> tuple[Verification, list[str]]:
        """One iteration's steps; (what the next packet is built from, notes for its prompt)."""
        n = steps.n
        if n == self.config.max_iterations:
            self.approach.escalate(n, "the last iteration")
        steps.answer = answer = await self.answers.answer(steps, current, notes)
        if answer.ending is not None:
            raise answer.ending
        if answer.unusable is not None:  # costs the iteration; the model hears why
            return current, [str(answer.unusable)]
        if answer.rejected is not None:  # nothing applied; the same packet, and the person's no
            return current, [answer.rejected]
        steps.applied = applied = apply_and_commit(
            n, answer, self.deps.workspace, self.journal, self.config.max_iterations
        )
        if applied.commit is None:
            idle = max(answer.idle_answers, 1)
            if trip := self.guards.after_no_change(idle, held_back=applied.only_held_back):
                if not self.guards.changes_approach(trip, n):
                    raise self.checker.tripped(n, trip)
                self.journal.trip(n, trip)  # idle is stuck too: change the approach once
                return await self.approach.after_stall(n, trip.detail, current)
            return current, applied.notes(answer.notes)
        self.mode.committed(n, applied.commit)
        steps.check = check = await self.checker.after_edit(
            n, applied.touched, applied.diff, current.stages, answer.notes, answer.verified
        )
        if check.restart:
            return await self.approach.after_stall(n, check.restart, check.verification)
        if check.ending is not None:
            raise check.ending
        return check.verification, []

    def heard(self, n: int) -> list[str]:
        """What the person said since the last prompt, taken once before iteration n's prompt
        is built (a note typed later waits for the next one), into the trail; the lines it
        adds to the prompt. The files they added go to every prompt from here on."""
        if self.deps.talk is None:
            return []
        said = self.deps.talk.take()
        self.journal.said(n, said)
        self.answers.shown = list(said.shown)
        return said_lines(said.notes, said.shown)

    # -- the steps, in order ------------------------------------------------------------

    async def start(self) -> tuple[Verification, int]:
        """(what the first prompt is built from, the first iteration's number)."""
        if self.resume is None:
            return await self.mode.begin(self.checker), 1
        return await self.restore(self.resume), self.resume.next_n

    async def restore(self, state: ResumeState) -> Verification:
        """Pick a dead run up where its events end: the mode, guards and spend as they were,
        the tip verified again."""
        self.records = state.iteration_records()
        self.mode.restore(self.deps.run_dir.events())
        state.prime(self.guards, self.spend)
        if "escalate" in state.strategy_changes and self.deps.escalation is not None:
            self.answers.model = self.deps.escalation
        self.answers.noop_seen = state.noop_seen
        if self.deps.talk is not None:
            self.deps.talk.restore([*state.shown_files, *self.deps.talk.shown()])
        self.checker.restore(state.baseline_collected)
        if state.pending_commit is None:
            return await self.checker.resumed(state.next_n - 1)
        n, commit = state.pending_commit
        workspace = self.deps.workspace
        touched, diff = workspace.changed_files(commit), workspace.diff(commit)
        check = await self.checker.after_edit(n, touched, diff, [])
        self.records = [r.judged(check.verification) if r.n == n else r for r in self.records]
        if check.ending is not None:
            raise check.ending
        return check.verification

    def check_budget(self, n: int) -> None:
        if trip := self.spend.over_budget(self.config.budget):
            raise self.checker.tripped(n, trip)

    def finish(self, ending: RunEnded) -> RunResult:
        workspace, run_dir = self.deps.workspace, self.deps.run_dir
        committed = not workspace.unchanged()
        result = RunResult(
            run_id=run_dir.run_id,
            status=ending.status,
            reason=ending.reason,
            accepted_suspicious=ending.accepted_suspicious,
            iterations=self.records,
            branch=workspace.branch,
            final_commit=next((r.commit for r in reversed(self.records) if r.commit), None),
            run_dir=str(run_dir.path),
            report=None,
            tokens=self.spend.tokens,
            cost_usd=round(self.spend.cost_usd, 6),
            duration_s=round(self.spend.elapsed_s, 3),
        )
        if ending.status is not RunStatus.OK:
            path = write_report(self.config, result, workspace, run_dir, committed=committed)
            result = result.model_copy(update={"report": str(path)})
        if not committed:  # nothing to accept, keep or discard: no branch is left
            workspace.discard()
            result = result.model_copy(update={"branch": ""})
        self.journal.finished(result)
        return result
