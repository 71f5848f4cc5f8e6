"""The interactive gate seen from the engine's side: what an awaiting review, a paused loop
and every later review get when the person stops the run (`RunInterrupted`, so the loop records a
resumable stop), the last check a review request carries, and the choice among candidates.

The engine side runs in its own thread with its own asyncio loop, as in the app.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

import pytest
from textual.message import Message

from engine.edits.proposal import Edit, Proposal
from engine.project.paths import worktree_path
from engine.run.events import PacketReady, RunStarted
from engine.run.gate import CandidateView, Choice, Review
from engine.run.guards import RunInterrupted
from tui.interactive_gate import CandidatesAsked, Held, InteractiveGate, LastCheck, ReviewAsked

T = TypeVar("T")
WAIT_S = 10.0
PROPOSAL = Proposal(
    explanation="use true division",
    edits=[Edit(path="calc.py", content="x = 1 / 2\n")],
    format="json",
)


class Posted:
    """What the gate posts to the app, and an event per kind to wait on."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.arrived = threading.Event()

    def __call__(self, message: Message) -> bool:
        self.messages.append(message)
        self.arrived.set()
        return True

    def wait_for(self, kind: type[Message]) -> Any:
        assert self.arrived.wait(WAIT_S), f"no {kind.__name__} posted"
        found = [m for m in self.messages if isinstance(m, kind)]
        assert found, f"posted {self.messages}, no {kind.__name__}"
        return found[-1]


def on_engine_thread(call: Callable[[], Awaitable[T]]) -> Future[T]:
    """Run `call()` on a thread with its own event loop, as the app runs the engine."""
    done: Future[T] = Future()

    def main() -> None:
        try:
            done.set_result(asyncio.run(_call(call)))
        except BaseException as exc:
            done.set_exception(exc)

    threading.Thread(target=main, daemon=True).start()
    return done


async def _call(call: Callable[[], Awaitable[T]]) -> T:
    return await call()


def test_stop_raises_run_stopped_in_the_review_the_engine_awaits() -> None:
    posted = Posted()
    gate = InteractiveGate(posted)
    engine = on_engine_thread(lambda: gate.review(1, PROPOSAL, []))
    asked = posted.wait_for(ReviewAsked)
    assert gate.waiting
    gate.stop("stopped by you")
    with pytest.raises(RunInterrupted) as stopped:
        engine.result(timeout=WAIT_S)
    assert stopped.value.reason == "stopped by you"
    assert not asked.request.resolve(Review(decision="approve", by="person"))


def test_after_a_stop_every_review_and_between_raise_run_stopped() -> None:
    gate = InteractiveGate(Posted(), mode="auto")
    gate.stop("stopped by you")
    for call in (
        lambda: gate.review(2, PROPOSAL, []),
        lambda: gate.review_pass(2, ["a skip was added"]),
        lambda: gate.between(3),
    ):
        with pytest.raises(RunInterrupted):
            on_engine_thread(call).result(timeout=WAIT_S)


def test_stop_wakes_a_paused_loop_with_run_stopped() -> None:
    posted = Posted()
    gate = InteractiveGate(posted)
    gate.pause()
    engine = on_engine_thread(lambda: gate.between(2))
    assert posted.wait_for(Held).n == 2
    gate.stop()
    with pytest.raises(RunInterrupted):
        engine.result(timeout=WAIT_S)


def test_an_abort_after_a_stop_changes_nothing_and_a_stop_after_an_abort_neither() -> None:
    stopped = InteractiveGate(Posted())
    stopped.stop()
    stopped.close("aborted by you")
    with pytest.raises(RunInterrupted):
        on_engine_thread(lambda: stopped.review(1, PROPOSAL, [])).result(timeout=WAIT_S)
    aborted = InteractiveGate(Posted())
    aborted.close("aborted by you")
    aborted.stop()
    review = on_engine_thread(lambda: aborted.review(1, PROPOSAL, [])).result(timeout=WAIT_S)
    assert (review.decision, review.note) == ("abort", "aborted by you")


