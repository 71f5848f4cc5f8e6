"""Where a person (or a policy) decides what happens to a proposal and to a doubtful pass; and
the rule for pinned tests (ARCHITECTURE.md, "Honest green"): edits to test files that existed
at the baseline, and edits that change test infrastructure (new files too), are held back,
file by file, unless allowed."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict

from engine.edits.apply import planned_texts
from engine.edits.proposal import Edit, Proposal
from engine.edits.safe_paths import resolved
from engine.errors import EditFormatError
from engine.project.pins import (
    TestPins,
    infrastructure_digest,
    is_pinned,
    is_test_infrastructure,
    pinned_role,
)
from engine.run.events import CandidateChosen, ReviewResolved
from engine.verify.results import TestCounts


class Review(BaseModel):
    model_config = ConfigDict(frozen=True)

    # reject: not applied, the model is asked again (the iteration is spent) with `comment`
    decision: Literal["approve", "edit", "reject", "abort"]
    proposal: Proposal | None = None  # the edited proposal, for "edit"
    allow_test_edits: bool = False  # the person let this proposal's test edits through
    note: str = ""  # why, for the audit trail ("edited by you", "auto mode")
    comment: str = ""  # the person's words to the model, sent with the next prompt
    by: Literal["person", "policy"] = "policy"  # who decided, for the audit trail
    # "edit" of part of the proposal: the hunks the person dropped, named as the model hears
    dropped: list[str] = []

    def resolved(self, n: int) -> ReviewResolved:
        """The review as the audit trail keeps it."""
        decision, note, comment, by = self.decision, self.note, self.comment, self.by
        return ReviewResolved(
            n=n,
            kind="proposal",
            decision=decision,
            note=note,
            comment=comment,
            by=by,
            dropped=self.dropped,
        )


class PassReview(BaseModel):
    model_config = ConfigDict(frozen=True)

    accept: bool
    note: str = ""
    # On a rejection: go on repairing (the model is told why) instead of ending the run.
    keep_repairing: bool = False
    comment: str = ""  # the person's words to the model, with a rejection
    by: Literal["person", "policy"] = "policy"


class CandidateView(BaseModel):
    """One verified candidate of an iteration, as the person compares them."""

    model_config = ConfigDict(frozen=True)

    k: int  # its number in the iteration's trail (iterations/NN/candidates/K/)
    verdict: str
    tests: TestCounts | None = None
    summary: str = ""  # the verification's one line
    explanation: str = ""
    files: list[str] = []
    diff: str = ""  # against the iteration's start
    suspicious: list[str] = []  # why its pass is doubtful: never chosen automatically
    proposal: Proposal  # what committing it applies (pinned test files already held back)


class Choice(BaseModel):
    """Which candidate is committed: `pick` it as it is, `edit` it (`proposal` is the
    person's version), `reject` them all (none is applied, the model is asked again with
    `comment`, as after a rejected review), or `abort` the run."""

    model_config = ConfigDict(frozen=True)

    decision: Literal["pick", "edit", "reject", "abort"]
    k: int = 0
    proposal: Proposal | None = None  # the edited candidate, for "edit"
    why: str = ""  # for the audit trail: "the best: verified ok", "chosen by you"
    comment: str = ""  # the person's words to the model, sent with the next prompt
    by: Literal["person", "policy"] = "policy"
    # "edit" of part of the candidate: the hunks the person dropped, named as the model hears
    dropped: list[str] = []

    def chosen(self, n: int) -> CandidateChosen:
        return CandidateChosen(n=n, k=self.k, why=self.why, by=self.by, dropped=self.dropped)

    def rejected(self, n: int) -> ReviewResolved:
        """A rejection of every candidate, as the audit trail keeps a rejected review (and as
        `resume` counts the iteration spent)."""
        return ReviewResolved(
            n=n, kind="proposal", decision="reject", note=self.why, comment=self.comment, by=self.by
        )


class Gate(Protocol):
    """Reviews every proposal before it is applied, and every suspicious pass."""

    @property
    def approval(self) -> Literal["step", "auto"]:
        """Who approves proposals now, for the audit trail: the person (step) or no one."""
        ...

    async def review(self, n: int, proposal: Proposal, held_back: list[str]) -> Review: ...

    async def review_pass(self, n: int, reasons: list[str]) -> PassReview: ...

    async def choose(self, n: int, candidates: list[CandidateView], best: Choice) -> Choice:
        """With several verified candidates (`--candidates N`): which one to commit; `best`
        is the ranking's choice (engine/run/candidates.py)."""
        ...

    async def between(self, n: int) -> str | None:
        """Before iteration n asks the model: wait while the run is paused; a note ends the
        run there as aborted."""
        ...


