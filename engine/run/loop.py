"""The repair loop (DESIGN §3): prompt -> model -> parse edits -> gate -> apply + commit
-> verify -> judge -> the next packet, or an ending.

Recoverable trouble (an unusable answer, edits that do not apply) is told to the
model and costs an iteration; terminating trouble (a model that stays down, the
sandbox failing) ends the run with a status. The run's record is written after
every step, and its ending always, in a `finally`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from engine.edits.apply import apply, dropped_definitions
from engine.edits.parse import parse
from engine.edits.proposal import EditFormatError, Proposal
from engine.feedback import prompts
from engine.feedback.tokens import count_tokens
from engine.model.client import Completion, Message, ModelClient
from engine.project.run_directory import RunDirectory
from engine.project.workspace import Workspace, iteration_message
from engine.run.events import (
    BaseEvent,
    Committed,
    EditsApplied,
    EventSink,
    IterationStarted,
    ModelRequested,
    ModelResponded,
    ProposalReady,
    ReviewRequested,
    ReviewResolved,
    RunFinished,
    RunStarted,
    StageFinished,
    StageStarted,
)
from engine.run.gate import (
    Gate,
    apply_pinning,
    held_back_note,
    rejected_pass_note,
    split_test_edits,
)
from engine.run.guards import Guards, RunStatus, Spend, Trip
from engine.run.journal import Journal
from engine.run.outcome import IterationRecord as IterationRecord
from engine.run.outcome import RunConfig as RunConfig
from engine.run.outcome import RunResult as RunResult
from engine.run.resume import ResumeState
from engine.spec.mode import SpecMode
from engine.verify.execute import Verifier
from engine.verify.results import StageResult
from engine.verify.stages import Stage
from engine.verify.tree import Baseline, Verification, verify_tree
from engine.verify.verdict import Verdict
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
    on_model_text: Callable[[str], None] | None = None


class Ending(Exception):
    """Raised inside the loop to end the run with a status."""

    def __init__(self, status: RunStatus, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


class FixLoop:
    def __init__(self, config: RunConfig, deps: Deps, resume: ResumeState | None = None) -> None:
        self.config = config
        self.deps = deps
        self.resume = resume
        self.spend = Spend()
        self.guards = Guards(config.no_progress_limit)
        self.journal = Journal(deps.run_dir, deps.sinks)
        self.records: list[IterationRecord] = []
        self.baseline_collected: int | None = None
        self.rejected_pass: str | None = None
        self.spec = (
            SpecMode(config.spec, config, deps.workspace, deps.run_dir, self.journal.emit)
            if config.spec is not None
            else None
        )

    # -- the story ----------------------------------------------------------------------

    async def run(self) -> RunResult:
        if self.resume is None:
            self.started()
        status, reason = RunStatus.ERROR, "the run ended unexpectedly"
        try:
            status, reason = await self.loop()
        except Ending as ending:
            status, reason = ending.status, ending.reason
        except FixloopError as exc:  # the model or the sandbox failed for good
            status, reason = RunStatus.ERROR, str(exc)
        except BaseException as exc:
            status, reason = RunStatus.ABORTED, f"stopped: {type(exc).__name__}"
            raise
        finally:
            result = self.finish(status, reason)
        return result

    def started(self) -> None:
        workspace = self.deps.workspace
        self.emit(
            RunStarted(
                task=self.config.task,
                project=str(workspace.project),
                model=self.config.model,
                sandbox=describe(self.deps.verifier.sandbox),
                max_iterations=self.config.max_iterations,
                branch=workspace.branch,
                baseline=workspace.baseline,
                config=self.config.model_dump(mode="json"),
            )
        )

    async def loop(self) -> tuple[RunStatus, str]:
        if self.resume is not None:
            current, first = await self.restore(self.resume)
        elif self.spec is not None:  # nothing to verify before the model writes the module
            current, first = self.spec.start(), 1
        else:
            current, first = await self.verify_initial(), 1
        packet_notes: list[str] = []
        for n in range(first, self.config.max_iterations + 1):
            self.check_budget(n)
            if stop := await self.deps.gate.between(n):
                raise Ending(RunStatus.ABORTED, stop)
            started = time.monotonic()
            self.emit(IterationStarted(n=n, max_n=self.config.max_iterations))
            record = IterationRecord(n=n, status="running")
            self.records.append(record)
            completion = await self.ask(n, current, packet_notes)
            record.model_s = completion.duration_s
            record.tokens = completion.usage.prompt_tokens + completion.usage.completion_tokens
            record.cost_usd = completion.usage.cost_usd
            self.check_budget(n)
            proposal, held_back = await self.propose(n, completion.text, record)
            if proposal is None:
                packet_notes = [record.summary_for_model]
                record.duration_s = time.monotonic() - started
                continue
            held_notes = [self.held_note(held_back)] if held_back else []
            packet_notes = list(held_notes)
            touched, commit, diff = self.apply_and_commit(
                n, proposal, held_back, record, packet_notes
            )
            if commit is None:
                record.duration_s = time.monotonic() - started
                if trip := self.guards.after_no_change():
                    return self.tripped(n, trip)
                continue
            if self.spec is not None:
                self.spec.committed(n, commit)
            verify_started = time.monotonic()
            current = await self.verify_after_edit(n, touched, diff, current)
            record.verify_s = time.monotonic() - verify_started
            record.duration_s = time.monotonic() - started
            ending = await self.judge(n, current, touched, record)
            if ending is not None:
                return ending
            current = self.annotate(n, current, held_notes)
            packet_notes = []
            if self.rejected_pass:  # a rejected pass has no packet: the reason is the feedback
                current = current.model_copy(update={"packet_text": self.rejected_pass})
                self.rejected_pass = None
        return RunStatus.EXHAUSTED, f"{self.config.max_iterations} proposals did not pass"

    # -- steps --------------------------------------------------------------------------

    async def verify_initial(self) -> Verification:
        """What is red before the model is asked; an environment problem ends it here."""
        current = await self.verify(0)
        if current.judgement.verdict is Verdict.ENV_FAILURE:
            current = await self.verify(0)  # once more, in case it was a fluke
        verdict = current.judgement.verdict
        if verdict is Verdict.ENV_FAILURE:
            raise Ending(RunStatus.ENV_FAILURE, _env_reason(current))
        if verdict is Verdict.OK:
            raise Ending(RunStatus.OK, "already green before any edit: nothing to fix")
        if verdict is Verdict.SUSPICIOUS_PASS:
            raise Ending(RunStatus.SUSPICIOUS_PASS, "; ".join(current.judgement.reasons))
        tests = current.judgement.tests
        self.baseline_collected = tests.collected if tests else None
        self.guards.start(current.judgement.signature, tests.passed if tests else None)
        return current

    async def restore(self, state: ResumeState) -> tuple[Verification, int]:
        """Pick a dead run up where its events end: guards replayed, the tip re-verified."""
        self.records = [IterationRecord.model_validate(r) for r in state.records]
        if self.spec is not None:
            self.spec.restore(self.deps.run_dir.events())
        self.spend.tokens, self.spend.cost_usd = state.tokens, state.cost_usd
        self.baseline_collected = state.baseline_collected
        self.guards.start(state.baseline_signature, state.baseline_passed)
        for seen in state.observations:
            self.guards.after_edit(seen.signature, seen.touched, seen.passed)
        workspace = self.deps.workspace
        if state.pending_commit is not None:
            n, commit = state.pending_commit
            record = next(r for r in self.records if r.n == n)
            touched = workspace.changed_files(commit)
            current = await self.verify(n, touched=touched, diff=workspace.diff(commit))
            ending = await self.judge(n, current, touched, record)
            if ending is not None:
                raise Ending(*ending)
        else:
            current = await self.verify(state.next_n - 1)
            if current.judgement.verdict is Verdict.OK:
                raise Ending(RunStatus.OK, "verified green on resume")
        return self.annotate(state.next_n - 1, current, []), state.next_n

    def prompt(self, current: Verification, notes: list[str]) -> list[Message]:
        spec = self.spec
        if spec is not None and not spec.latched:  # the draft: the spec, no implementation
            return spec.draft_messages(notes)
        root = self.deps.workspace.root
        packet = current.packet
        named = [*spec.named_files(), *self.config.files] if spec else self.config.files
        paths = prompts.relevant_paths(root, packet, named=named)
        if spec is not None:
            paths = spec.shown(paths)
        files = prompts.load_files(root, paths, lines_of_interest=prompts.lines_of_interest(packet))
        pointers = prompts.called_definitions(root, packet, paths)
        return prompts.messages(
            spec.repair_task() if spec else self.config.task,
            files,
            current.packet_text,
            self.config.edit_format,
            [*pointers, *notes],
        )

    async def ask(self, n: int, current: Verification, notes: list[str]) -> Completion:
        messages = self.prompt(current, notes)
        self.journal.prompt(n, messages)
        prompt_tokens = sum(count_tokens(m.content, self.config.model) for m in messages)
        self.emit(ModelRequested(n=n, model=self.config.model, prompt_tokens=prompt_tokens))
        completion = await self.deps.model.complete(messages, on_text=self.deps.on_model_text)
        self.journal.text(n, "response.txt", completion.text)
        usage = completion.usage
        self.spend.tokens += usage.prompt_tokens + usage.completion_tokens
        self.spend.cost_usd += usage.cost_usd
        self.emit(
            ModelResponded(
                n=n,
                prompt_tokens=usage.prompt_tokens,
                completion_tokens=usage.completion_tokens,
                cost_usd=usage.cost_usd,
                duration_s=completion.duration_s,
                finish_reason=completion.finish_reason,
                attempts=completion.attempts,
            )
        )
        return completion

    async def propose(
        self, n: int, text: str, record: IterationRecord
    ) -> tuple[Proposal | None, list[str]]:
        """(the reviewed proposal to apply, the pinned test files held back from it);
        no proposal when the answer is unusable (the record says why, for the model)."""
        try:
            proposal = self.parse(text)
        except EditFormatError as exc:
            self.unusable(n, record, exc)
            return None, []
        workspace = self.deps.workspace
        split = split_test_edits(proposal, workspace.pins, workspace.root)
        record.explanation = proposal.explanation
        self.emit(
            ProposalReady(
                n=n,
                explanation=proposal.explanation,
                files=[edit.path for edit in proposal.edits],
            )
        )
        reasons = [f"changes pinned test file {path}" for path in split.held_back]
        self.emit(ReviewRequested(n=n, kind="proposal", reasons=reasons))
        review = await self.deps.gate.review(n, proposal, split.held_back)
        self.emit(
            ReviewResolved(
                n=n, kind="proposal", decision=review.decision, note=review.note, by=review.by
            )
        )
        if review.decision == "abort":
            raise Ending(RunStatus.ABORTED, review.note or "the proposal was rejected")
        if self.spec is not None:  # the latch decides what frozen tests may change
            try:
                kept, held_back = self.spec.screen(n, proposal, split, review)
            except EditFormatError as exc:
                self.unusable(n, record, exc)
                return None, []
        elif review.decision == "edit" and review.proposal is not None:
            return review.proposal, []
        else:
            allowed = self.config.allow_test_edits or review.allow_test_edits
            kept, held_back = apply_pinning(proposal, split, allowed=allowed)
        self.journal.json(
            n, "edits.json", {"proposal": proposal.model_dump(), "held_back": held_back}
        )
        return kept, held_back

    def parse(self, text: str) -> Proposal:
        """The answer as a proposal; an `EditFormatError` says why it is unusable."""
        proposal = parse(text, self.config.edit_format)
        if self.spec is not None:
            self.spec.check_draft(proposal)
        if self.config.edit_format == "whole":
            checked = self.spec.unfrozen(proposal) if self.spec else proposal
            lost = dropped_definitions(checked, self.deps.workspace.root)
            if lost:
                raise EditFormatError(lost, "None of your edits were applied.")
        return proposal

    def unusable(self, n: int, record: IterationRecord, exc: EditFormatError) -> None:
        record.status = "format_error"
        record.summary = "; ".join(exc.problems)
        record.summary_for_model = str(exc)
        self.emit(ProposalReady(n=n, format_error=str(exc)))

    def held_note(self, held_back: list[str]) -> str:
        return self.spec.refusal_note(held_back) if self.spec else held_back_note(held_back)

    def apply_and_commit(
        self,
        n: int,
        proposal: Proposal,
        held_back: list[str],
        record: IterationRecord,
        notes: list[str],
    ) -> tuple[list[str], str | None, str]:
        """Apply and commit; (touched files, commit, its diff), or no commit and a note for
        the model."""
        workspace = self.deps.workspace
        try:
            applied = apply(proposal, workspace.root)
        except EditFormatError as exc:
            record.status = "format_error"
            record.summary = "; ".join(exc.problems)
            notes.insert(0, str(exc))
            return [], None, ""
        self.emit(EditsApplied(n=n, files=applied.files, held_back=held_back))
        message = iteration_message(n, self.config.max_iterations, proposal.explanation)
        commit = workspace.commit(message) if applied.files else None
        if commit is None:
            record.status = "no_change"
            record.summary = "the proposal changed no file"
            notes.append(
                "Your last answer changed no file (its edits were held back or repeated the "
                "current content). Change the code under test."
            )
            return [], None, ""
        record.commit = commit
        self.emit(Committed(n=n, sha=commit, message=message))
        diff = workspace.diff(commit)
        self.journal.text(n, "patch.diff", diff)
        return applied.files, commit, diff

    async def verify_after_edit(
        self, n: int, touched: list[str], diff: str, previous: Verification
    ) -> Verification:
        if self.spec is not None:  # tests that cannot work against the module: do not run
            refused = self.spec.check_references(n, previous.stages)
            if refused is not None:
                return self.recorded(n, refused)
        # No stages before: a spec run's first verification, with no progress to report.
        before = previous.stages or None
        result = await self.verify(n, touched=touched, diff=diff, previous=before)
        if result.judgement.verdict is Verdict.ENV_FAILURE:
            result = await self.verify(n, touched=touched, diff=diff, previous=before)
        return result

    async def judge(
        self, n: int, current: Verification, touched: list[str], record: IterationRecord
    ) -> tuple[RunStatus, str] | None:
        """An ending, or None to go on with the next packet."""
        judgement = current.judgement
        record.status = judgement.verdict.value
        record.tests = judgement.tests
        record.error_class = judgement.classification.error_class.value
        record.summary = current.packet.summary if current.packet else ""
        verdict = judgement.verdict
        if verdict is Verdict.OK:
            return RunStatus.OK, f"verified green on iteration {n}"
        if verdict is Verdict.ENV_FAILURE:
            return self.tripped(n, Trip("env_failure", RunStatus.ENV_FAILURE, _env_reason(current)))
        if verdict is Verdict.SUSPICIOUS_PASS:
            reasons = judgement.reasons
            self.emit(ReviewRequested(n=n, kind="pass", reasons=reasons))
            review = await self.deps.gate.review_pass(n, reasons)
            self.emit(
                ReviewResolved(
                    n=n,
                    kind="pass",
                    decision="accept" if review.accept else "reject",
                    note=review.note,
                    by=review.by,
                )
            )
            if review.accept:
                return RunStatus.OK, f"suspicious pass accepted ({review.note}): " + "; ".join(
                    reasons
                )
            if not review.keep_repairing:
                return RunStatus.SUSPICIOUS_PASS, "; ".join(reasons)
            self.rejected_pass = rejected_pass_note(reasons, review.note)
            return None
        passed = judgement.tests.passed if judgement.tests else None
        if trip := self.guards.after_edit(judgement.signature, touched, passed):
            return self.tripped(n, trip)
        return None

    async def verify(
        self,
        n: int,
        *,
        touched: list[str] | None = None,
        diff: str | None = None,
        previous: list[StageResult] | None = None,
    ) -> Verification:
        workspace = self.deps.workspace

        async def on_stage(stage: Stage, result: StageResult | None) -> None:
            if result is None:
                self.emit(StageStarted(n=n, stage=stage.name, cmd=stage.cmd))
                return
            self.emit(
                StageFinished(
                    n=n,
                    stage=stage.name,
                    exit_code=result.exit_code,
                    duration_ms=result.duration_ms,
                    timed_out=result.timed_out,
                    oom_killed=result.oom_killed,
                )
            )
            self.journal.stage(n, stage.name, result)

        result = await verify_tree(
            workspace.root,
            self.deps.verifier,
            baseline=Baseline(
                repo=workspace.root,
                rev=workspace.baseline,
                collected=self.baseline_collected,
                pins=workspace.pins,
            ),
            touched=touched or [],
            last_diff=diff,
            previous=previous,
            iteration=n + 1 if n < self.config.max_iterations else None,
            max_iterations=self.config.max_iterations,
            repeat_note=None,
            model=self.config.model,
            cap=self.config.packet_cap,
            on_stage=on_stage,
        )
        return self.recorded(n, result)

    def recorded(self, n: int, result: Verification) -> Verification:
        """The verification's packet in the run directory, and its PacketReady event."""
        self.journal.packet(n, result)
        return result

    def annotate(self, n: int, current: Verification, notes: list[str]) -> Verification:
        """The next packet, with the repeat note and what was held back from the last edit."""
        repeat = self.guards.repeat_note()
        if current.packet is None or not (repeat or notes):
            return current
        packet = current.packet.model_copy(
            update={"repeat_note": repeat, "notes": [*current.packet.notes, *notes]}
        )
        text = packet.render(self.config.packet_cap, lambda t: count_tokens(t, self.config.model))
        self.journal.text(n, "packet.txt", text)
        return current.model_copy(update={"packet": packet, "packet_text": text})

    # -- bookkeeping --------------------------------------------------------------------

    def check_budget(self, n: int) -> None:
        over = self.spend.over(self.config.budget)
        if over:
            self.journal.trip(n, "budget", over)
            raise Ending(RunStatus.BUDGET_EXCEEDED, over)

    def tripped(self, n: int, trip: Trip) -> tuple[RunStatus, str]:
        self.journal.trip(n, trip.guard, trip.detail)
        return trip.status, trip.detail

    def emit(self, event: BaseEvent) -> None:
        self.journal.emit(event)

    def finish(self, status: RunStatus, reason: str) -> RunResult:
        from engine.run.report import write_report

        workspace = self.deps.workspace
        final = next((r.commit for r in reversed(self.records) if r.commit), None)
        result = RunResult(
            run_id=self.deps.run_dir.run_id,
            status=status,
            reason=reason,
            iterations=self.records,
            branch=workspace.branch,
            final_commit=final,
            run_dir=str(self.deps.run_dir.path),
            report=None,
            tokens=self.spend.tokens,
            cost_usd=round(self.spend.cost_usd, 6),
            duration_s=round(self.spend.elapsed_s, 3),
        )
        if status is not RunStatus.OK:
            path = write_report(self.config, result, workspace, self.deps.run_dir)
            result = result.model_copy(update={"report": str(path)})
        self.deps.run_dir.write_json("result.json", result)
        self.emit(
            RunFinished(
                status=status.value,
                reason=reason,
                iterations=len(self.records),
                branch=workspace.branch,
                final_commit=final,
                tokens=self.spend.tokens,
                cost_usd=result.cost_usd,
                duration_s=result.duration_s,
            )
        )
        return result


def _env_reason(current: Verification) -> str:
    classification = current.judgement.classification
    return classification.env_cause or classification.primary