def test_a_review_request_carries_the_last_check_with_tests() -> None:
    posted = Posted()
    gate = InteractiveGate(posted)
    counts = {"collected": 5, "passed": 3, "failed": 2, "errors": 0, "skipped": 0}
    gate.emit(PacketReady(n=1, verdict="failing", error_class="logic", tests=counts))
    # An ending without test counts is no check to compare with.
    gate.emit(PacketReady(n=2, verdict="env_failure", error_class="env", tests={}))
    engine = on_engine_thread(lambda: gate.review(3, PROPOSAL, []))
    request = posted.wait_for(ReviewAsked).request
    assert request.last_check == LastCheck(1, counts)
    assert request.last_check.describe() == "last check: 3 passed, 2 failed (iteration 1)"
    request.resolve(Review(decision="approve", by="person"))
    assert engine.result(timeout=WAIT_S).decision == "approve"


def test_the_check_before_any_edit_is_named_so() -> None:
    check = LastCheck(0, {"passed": 0, "failed": 1, "errors": 2})
    assert check.describe() == "last check: 0 passed, 1 failed, 2 errors (before any edit)"


# -- the choice among verified candidates ----------------------------------------------------


def candidates_view(tmp_path: Path) -> tuple[InteractiveGate, Posted, list[CandidateView]]:
    """A step-mode gate that knows its run's worktree (from RunStarted), and two candidates."""
    posted = Posted()
    gate = InteractiveGate(posted, mode="step")
    gate.emit(
        RunStarted(
            run_id="r1", task="t", project=str(tmp_path), model="m", sandbox="s", max_iterations=4
        )
    )
    root = worktree_path(tmp_path, "r1")
    root.mkdir(parents=True)
    (root / "calc.py").write_text("x = 1 // 2\n")
    other = Proposal(
        explanation="a half", edits=[Edit(path="calc.py", content="x = 0.5\n")], format="json"
    )
    views = [
        CandidateView(k=1, verdict="ok", proposal=PROPOSAL),
        CandidateView(k=2, verdict="ok", proposal=other),
    ]
    return gate, posted, views


BEST = Choice(decision="pick", k=1, why="the best: verified ok")


def test_in_step_mode_the_person_chooses_among_the_candidates(tmp_path: Path) -> None:
    gate, posted, views = candidates_view(tmp_path)
    engine = on_engine_thread(lambda: gate.choose(1, views, BEST))
    request = posted.wait_for(CandidatesAsked).request
    assert (request.n, request.max_n, request.best) == (1, 4, BEST)
    # Each candidate's files as it would leave them, to edit; the worktree is not touched.
    assert request.previews[2].files[0].after == "x = 0.5\n"
    assert (tmp_path / ".fixloop" / "worktrees" / "r1" / "calc.py").read_text() == "x = 1 // 2\n"
    assert gate.waiting
    picked = Choice(decision="pick", k=2, why="chosen by you", by="person")
    assert request.resolve(picked)
    assert engine.result(timeout=WAIT_S) == picked


def test_in_auto_mode_the_rankings_best_is_taken_without_asking(tmp_path: Path) -> None:
    gate, posted, views = candidates_view(tmp_path)
    gate.mode = "auto"
    assert on_engine_thread(lambda: gate.choose(1, views, BEST)).result(timeout=WAIT_S) == BEST
    assert not any(isinstance(m, CandidatesAsked) for m in posted.messages)


def test_an_abort_answers_the_open_choice_with_abort(tmp_path: Path) -> None:
    gate, posted, views = candidates_view(tmp_path)
    engine = on_engine_thread(lambda: gate.choose(1, views, BEST))
    posted.wait_for(CandidatesAsked)
    gate.close("aborted by you")
    choice = engine.result(timeout=WAIT_S)
    assert (choice.decision, choice.why, choice.by) == ("abort", "aborted by you", "person")


def test_a_stop_raises_run_stopped_in_the_choice_the_engine_awaits(tmp_path: Path) -> None:
    gate, posted, views = candidates_view(tmp_path)
    engine = on_engine_thread(lambda: gate.choose(1, views, BEST))
    posted.wait_for(CandidatesAsked)
    gate.stop()
    with pytest.raises(RunInterrupted):
        engine.result(timeout=WAIT_S)