class PolicyGate:
    """Headless: approve every proposal; accept a suspicious pass only when told to."""

    def __init__(self, *, accept_suspicious: bool = False) -> None:
        self.accept_suspicious = accept_suspicious

    @property
    def approval(self) -> Literal["step", "auto"]:
        return "auto"  # every proposal is approved here, whatever the settings say

    async def review(self, n: int, proposal: Proposal, held_back: list[str]) -> Review:
        return Review(decision="approve")

    async def review_pass(self, n: int, reasons: list[str]) -> PassReview:
        if self.accept_suspicious:
            return PassReview(accept=True, note="accepted by --accept-suspicious")
        return PassReview(accept=False, note="headless runs never accept a suspicious pass")

    async def choose(self, n: int, candidates: list[CandidateView], best: Choice) -> Choice:
        return best

    async def between(self, n: int) -> str | None:
        return None


class TestEditSplit(BaseModel):
    """A proposal split by the pinned-tests rule."""

    model_config = ConfigDict(frozen=True)
    __test__ = False

    kept: Proposal
    held_back: list[str]  # pinned test files the proposal would change
    repeated: list[str]  # pinned test files re-sent unchanged (ignored without comment)


def split_test_edits(proposal: Proposal, pins: TestPins, root: Path) -> TestEditSplit:
    """Separate edits to pinned test files and to test infrastructure from the rest of the
    proposal. Test infrastructure (a conftest.py, pytest's or Jest's configuration, go.mod's
    replace lines: `is_test_infrastructure`) is held back when the proposal changes its test
    part, new files included: a model may not decide how its tests run or what they report.
    A file of which only a part configures tests (pyproject.toml) keeps an edit elsewhere."""
    infrastructure = changed_infrastructure(proposal, root)
    kept: list[Edit] = []
    held: dict[str, None] = {}
    repeated: dict[str, None] = {}
    for edit in proposal.edits:
        if edit.path in infrastructure:
            held[edit.path] = None
        elif is_test_infrastructure(edit.path) and not is_pinned(edit.path):
            kept.append(edit)  # its test part stays as it is: the rest is the project's
        elif edit.path not in pins.files:
            kept.append(edit)
        elif edit.content is not None and same_text(root / edit.path, edit.content):
            repeated[edit.path] = None
        else:
            held[edit.path] = None
    return TestEditSplit(
        kept=proposal.model_copy(update={"edits": kept}),
        held_back=list(held),
        repeated=[path for path in repeated if path not in held],
    )


def changed_infrastructure(proposal: Proposal, root: Path) -> set[str]:
    """The test infrastructure files whose test part the proposal's edits would change, by the
    path the edits name (or the file it resolves to, through a symlink). A path whose edits
    cannot be applied is not counted here: applying the proposal refuses all of it."""
    changed: set[str] = set()
    paths = dict.fromkeys(edit.path for edit in proposal.edits)
    resolved_root = root.resolve()
    for path in paths:
        edits = [edit for edit in proposal.edits if edit.path == path]
        try:
            [(_, before, after)] = planned_texts(
                proposal.model_copy(update={"edits": edits}), resolved_root
            )
            _, target = resolved(resolved_root, path)
        except (EditFormatError, ValueError):
            continue
        real = target.relative_to(resolved_root).as_posix()
        for named in dict.fromkeys((path, real)):
            if is_test_infrastructure(named) and _part(named, before) != _part(named, after):
                changed.add(path)
    return changed


