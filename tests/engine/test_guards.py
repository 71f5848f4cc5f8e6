"""The guards' decisions on their own, as the loop asks them (the loop's endings are
covered end to end in tests/e2e/test_headless.py)."""

from __future__ import annotations

import asyncio

from engine.feedback.packet import Failure, RepairPacket
from engine.run.guards import (
    STOP,
    TERMINATED,
    FailurePoint,
    Guards,
    RunStatus,
    Trip,
    stop_message,
    stop_of,
)


def test_the_same_error_after_an_edit_to_the_same_file_stalls_after_the_grace() -> None:
    guards = Guards(no_progress_limit=5)
    guards.start("E1", passed=1)
    assert guards.after_edit("E1", ["a.py"], passed=2) is None  # grace: the first edit
    trip = guards.after_edit("E1", ["a.py"], passed=3)
    assert trip is not None
    assert (trip.guard, trip.status) == ("stalled", RunStatus.STALLED)
    assert trip.detail == "the same error 3 times in a row"


def test_a_new_error_resets_the_stall_count() -> None:
    guards = Guards(no_progress_limit=5)
    guards.start("E1", passed=1)
    assert guards.after_edit("E2", ["a.py"], passed=2) is None
    assert guards.after_edit("E3", ["a.py"], passed=3) is None
    assert guards.repeat_note() is None


def test_two_answers_in_a_row_that_change_nothing_stall() -> None:
    guards = Guards(no_progress_limit=5)
    guards.start("E1", passed=1)
    assert guards.after_no_change() is None
    trip = guards.after_no_change()
    assert trip is not None
    assert (trip.guard, trip.detail) == ("stalled", "2 answers in a row changed no code")


def test_an_edit_between_idle_answers_resets_their_count() -> None:
    guards = Guards(no_progress_limit=5)
    guards.start("E1", passed=1)
    assert guards.after_no_change() is None
    assert guards.after_edit("E2", ["a.py"], passed=2) is None
    assert guards.after_no_change() is None


def test_no_rise_in_passed_tests_for_the_limit_is_no_progress() -> None:
    guards = Guards(no_progress_limit=2)
    guards.start("E1", passed=3)
    assert guards.after_edit("E2", ["a.py"], passed=3) is None
    trip = guards.after_edit("E3", ["b.py"], passed=2)
    assert trip is not None
    assert (trip.guard, trip.status) == ("no_progress", RunStatus.NO_PROGRESS)


def failed_at(line: int, exception: str | None = None, test: str = "t.py::test_one") -> Failure:
    return Failure(test=test, file="t.py", line=line, exception=exception)


def front(*failures: Failure) -> FailurePoint | None:
    packet = RepairPacket(summary="1 failed", error_class="assertion", failures=list(failures))
    return FailurePoint.of(packet)


def test_a_first_failure_further_down_its_test_is_progress() -> None:
    guards = Guards(no_progress_limit=2)
    guards.start("E1", passed=0, front=front(failed_at(6)))
    assert guards.after_edit("E2", ["a.py"], passed=0, front=front(failed_at(7))) is None
    assert guards.after_edit("E3", ["a.py"], passed=0, front=front(failed_at(8))) is None
    assert guards.after_edit("E4", ["a.py"], passed=0, front=front(failed_at(9))) is None


def test_a_first_failure_stuck_on_its_line_is_no_progress() -> None:
    guards = Guards(no_progress_limit=2)
    guards.start("E1", passed=0, front=front(failed_at(6)))
    assert guards.after_edit("E2", ["a.py"], passed=0, front=front(failed_at(6))) is None
    trip = guards.after_edit("E3", ["a.py"], passed=0, front=front(failed_at(6)))
    assert trip is not None
    assert (trip.guard, trip.status) == ("no_progress", RunStatus.NO_PROGRESS)


def test_a_first_failure_moving_back_up_its_test_is_no_progress() -> None:
    guards = Guards(no_progress_limit=2)
    guards.start("E1", passed=0, front=front(failed_at(8)))
    assert guards.after_edit("E2", ["a.py"], passed=0, front=front(failed_at(7))) is None
    assert guards.after_edit("E3", ["a.py"], passed=0, front=front(failed_at(6))) is not None


def test_an_assertion_where_an_exception_was_raised_is_progress() -> None:
    guards = Guards(no_progress_limit=1)
    guards.start("E1", passed=0, front=front(failed_at(6, "TypeError: unsupported operand")))
    assert guards.after_edit("E2", ["a.py"], passed=0, front=front(failed_at(6))) is None
    assert guards.after_edit("E3", ["a.py"], passed=0, front=front(failed_at(6))) is not None


def test_another_test_failing_first_is_progress_but_two_taking_turns_are_not() -> None:
    one, two = failed_at(6, test="t.py::test_one"), failed_at(12, test="t.py::test_two")
    guards = Guards(no_progress_limit=2)
    guards.start("E1", passed=3, front=front(one))
    assert guards.after_edit("E2", ["a.py"], passed=3, front=front(two)) is None
    assert guards.after_edit("E3", ["a.py"], passed=3, front=front(one)) is None
    assert guards.after_edit("E4", ["a.py"], passed=3, front=front(two)) is not None


def test_another_test_failing_first_while_a_passing_one_broke_is_no_progress() -> None:
    one, two = failed_at(6, test="t.py::test_one"), failed_at(12, test="t.py::test_two")
    guards = Guards(no_progress_limit=1)
    guards.start("E1", passed=3, front=front(one))
    assert guards.after_edit("E2", ["a.py"], passed=2, front=front(two)) is not None


def test_a_collection_error_is_no_test_that_got_further() -> None:
    broken = Failure(test="collecting t.py", kind="collection error", exception="SyntaxError")
    assert front(broken) is None
    assert front() is None
    guards = Guards(no_progress_limit=1)
    guards.start("E1", passed=0, front=front(failed_at(6)))
    assert guards.after_edit("E2", ["a.py"], passed=0, front=front(broken)) is not None


def test_a_stall_changes_the_approach_only_with_a_restart_and_an_iteration_left() -> None:
    stalled = Trip("stalled", RunStatus.STALLED, "the same error 2 times in a row")
    guards = Guards(no_progress_limit=5, restarts=1, last_iteration=3)
    assert guards.changes_approach(stalled, 2)
    assert not guards.changes_approach(stalled, 3)  # nothing left to try it in
    assert not guards.changes_approach(None, 2)
    assert not guards.changes_approach(Trip("no_progress", RunStatus.NO_PROGRESS, "x"), 2)
    assert not Guards(no_progress_limit=5, restarts=0).changes_approach(stalled, 1)


def test_an_answer_and_its_reask_that_change_nothing_are_two_in_a_row() -> None:
    guards = Guards(no_progress_limit=5)
    trip = guards.after_no_change(2)
    assert trip is not None
    assert trip.detail == "2 answers in a row changed no code"


def test_a_cancellation_with_a_stop_message_is_the_persons_stop_with_its_reason() -> None:
    said = stop_of(asyncio.CancelledError(stop_message("stopped: the terminal closed")))
    plain = stop_of(asyncio.CancelledError(STOP))

    assert said is not None
    assert said.reason == "stopped: the terminal closed"
    assert plain is not None
    assert plain.reason == "stopped by you"
    assert stop_of(asyncio.CancelledError()) is None  # a plain cancel is an abort
    assert stop_of(asyncio.CancelledError(TERMINATED)) is None
