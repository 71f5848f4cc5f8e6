"""The values one iteration's steps return (the reviewed answer, the commit, the check), the
apply-and-commit step, and the iteration's `IterationRecord`, built once from them at its end."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from engine.edits.apply import apply, planned_texts
from engine.edits.proposal import Proposal
from engine.errors import EditFormatError
from engine.feedback.tree import Verification
from engine.model.types import Completion
from engine.project.workspace import Workspace, iteration_message
from engine.run.events import Committed, EditsApplied
from engine.run.guards import RunEnded
from engine.run.journal import Journal
from engine.run.no_change import ONLY_HELD_BACK, held_back_summary, wording
from engine.run.outcome import NO_CHANGE, IterationRecord, verdict_fields


@dataclass(frozen=True)
class Answer:
    """An answer after the gate: the edits to apply, the pinned test files held back and the
    notes for the next prompt; or why it is unusable or rejected (told to the model; either
    costs the iteration)."""

    explanation: str = ""
    proposal: Proposal | None = None
    held_back: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # held-back files, the person's comment
    unusable: EditFormatError | None = None
    rejected: str | None = None  # the person said no: what the model is told
    comment: str = ""  # the person's words, for the record
    ending: RunEnded | None = None  # the gate aborted the run
    # Why it would change no file's code (`unchanged_because`): not applied; worth asking again
    unchanged: str = ""
    idle_answers: int = 0  # answers of this iteration that changed no code (2: it and its re-ask)
    verified: Verification | None = None  # a chosen candidate's verification of its tree


@dataclass(frozen=True)
class Applied:
    """The answer applied: its commit, or no commit (nothing changed, or edits that did not
    apply, told to the model)."""

    touched: list[str] = field(default_factory=list)
    commit: str | None = None
    diff: str = ""
    failed: EditFormatError | None = None
    unchanged: str = ""  # the answer changed no code: why (`unchanged_because`, `ONLY_HELD_BACK`)

    @property
    def only_held_back(self) -> bool:
        """Every edit of the answer was to a pinned test file, all held back."""
        return self.unchanged == ONLY_HELD_BACK

    def notes(self, held_back_notes: list[str]) -> list[str]:
        """What the next prompt says about an answer that made no commit."""
        if self.failed is not None:
            return [str(self.failed), *held_back_notes]
        return [*held_back_notes, wording(self.unchanged).next_note]


def apply_and_commit(
    n: int, answer: Answer, workspace: Workspace, journal: Journal, max_n: int
) -> Applied:
    """The reviewed edits written to the worktree and committed, in the trail."""
    proposal = answer.proposal
    assert proposal is not None
    if answer.unchanged:  # the same code: not written, not committed
        journal.emit(
            EditsApplied(
                n=n,
                files=[],
                held_back=answer.held_back,
                unchanged=True,
                because=answer.unchanged,
            )
        )
        return Applied(unchanged=answer.unchanged)
    if answer.held_back and not proposal.edits:  # every edit was to a pinned test: none left
        journal.emit(
            EditsApplied(
                n=n, files=[], held_back=answer.held_back, unchanged=True, because=ONLY_HELD_BACK
            )
        )
        return Applied(unchanged=ONLY_HELD_BACK)
    try:
        planned = planned_texts(proposal, workspace.root)  # for the commit's subject
        applied = apply(proposal, workspace.root)
    except EditFormatError as exc:
        return Applied(failed=exc)
    journal.emit(EditsApplied(n=n, files=applied.files, held_back=answer.held_back))
    message = iteration_message(n, max_n, proposal.explanation, planned)
    commit = workspace.commit(message) if applied.files else None
    if commit is None:
        return Applied()
    journal.emit(Committed(n=n, sha=commit, message=message))
    diff = workspace.diff(commit)
    journal.text(n, "patch.diff", diff)
    return Applied(applied.files, commit, diff)


@dataclass(frozen=True)
class Checked:
    """A commit verified and judged: what the next packet is built from, or the ending."""

    verification: Verification
    verify_s: float = 0.0
    ending: RunEnded | None = None
    restart: str = ""  # the run stalled and may change its approach: why


@dataclass
class Steps:
    """One iteration's step values, set once each as the steps return."""

    n: int
    started: float = field(default_factory=time.monotonic)
    completions: list[Completion] = field(default_factory=list)  # every answer it asked for
    model_s: float = 0.0
    answer: Answer | None = None
    applied: Applied | None = None
    check: Checked | None = None

    def record(self) -> IterationRecord:
        """The iteration as far as it got (an ending may cut it short)."""
        fields: dict[str, Any] = {"n": self.n, "status": "running"}
        if self.completions:
            usages = [completion.usage for completion in self.completions]
            fields["tokens"] = sum(u.prompt_tokens + u.completion_tokens for u in usages)
            fields["cost_usd"] = sum(u.cost_usd for u in usages)
            fields["model_s"] = self.model_s
        answer, applied = self.answer, self.applied
        problem = (answer.unusable if answer else None) or (applied.failed if applied else None)
        if answer is not None:
            fields["explanation"] = answer.explanation
        if problem is not None:
            fields |= {"status": "format_error", "summary": "; ".join(problem.problems)}
        elif answer is not None and answer.rejected is not None:
            said = answer.comment.strip().splitlines()
            fields |= {
                "status": "rejected",
                "summary": f"rejected by you: {said[0]}" if said else "rejected by you",
            }
        elif applied is not None and applied.commit is None:
            held = answer.held_back if answer and applied.unchanged == ONLY_HELD_BACK else []
            summary = held_back_summary(held) if held else NO_CHANGE
            fields |= {"status": "no_change", "summary": summary}
        elif applied is not None:
            fields["commit"] = applied.commit
        if self.check is not None:
            fields |= verdict_fields(self.check.verification)
            fields["verify_s"] = self.check.verify_s
        fields["duration_s"] = time.monotonic() - self.started
        return IterationRecord(**fields)
