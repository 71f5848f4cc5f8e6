"""A stall answered once instead of ending the run (ARCHITECTURE.md, "Guards and endings"):
the escalation model takes over, and with `restart_on_stall` the code goes back to the
baseline in a commit of its own and the next prompt asks for the wrong assumption first; the
guards then count afresh. Both are `StrategyChanged` events."""

from __future__ import annotations

from dataclasses import dataclass

from engine.edits.instructions import restart_note
from engine.feedback.tree import Verification
from engine.model.types import ModelClient
from engine.project.workspace import Workspace
from engine.run.answers import Answers
from engine.run.checker import IterationChecker
from engine.run.events import Committed, StrategyChanged
from engine.run.guards import FailurePoint, Guards
from engine.run.journal import Journal
from engine.run.outcome import RunConfig

RESTART_MESSAGE = "fixloop[iter {n}]: back to the baseline after a stall"


@dataclass
class ApproachChange:
    """What the loop does when its guards see a stall it may still answer."""

    config: RunConfig
    workspace: Workspace
    answers: Answers
    checker: IterationChecker
    guards: Guards
    journal: Journal
    escalation: ModelClient | None

    async def after_stall(
        self, n: int, why: str, current: Verification
    ) -> tuple[Verification, list[str]]:
        """(what the next prompt is built from, its notes) after a stall at iteration n."""
        self.escalate(n, f"stalled: {why}")
        strategy = self.config.strategy
        if not strategy.restart_on_stall:  # the escalation model starts with a clean slate
            self.start_guards_over(current)
            return current, []
        workspace = self.workspace
        changed = workspace.changed_files(workspace.tip(), base=workspace.baseline)
        edit_format, files = self.config.edit_format, self.config.files
        if not changed:  # the answers changed nothing: no code to put back, none to verify
            reason = f"{why}: the code is still as it was at the start"
            spent = not strategy.keep_asking  # else the run's one restart is still to come
            self.journal.emit(StrategyChanged(n=n, kind="restart", reason=reason, spent=spent))
            self.start_guards_over(current, spent=spent)
            return current, [restart_note(edit_format, files, put_back=False)]
        message = RESTART_MESSAGE.format(n=n)
        if commit := workspace.restore(changed, message):
            self.journal.emit(Committed(n=n, sha=commit, message=message))
        reason = f"{why}: the code is back as it was at the start"
        self.journal.emit(StrategyChanged(n=n, kind="restart", reason=reason))
        restarted = await self.checker.verify(n, retry=True, trail_name="-after-restart")
        self.start_guards_over(restarted)
        return self.checker.with_packet(n, restarted), [restart_note(edit_format, files)]

    def start_guards_over(self, verification: Verification, *, spent: bool = True) -> None:
        """After a change of approach the guards count from `verification` afresh."""
        judgement = verification.judgement
        passed = judgement.tests.passed if judgement.tests else None
        front = FailurePoint.of(verification.packet)
        self.guards.restarted(judgement.signature, passed, spent=spent, front=front)

    def escalate(self, n: int, why: str) -> None:
        """The escalation model answers from here on (once a run)."""
        escalation = self.escalation
        if escalation is None or self.answers.model is escalation:
            return
        self.answers.model = escalation
        self.answers.noop_seen = False  # what the last model did says nothing of this one
        self.journal.emit(StrategyChanged(n=n, kind="escalate", reason=why, model=escalation.model))