def _part(path: str, text: str | None) -> str | None:
    if text is None:
        return None
    data = text.encode("utf-8", "surrogateescape")
    return _digest_or_none(path, data)


def _digest_or_none(path: str, data: bytes) -> str | None:
    """What pins a test infrastructure file: its whole text when it is a test file (a
    conftest.py), else its test part."""
    if is_pinned(path):
        return data.decode("utf-8", "surrogateescape").replace("\r\n", "\n").rstrip("\n")
    return infrastructure_digest(path, data)


def apply_pinning(
    proposal: Proposal, split: TestEditSplit, *, allowed: bool
) -> tuple[Proposal, list[str]]:
    """(what to apply, the pinned test files held back); with test edits allowed, only the
    unchanged repeats are dropped."""
    if not allowed:
        return split.kept, split.held_back
    repeated = set(split.repeated)
    edits = [edit for edit in proposal.edits if edit.path not in repeated]
    return proposal.model_copy(update={"edits": edits}), []


def same_text(path: Path, content: str) -> bool:
    try:
        current = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    return current.replace("\r\n", "\n").rstrip("\n") == content.replace("\r\n", "\n").rstrip("\n")


def rejected_pass_note(reasons: list[str], comment: str = "", reverted: Sequence[str] = ()) -> str:
    """What the model hears after the person rejected a doubtful pass."""
    listed = "; ".join(reasons)
    parts = [f"The tests passed, but the pass was rejected as not honest: {listed}."]
    if reverted:
        parts.append(f"Your changes to {', '.join(reverted)} were reverted.")
    if comment:
        parts.append(f"The reviewer said: {_sentence(comment)}")
    parts.append(
        "Make the original tests pass by fixing the code, without skipping or editing tests."
    )
    return " ".join(parts)


def rejected_proposal_note(files: list[str], comment: str) -> str:
    """What the model hears after the person rejected its proposal (nothing was applied)."""
    changed = f" (to {', '.join(files)})" if files else ""
    said = f" The reviewer said: {_sentence(comment)}" if comment.strip() else ""
    return f"Your last proposal{changed} was rejected by the reviewer and NOT applied.{said}"


def rejected_candidates_note(count: int, comment: str) -> str:
    """What the model hears after the person rejected all its candidates (none was applied)."""
    answers = "answer was" if count == 1 else f"{count} answers were"
    said = f" The reviewer said: {_sentence(comment)}" if comment.strip() else ""
    return f"None of your last {answers} applied: the reviewer rejected them all.{said}"


def reviewer_note(comment: str) -> str:
    """A comment the person sent with an approved proposal."""
    return f"The reviewer approved your last proposal and said: {_sentence(comment)}"


def partly_applied_note(dropped: list[str], comment: str) -> str:
    """What the model hears after the person kept only some hunks of its proposal."""
    said = f" The reviewer said: {_sentence(comment)}" if comment.strip() else ""
    return (
        "The reviewer applied only part of your last proposal and dropped your changes to "
        f"{'; '.join(dropped)}: those lines stay as they were.{said}"
    )


def _sentence(text: str) -> str:
    text = text.strip()
    return text if text.endswith((".", "!", "?")) else f"{text}."


def held_back_note(held_back: list[str]) -> str:
    files = ", ".join(held_back)
    roles = [f"{path}: {role}" for path in held_back if (role := pinned_role(path))]
    why = f" ({'; '.join(roles)})" if roles else ""
    return (
        f"Your edits to {files} were NOT applied: tests are pinned and define what is correct"
        f"{why}. Fix the code under test instead."
    )
