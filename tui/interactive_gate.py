"""Where the engine thread meets the screen: the interactive Gate, and the messages the
engine's thread posts to the app (events, streamed model text, review requests, the choice
among verified candidates).

The engine runs in a worker thread with its own asyncio loop. Each of the gate's questions
(`review`, `review_pass`, `choose`) posts a request holding a `concurrent.futures.Future` and
awaits it there; the UI resolves the future when the person decides, or fails it with
`RunInterrupted` when the person stops the run to resume it later. Neither side ever blocks the
other.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeVar

from textual.message import Message

from engine.project.paths import worktree_path
from engine.run.guards import RunInterrupted

# The gate is built with the app, before its first frame; the engine's models (events, reviews,
# previews) are imported where the engine's thread first asks or tells it something.
if TYPE_CHECKING:
    from engine.edits.proposal import Proposal
    from engine.run.events import AnswerStreamed, BaseEvent
    from engine.run.gate import CandidateView, Choice, PassReview, Review
    from engine.run.preview import ProposalPreview

Mode = Literal["step", "auto"]
Post = Callable[[Message], object]
T = TypeVar("T")


# -- what the engine thread posts --------------------------------------------------------------


class EngineEvent(Message):
    """One event of the run, in the order the loop emitted it."""

    def __init__(self, event: BaseEvent) -> None:
        super().__init__()
        self.event = event


class ModelText(Message):
    """A piece of one of the model's answers as it streams in: which iteration and candidate,
    the text, and that answer's tokens so far."""

    def __init__(self, piece: AnswerStreamed) -> None:
        super().__init__()
        self.piece = piece


@dataclass(frozen=True)
class LastCheck:
    """The test counts of the verification before a proposal: what the person compares with."""

    n: int  # 0: the project before any edit
    tests: dict[str, int]

    def describe(self) -> str:
        """`last check: 3 passed, 2 failed (iteration 1)`."""
        t = self.tests
        counts = f"{t.get('passed', 0)} passed, {t.get('failed', 0)} failed"
        if t.get("errors"):
            counts += f", {t['errors']} errors"
        if t.get("skipped"):
            counts += f", {t['skipped']} skipped"
        where = "before any edit" if self.n == 0 else f"iteration {self.n}"
        return f"last check: {counts} ({where})"


@dataclass
class ProposalReviewRequest:
    """A proposal waiting for the person: approve, edit, reject with a note, or abort."""

    n: int
    max_n: int
    proposal: Proposal
    held_back: list[str]
    preview: ProposalPreview
    future: Future[Review] = field(default_factory=Future)
    last_check: LastCheck | None = None

    def resolve(self, review: Review) -> bool:
        """Hand the decision to the engine; False if the run no longer waits for it."""
        return _settle(self.future, review)


@dataclass
class PassReviewRequest:
    """A suspicious pass waiting for the person: accept (recorded) or reject."""

    n: int
    reasons: list[str]
    test_diff: str
    future: Future[PassReview] = field(default_factory=Future)

    def resolve(self, review: PassReview) -> bool:
        return _settle(self.future, review)


@dataclass
class CandidatesRequest:
    """An iteration's verified candidates waiting for the person: pick one, edit one, or
    abort. `best` is the ranking's choice; `previews` hold each candidate's files, to edit."""

    n: int
    max_n: int
    candidates: list[CandidateView]
    best: Choice
    previews: dict[int, ProposalPreview] = field(default_factory=dict)
    future: Future[Choice] = field(default_factory=Future)

    def resolve(self, choice: Choice) -> bool:
        return _settle(self.future, choice)


Request = ProposalReviewRequest | PassReviewRequest | CandidatesRequest


def _settle(future: Future[T], value: T) -> bool:
    """Hand a decision to the engine; False if the run no longer waits for it."""
    if future.done():
        return False
    try:
        future.set_result(value)
    except Exception:  # cancelled or resolved by the engine thread in the meantime
        return False
    return True


