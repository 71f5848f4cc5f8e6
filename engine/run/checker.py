"""One iteration's check (ARCHITECTURE.md, "One iteration, step by step"): format the tree
(`fix_cmd`: its changes committed on their own), verify it in the sandbox, judge the verdict
(the gate on a doubtful pass, then the guards), and render the next packet once, repeat note
and notes included, into the run's trail."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from engine.feedback.tree import Baseline, Verification, examine_tree, packet_for
from engine.project.workspace import Workspace
from engine.run.events import Committed, Formatted, ReviewRequested, ReviewResolved
from engine.run.gate import Gate, rejected_pass_note
from engine.run.guards import FailurePoint, Guards, RunEnded, RunStatus, Trip
from engine.run.journal import Journal
from engine.run.outcome import RunConfig
from engine.run.steps import Checked
from engine.verify.baseline_tests import BaselineTests, no_tests_reason
from engine.verify.execute import StageCallback, Verifier
from engine.verify.fix import FixRun, run_fix
from engine.verify.results import StageResult
from engine.verify.verdict import Verdict

BASELINE_TESTS = "baseline-tests.json"
REVERT_MESSAGE = "fixloop[iter {n}]: revert the test changes of a rejected pass"
FORMAT_MESSAGE = "fixloop[iter {n}/{max_n}]: formatted"
FORMAT_TRAIL = "format.json"


class CheckingMode(Protocol):
    """What the checker asks of the run's mode (a `RunMode` answers both): the checker is
    built for a mode, so it names only these two and never imports the modes."""

    def check_before_verify(
        self, n: int, previous: Sequence[StageResult] = ()
    ) -> Verification | None: ...

    def restorable(self, paths: Sequence[str]) -> list[str]: ...


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
        mode: CheckingMode,
    ) -> None:
        self.config = config
        self.verifier = verifier
        self.workspace = workspace
        self.gate = gate
        self.journal = journal
        self.guards = guards
        self.mode = mode
        self.baseline_collected: int | None = None
        self.baseline_tests: BaselineTests | None = None

    async def baseline(self) -> Verification:
        """What is red before the model is asked; no test, an environment problem, a green or
        a doubtful pass ends the run here."""
        current = self.with_packet(0, await self.verify(0, retry=True))
        self.verifier.learn(current.stages)  # the person's tree, before any answer
        judgement = current.judgement
        if (no_tests := no_tests_reason(current.stages)) is not None:
            way = "write a test that shows the bug, or build from a spec (--spec)"
            raise RunEnded(RunStatus.NO_TESTS, f"{no_tests}; {way}")
        if judgement.verdict is Verdict.ENV_FAILURE:
            raise RunEnded(RunStatus.ENV_FAILURE, env_reason(current))
        if judgement.verdict is Verdict.OK:
            raise RunEnded(RunStatus.OK, "already green before any edit: nothing to fix")
        if judgement.verdict is Verdict.SUSPICIOUS_PASS:
            raise RunEnded(RunStatus.SUSPICIOUS_PASS, "; ".join(judgement.reasons))
        tests = judgement.tests
        self.baseline_collected = tests.collected if tests else None
        self.baseline_tests = BaselineTests.of(current.stages)
        if self.baseline_tests is not None:  # for a resume
            self.journal.json(0, BASELINE_TESTS, self.baseline_tests)
        self.allow_baseline_times()
        passed = tests.passed if tests else None
        self.guards.start(judgement.signature, passed, FailurePoint.of(current.packet))
        return current

    def restore(self, baseline_collected: int | None) -> None:
        """A resumed run's baseline, as its first verification left it in the trail."""
        self.baseline_collected = baseline_collected
        path = self.journal.run_dir.path / self.journal.run_dir.iteration(0) / BASELINE_TESTS
        if path.is_file():
            self.baseline_tests = BaselineTests.model_validate_json(path.read_bytes())
        self.allow_baseline_times()

    def allow_baseline_times(self) -> None:
        """Every later verification gives each test at least what the baseline saw it take,
        or what earlier verifications remembered, with a margin
        (`engine/verify/time_needs.py`)."""
        self.verifier.allow_times(self.baseline_tests.durations if self.baseline_tests else {})

    async def after_edit(
        self,
        n: int,
        touched: list[str],
        diff: str,
        previous: Sequence[StageResult],
        notes: Sequence[str] = (),
        verified: Verification | None = None,
    ) -> Checked:
        """A commit verified (unless the mode's check, or the chosen candidate's verification
        of the same tree, stands in for the run) and judged; `notes` go into the next packet."""
        started = time.monotonic()
        if verified is not None and self.verifier.fix is not None:
            # The candidate's scratch copy was formatted by the same command before it was
            # verified: formatting the worktree gives the tree that verification saw.
            fixed = await self.formatted(n, None, self.journal.on_stage(n))
            if fixed is not None and fixed.failed:
                verified = None  # not the tree the candidate's verification saw
        examined = verified or self.mode.check_before_verify(n, previous)
        if verified is not None:
            await self.journal.stages(n, verified.stages)
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
            self.with_packet(n, examined)
            raise RunEnded(RunStatus.OK, "verified green on resume")
        return self.with_packet(n, examined, self.guards.repeat_note())

    async def judge(
        self,
        n: int,
        examined: Verification,
        touched: list[str],
        notes: Sequence[str],
        verify_s: float,
    ) -> Checked:
        judgement = examined.judgement
        verdict = judgement.verdict
        if verdict not in (Verdict.OK, Verdict.ENV_FAILURE, Verdict.SUSPICIOUS_PASS):
            passed = judgement.tests.passed if judgement.tests else None
            front = FailurePoint.of(examined.packet)
            trip = self.guards.after_edit(judgement.signature, touched, passed, front)
            if self.guards.changes_approach(trip, n):
                assert trip is not None
                verification = self.with_packet(n, examined)  # its packet first, as for any trip
                self.journal.trip(n, trip)  # the loop changes its approach instead of ending
                return Checked(verification, verify_s, restart=trip.detail)
            if trip is not None:  # no next packet: nothing to add to this one
                return Checked(self.with_packet(n, examined), verify_s, self.tripped(n, trip))
            return Checked(
                self.with_packet(n, examined, self.guards.repeat_note(), notes), verify_s
            )
        current = self.with_packet(n, examined)
        if verdict is Verdict.OK:
            ending = RunEnded(RunStatus.OK, f"verified green on iteration {n}")
            return Checked(current, verify_s, ending)
        if verdict is Verdict.ENV_FAILURE:
            trip = Trip("env_failure", RunStatus.ENV_FAILURE, env_reason(current))
            return Checked(current, verify_s, self.tripped(n, trip))
        reasons = judgement.reasons
        self.journal.emit(ReviewRequested(n=n, kind="pass", reasons=reasons))
        review = await self.gate.review_pass(n, reasons)
        self.journal.emit(
            ReviewResolved(
                n=n,
                kind="pass",
                decision="accept" if review.accept else "reject",
                note=review.note,
                comment=review.comment,
                by=review.by,
            )
        )
        listed = "; ".join(reasons)
        if review.accept:
            ending = RunEnded(
                RunStatus.OK, f"suspicious pass accepted ({review.note}): {listed}", reasons
            )
            return Checked(current, verify_s, ending)
        if not review.keep_repairing:
            return Checked(current, verify_s, RunEnded(RunStatus.SUSPICIOUS_PASS, listed))
        return await self.rejected(n, current, review.comment, verify_s)

    async def rejected(
        self, n: int, current: Verification, comment: str, verify_s: float
    ) -> Checked:
        """An honest reject: the test changes that made the pass doubtful are reverted in a
        commit of their own, the tree verified again, and the model gets the normal packet
        with the reasons and the person's words. With nothing to revert, the reasons alone."""
        reasons = current.judgement.reasons
        paths = self.mode.restorable(doubtful_paths(current))
        message = REVERT_MESSAGE.format(n=n)
        commit = self.workspace.restore(paths, message) if paths else None
        if commit is None:  # no packet to give: the reasons are the feedback
            note = rejected_pass_note(reasons, comment)
            return Checked(current.model_copy(update={"packet_text": note}), verify_s)
        self.journal.emit(Committed(n=n, sha=commit, message=message))
        self.journal.text(n, "revert.diff", self.workspace.diff(commit))
        note = rejected_pass_note(reasons, comment, reverted=paths)
        # No last diff: the revert is not the model's edit (the note says what it was).
        examined = await self.verify(
            n, paths, None, current.stages, retry=True, trail_name="-after-revert"
        )
        return await self.judge(n, examined, paths, [note], verify_s)

    async def verify(
        self,
        n: int,
        touched: list[str] | None = None,
        diff: str | None = None,
        previous: list[StageResult] | None = None,
        *,
        retry: bool = False,
        trail_name: str = "",
        tree: Path | None = None,
        on_stage: StageCallback | None = None,
    ) -> Verification:
        """One sandbox run of the worktree (or of `tree`, a candidate's scratch copy), its
        stages in the trail; with `retry`, an environment failure is run once more, in case
        it was a fluke."""
        workspace = self.workspace
        heard = on_stage or self.journal.on_stage(n, trail_name)

        async def once() -> Verification:
            fixed = await self.formatted(n, tree, heard)
            return await examine_tree(
                tree or workspace.root,
                self.verifier,
                baseline=Baseline(
                    repo=workspace.root,
                    rev=workspace.baseline,
                    collected=self.baseline_collected,
                    pins=workspace.pins,
                    tests=self.baseline_tests,
                ),
                touched=touched or [],
                last_diff=diff,
                previous=previous,
                iteration=n + 1 if n < self.config.max_iterations else None,
                max_iterations=self.config.max_iterations,
                on_stage=heard,
                fixed=fixed,
                # Past the baseline (iteration 0) the environment has passed its checks: what
                # fails in it now is the candidate's doing, told to the model.
                after_baseline=n > 0,
            )

        examined = await once()
        if retry and examined.judgement.verdict is Verdict.ENV_FAILURE:
            self.with_packet(n, examined)  # the failed attempt stays in the trail
            examined = await once()
        return examined

    async def formatted(self, n: int, tree: Path | None, on_stage: StageCallback) -> FixRun | None:
        """The fix pass over the worktree (its changes committed on their own, in the trail
        and as an event) or over `tree`, a candidate's scratch copy (changed in place,
        nothing recorded but its stage); None without a fix command."""
        stage = self.verifier.fix
        if stage is None:
            return None
        await on_stage(stage, None)
        fixed = await run_fix(self.verifier, tree or self.workspace.root, self.workspace.pins.files)
        assert fixed is not None
        await on_stage(stage, fixed.stage)
        if tree is not None:
            return fixed
        commit = None
        if fixed.applied:
            message = FORMAT_MESSAGE.format(n=n, max_n=self.config.max_iterations)
            commit = self.workspace.commit(message)
            if commit is not None:
                self.journal.emit(Committed(n=n, sha=commit, message=message))
        self.journal.emit(
            Formatted(
                n=n,
                files=fixed.applied,
                held_back=fixed.held_back,
                refused=fixed.refused,
                truncated=fixed.truncated,
                failed=fixed.failed,
                commit=commit,
            )
        )
        self.journal.json(n, FORMAT_TRAIL, fixed)
        return fixed

    def with_packet(
        self,
        n: int,
        examined: Verification,
        repeat_note: str | None = None,
        notes: Sequence[str] = (),
    ) -> Verification:
        """The verification with its packet rendered, once, and written to the trail."""
        result = packet_for(
            examined,
            cap=self.config.packet_cap,
            model=self.config.model,
            raw=self.config.strategy.feedback == "raw",
            runtime_values=self.config.strategy.runtime_values,
            repeat_note=repeat_note,
            notes=notes,
        )
        self.journal.packet(n, result)
        return result

    def tripped(self, n: int, trip: Trip) -> RunEnded:
        self.journal.trip(n, trip)
        return trip.ending()


def doubtful_paths(current: Verification) -> list[str]:
    """The test files, test infrastructure (an added conftest.py too) and pytest-configuration
    files whose changes made a pass doubtful."""
    paths = [change.path for change in current.changed_tests if change.doubtful]
    paths += [skip.file for skip in current.added_skips]
    return sorted(set(paths))


def env_reason(current: Verification) -> str:
    classification = current.judgement.classification
    return classification.env_cause or classification.primary
