"""One iteration's check (ARCHITECTURE.md, "One iteration, step by step"): verify the tree in
the sandbox, judge the verdict (the gate on a doubtful pass, then the guards), and render the
next packet once, repeat note and notes included, into the run's trail."""

from __future__ import annotations

import time
from collections.abc import Sequence

from engine.project.workspace import Workspace
from engine.run.events import ReviewRequested, ReviewResolved
from engine.run.gate import Gate, rejected_pass_note
from engine.run.guards import Guards, RunEnded, RunStatus, Trip
from engine.run.journal import Journal
from engine.run.modes import RunMode
from engine.run.outcome import RunConfig
from engine.run.steps import Check
from engine.verify.execute import Verifier
from engine.verify.results import StageResult
from engine.verify.tree import Baseline, Verification, examine_tree, rendered
from engine.verify.verdict import Verdict


class IterationChecker:
    """Verifies and judges each commit of one run; owns the baseline's test count."""

    def __init__(
        self,
        config: RunConfig,
        verifier: Verifier,
        workspace: Workspace,
        gate: Gate,
        journal: Journal,
        guards: Guards,
        mode: RunMode,
    ) -> None:
        self.config = config
        self.verifier = verifier
        self.workspace = workspace
        self.gate = gate
        self.journal = journal
        self.guards = guards
        self.mode = mode
        self.baseline_collected: int | None = None

    async def baseline(self) -> Verification:
        """What is red before the model is asked; an environment problem, a green or a
        doubtful pass ends the run here."""
        current = self.settled(0, await self.verify(0, retry=True))
        judgement = current.judgement
        if judgement.verdict is Verdict.ENV_FAILURE:
            raise RunEnded(RunStatus.ENV_FAILURE, env_reason(current))
        if judgement.verdict is Verdict.OK:
            raise RunEnded(RunStatus.OK, "already green before any edit: nothing to fix")
        if judgement.verdict is Verdict.SUSPICIOUS_PASS:
            raise RunEnded(RunStatus.SUSPICIOUS_PASS, "; ".join(judgement.reasons))
        tests = judgement.tests
        self.baseline_collected = tests.collected if tests else None
        self.guards.start(judgement.signature, tests.passed if tests else None)
        return current

    async def after_edit(
        self,
        n: int,
        touched: list[str],
        diff: str,
        previous: Sequence[StageResult],
        notes: Sequence[str] = (),
    ) -> Check:
        """A commit verified (unless the mode's check stands in for the run) and judged;
        `notes` go into the next packet."""
        started = time.monotonic()
        examined = self.mode.check_before_verify(n, previous)
        if examined is None:
            # No stages before: a spec run's first verification, with no progress to report.
            before = list(previous) or None
            examined = await self.verify(n, touched, diff, before, retry=True)
        verify_s = time.monotonic() - started
        return await self.judge(n, examined, touched, notes, verify_s)

    async def resumed(self, n: int) -> Verification:
        """A resumed run's tip, verified again: green ends it, else the next packet."""
        examined = await self.verify(n)
        if examined.judgement.verdict is Verdict.OK:
            self.settled(n, examined)
            raise RunEnded(RunStatus.OK, "verified green on resume")
        return self.settled(n, examined, self.guards.repeat_note())

    async def judge(
        self,
        n: int,
        examined: Verification,
        touched: list[str],
        notes: Sequence[str],
        verify_s: float,
    ) -> Check:
        judgement = examined.judgement
        verdict = judgement.verdict
        if verdict not in (Verdict.OK, Verdict.ENV_FAILURE, Verdict.SUSPICIOUS_PASS):
            passed = judgement.tests.passed if judgement.tests else None
            trip = self.guards.after_edit(judgement.signature, touched, passed)
            if trip is not None:  # no next packet: nothing to add to this one
                return Check(self.settled(n, examined), verify_s, self.tripped(n, trip))
            return Check(self.settled(n, examined, self.guards.repeat_note(), notes), verify_s)
        current = self.settled(n, examined)
        if verdict is Verdict.OK:
            ending = RunEnded(RunStatus.OK, f"verified green on iteration {n}")
            return Check(current, verify_s, ending)
        if verdict is Verdict.ENV_FAILURE:
            trip = Trip("env_failure", RunStatus.ENV_FAILURE, env_reason(current))
            return Check(current, verify_s, self.tripped(n, trip))
        reasons = judgement.reasons
        self.journal.emit(ReviewRequested(n=n, kind="pass", reasons=reasons))
        review = await self.gate.review_pass(n, reasons)
        self.journal.emit(
            ReviewResolved(
                n=n,
                kind="pass",
                decision="accept" if review.accept else "reject",
                note=review.note,
                by=review.by,
            )
        )
        listed = "; ".join(reasons)
        if review.accept:
            ending = RunEnded(RunStatus.OK, f"suspicious pass accepted ({review.note}): {listed}")
            return Check(current, verify_s, ending)
        if not review.keep_repairing:
            return Check(current, verify_s, RunEnded(RunStatus.SUSPICIOUS_PASS, listed))
        # A rejected pass has no packet: the reason is the feedback.
        rejected = rejected_pass_note(reasons, review.note)
        return Check(current.model_copy(update={"packet_text": rejected}), verify_s)

    async def verify(
        self,
        n: int,
        touched: list[str] | None = None,
        diff: str | None = None,
        previous: list[StageResult] | None = None,
        *,
        retry: bool = False,
    ) -> Verification:
        """One sandbox run, its stages in the trail; with `retry`, an environment failure is
        run once more, in case it was a fluke."""
        workspace = self.workspace

        async def once() -> Verification:
            return await examine_tree(
                workspace.root,
                self.verifier,
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
                on_stage=self.journal.on_stage(n),
            )

        examined = await once()
        if retry and examined.judgement.verdict is Verdict.ENV_FAILURE:
            self.settled(n, examined)  # the failed attempt stays in the trail
            examined = await once()
        return examined

    def settled(
        self,
        n: int,
        examined: Verification,
        repeat_note: str | None = None,
        notes: Sequence[str] = (),
    ) -> Verification:
        """The verification with its packet rendered, once, and written to the trail."""
        cap, model = self.config.packet_cap, self.config.model
        result = rendered(examined, cap=cap, model=model, repeat_note=repeat_note, notes=notes)
        self.journal.packet(n, result)
        return result

    def tripped(self, n: int, trip: Trip) -> RunEnded:
        self.journal.trip(n, trip)
        return trip.ending()


def env_reason(current: Verification) -> str:
    classification = current.judgement.classification
    return classification.env_cause or classification.primary