class Held(Message):
    """The loop stopped before iteration n because the person paused it."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.n = n


class ReviewAsked(Message):
    def __init__(self, request: ProposalReviewRequest) -> None:
        super().__init__()
        self.request = request


class PassReviewAsked(Message):
    def __init__(self, request: PassReviewRequest) -> None:
        super().__init__()
        self.request = request


class CandidatesAsked(Message):
    def __init__(self, request: CandidatesRequest) -> None:
        super().__init__()
        self.request = request


# -- the engine side -----------------------------------------------------------------------------


class UiSink:
    """An EventSink (and the loop's `on_model_text`) that posts to the app, never waiting."""

    def __init__(self, post: Post) -> None:
        self._post = post

    def emit(self, event: BaseEvent) -> None:
        self._post(EngineEvent(event))

    def model_text(self, piece: AnswerStreamed) -> None:
        self._post(ModelText(piece))


class InteractiveGate:
    """engine.run.gate.Gate for a person at the screen; also an EventSink, to learn the worktree.

    `mode` is read by the engine thread at each proposal and set by the UI: in `step` every
    proposal, and every choice among candidates, waits for the person; in `auto` proposals are
    approved, the ranking's best candidate is taken, and only a suspicious pass stops the run.
    """

    def __init__(self, post: Post, mode: Mode = "step") -> None:
        self.mode: Mode = mode
        self._post = post
        self._lock = threading.Lock()
        self._pending: list[Request] = []
        self._closed: str | None = None
        self._root: Path | None = None
        self._baseline = ""
        self._max_n = 0
        self._paused: Future[None] | None = None  # set while paused; done on resume
        self._holding = False  # the loop waits in `between` right now
        self._stopped: str | None = None  # the person stopped the run to resume it later
        self._last_check: LastCheck | None = None

    # -- EventSink ----------------------------------------------------------------------------

    def emit(self, event: BaseEvent) -> None:
        from engine.run.events import PacketReady, RunStarted

        if isinstance(event, RunStarted):
            self._root = worktree_path(Path(event.project), event.run_id)
            self._baseline = event.baseline
            self._max_n = event.max_iterations
        elif isinstance(event, PacketReady) and event.tests:
            self._last_check = LastCheck(event.n, dict(event.tests))

    # -- Gate -----------------------------------------------------------------------------------

    @property
    def approval(self) -> Mode:
        return self.mode

    async def review(self, n: int, proposal: Proposal, held_back: list[str]) -> Review:
        from engine.run.gate import Review

        self._raise_if_stopped()
        if self._closed is not None:
            return Review(decision="abort", note=self._closed, by="person")
        if self.mode == "auto":
            return Review(decision="approve", note="auto mode")
        preview = self._preview(proposal, held_back)
        request = ProposalReviewRequest(
            n, self._max_n, proposal, list(held_back), preview, last_check=self._last_check
        )
        if not self._ask(request, ReviewAsked(request)):
            return Review(decision="abort", note=self._closed or "the app closed")
        return await asyncio.wrap_future(request.future)

    async def review_pass(self, n: int, reasons: list[str]) -> PassReview:
        from engine.run.gate import PassReview
        from engine.run.preview import pass_test_diff

        self._raise_if_stopped()
        if self._closed is not None:
            return PassReview(accept=False, note=self._closed, by="person")
        test_diff = ""
        if self._root is not None and self._baseline:
            try:
                test_diff = pass_test_diff(self._root, self._baseline)
            except Exception as exc:  # the diff only illustrates the reasons
                test_diff = f"(the test diff could not be read: {exc})"
        request = PassReviewRequest(n, list(reasons), test_diff)
        if not self._ask(request, PassReviewAsked(request)):
            return PassReview(accept=False, note=self._closed or "the app closed")
        return await asyncio.wrap_future(request.future)

    async def choose(self, n: int, candidates: list[CandidateView], best: Choice) -> Choice:
        from engine.run.gate import Choice

        self._raise_if_stopped()
        if self._closed is not None:
            return Choice(decision="abort", why=self._closed, by="person")
        if self.mode == "auto" or not candidates:
            return best
        previews = {c.k: self._preview(c.proposal) for c in candidates}
        request = CandidatesRequest(n, self._max_n, list(candidates), best, previews)
        if not self._ask(request, CandidatesAsked(request)):
            return Choice(decision="abort", why=self._closed or "the app closed", by="person")
        return await asyncio.wrap_future(request.future)

    async def between(self, n: int) -> str | None:
        with self._lock:
            closed, paused = self._closed, self._paused
        if closed is None and paused is not None:
            self._holding = True
            self._post(Held(n))
            try:
                await asyncio.wrap_future(paused)
            finally:
                self._holding = False
        self._raise_if_stopped()
        return self._closed

    # -- the UI side ----------------------------------------------------------------------------

    @property
    def paused(self) -> bool:
        return self._paused is not None

    def pause(self) -> None:
        """Hold the loop before its next iteration (the step under way finishes)."""
        with self._lock:
            if self._paused is None and self._closed is None:
                self._paused = Future()

    def resume(self) -> None:
        with self._lock:
            paused, self._paused = self._paused, None
        if paused is not None and not paused.done():
            paused.set_result(None)

    @property
    def waiting(self) -> bool:
        """Whether the engine waits for the person right now (a review, or a pause)."""
        with self._lock:
            return self._holding or any(not r.future.done() for r in self._pending)

    def close(self, note: str) -> None:
        """Answer every open and future review with abort / reject (the person aborted)."""
        from engine.run.gate import Choice, PassReview, Review

        with self._lock:
            self._closed = note
            pending, self._pending = self._pending, []
            paused, self._paused = self._paused, None
        if paused is not None and not paused.done():
            paused.set_result(None)  # a paused loop wakes up to end as aborted
        for request in pending:
            if isinstance(request, ProposalReviewRequest):
                request.resolve(Review(decision="abort", note=note, by="person"))
            elif isinstance(request, CandidatesRequest):
                request.resolve(Choice(decision="abort", why=note, by="person"))
            else:
                request.resolve(PassReview(accept=False, note=note, by="person"))

    def stop(self, note: str = "stopped by you") -> None:
        """Stop the run to resume it later: every open and future review, and a paused loop,
        raise `RunInterrupted` on the engine's side (the loop records it and writes no ending)."""
        with self._lock:
            if self._closed is not None or self._stopped is not None:
                return
            self._stopped = note
            pending, self._pending = self._pending, []
            paused, self._paused = self._paused, None
        if paused is not None and not paused.done():
            paused.set_result(None)  # `between` wakes up and raises
        for request in pending:
            with contextlib.suppress(InvalidStateError):  # decided in the meantime
                request.future.set_exception(RunInterrupted(note))

    @property
    def stopped(self) -> bool:
        return self._stopped is not None

    def _raise_if_stopped(self) -> None:
        if self._stopped is not None:
            raise RunInterrupted(self._stopped)

    def _preview(self, proposal: Proposal, held_back: list[str] | None = None) -> ProposalPreview:
        from engine.run.preview import ProposalPreview, preview_proposal

        if self._root is None:
            return ProposalPreview(files=[], diff="", error="the worktree is unknown")
        return preview_proposal(proposal, self._root, held_back or [])

    def _ask(self, request: Request, message: Message) -> bool:
        with self._lock:
            if self._stopped is not None:
                raise RunInterrupted(self._stopped)
            if self._closed is not None:
                return False
            self._pending = [r for r in self._pending if not r.future.done()] + [request]
        return self._post(message) is not False
