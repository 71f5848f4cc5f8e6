"""The plugin's per-test time limit: a test that loops forever is stopped at its line after
FIXLOOP_TEST_TIMEOUT seconds, reported as a TestTimeout with where it was and the loop around
it, and the rest of the session still runs and reports. Later tests get a shorter
limit once one has timed out, and the session keeps to the stage's budget: with several
hangs it still reports, and tests it had no time for make it fail, never pass."""

from __future__ import annotations

from pathlib import Path

from engine.feedback.distill import distill, summarise
from engine.verify.classify import Classification, ErrorClass, classify
from engine.verify.execute import PLUGIN_DIR, per_test_limit, stage_env
from engine.verify.results import StageKind, StageResult
from engine.verify.stages import Stage
from engine.verify.time_needs import time_needs
from engine.verify.verdict import Verdict, judge
from tests.engine.test_pytest_plugin import Session, run_pytest, write_project

LOOPING = """\
def bitcount(n):
    count = 0
    while n:
        n &= n - 2
        count += 1
    return count


def slow_but_fine(seconds):
    import time
    time.sleep(seconds)
    return True
"""

TESTS = """\
import pytest
from bits import bitcount, slow_but_fine


def test_zero():
    assert bitcount(0) == 0


def test_loops():
    assert bitcount(3) == 2


def test_wrong():
    assert bitcount(0) == 1


@pytest.mark.timeout(5)
def test_marked_slow():
    assert slow_but_fine(1.5)


def test_last():
    assert True
"""


def project(tmp_path: Path) -> Path:
    root = write_project(tmp_path, {"bits.py": LOOPING, "tests/test_bits.py": TESTS})
    (root / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\ntestpaths = ["tests"]\npythonpath = ["."]\n'
    )
    return root


def test_a_looping_test_is_stopped_at_its_line_and_the_rest_still_report(tmp_path: Path) -> None:
    session = run_pytest(project(tmp_path), extra_env={"FIXLOOP_TEST_TIMEOUT": "1"})
    report = session.report
    assert (report.counts.collected, report.counts.passed, report.counts.failed) == (5, 3, 2)
    looping = session.test("test_loops")
    assert looping.exception_type == "TestTimeout"
    assert looping.exception_message is not None
    assert looping.exception_message.startswith("did not finish in 1 s; it was at line ")
    assert "in bits.py, in bitcount (loop at lines 3-5)" in looping.exception_message
    assert looping.frame is not None
    assert (looping.frame.file, looping.frame.function) == ("bits.py", "bitcount")
    assert 3 <= looping.frame.line <= 5
    wrong = session.test("test_wrong")
    assert (wrong.expected, wrong.actual) == ("1", "0")


def test_a_marked_test_gets_its_own_limit(tmp_path: Path) -> None:
    # 1.5 s of sleep under a 1 s default: only its `timeout(5)` marker lets it pass.
    session = run_pytest(project(tmp_path), extra_env={"FIXLOOP_TEST_TIMEOUT": "1"})
    assert not [case for case in session.report.tests if case.nodeid.endswith("marked_slow")]
    (tmp_path / "strict").mkdir()
    strict = run_pytest(
        project(tmp_path / "strict"), "--strict-markers", extra_env={"FIXLOOP_TEST_TIMEOUT": "1"}
    )
    assert strict.report.counts.collected == 5  # the marker is registered, not an error


def test_the_timeout_is_the_packets_first_failure_named_so(tmp_path: Path) -> None:
    session = run_pytest(project(tmp_path), extra_env={"FIXLOOP_TEST_TIMEOUT": "1"})
    stage = StageResult(
        name="tests",
        kind=StageKind.TESTS,
        cmd="pytest",
        exit_code=1,
        duration_ms=1,
        report=session.report,
    )
    packet = distill(
        [stage],
        Classification(error_class=ErrorClass.LOGIC, primary="x"),
        iteration=1,
        max_iterations=4,
    )
    first = packet.failures[0]
    assert first.kind == "timeout"
    assert first.test.endswith("::test_loops")


def test_a_slow_tests_need_is_three_times_its_baseline_time_and_a_second() -> None:
    durations = {"a": 1.2, "quick": 0.5, "huge": 1e9, "nan": float("nan"), "x" * 501: 9.0}
    # 0.5 s needs 2.5 s, under the 4 s a fifth of 20 s leaves: the plain limit covers it.
    assert time_needs(durations, 20, 300) == {"huge": 300.0, "a": 4.6}
    assert time_needs(durations, None, 300) == {}


def test_needs_reach_the_plugin_as_json_in_its_environment() -> None:
    stage = Stage(name="tests", kind=StageKind.TESTS, cmd="python -m pytest -q")
    env = stage_env(stage, "n:", 300, 20, {"tests/test_a.py::test_x": 4.6})
    assert env["FIXLOOP_TEST_NEEDS"] == '{"tests/test_a.py::test_x":4.6}'
    assert "FIXLOOP_TEST_NEEDS" not in stage_env(stage, "n:", 300, None, {"t": 4.6})


def test_the_limit_is_never_more_than_half_the_stage() -> None:
    assert per_test_limit(20, 300) == 20
    assert per_test_limit(20, 30) == 15
    assert per_test_limit(0, 300) is None
    assert per_test_limit(None, 300) is None
    pytest_stage = Stage(name="tests", kind=StageKind.TESTS, cmd="python -m pytest -q")
    assert stage_env(pytest_stage, "n:", 300, 20)["FIXLOOP_TEST_TIMEOUT"] == "20"
    assert stage_env(pytest_stage, "n:", 300, 20)["FIXLOOP_STAGE_TIMEOUT"] == "300"
    assert "FIXLOOP_TEST_TIMEOUT" not in stage_env(pytest_stage, "n:", 300, None)
    assert "FIXLOOP_STAGE_TIMEOUT" not in stage_env(pytest_stage, "n:", 300, None)
    go_stage = Stage(name="tests", kind=StageKind.TESTS, cmd="go test ./...")
    assert stage_env(go_stage, "n:", 300, 20) == {}  # other runners: the stage's limit only


HANGS = """\
def bitcount(n):
    count = 0
    while n:
        n ^= n - 1
        count += 1
    return count
"""

HANGING_TESTS = """\
import pytest
from bits import bitcount


@pytest.mark.parametrize("n, expected", [(127, 7), (128, 1), (3005, 9)])
def test_bitcount(n, expected):
    assert bitcount(n) == expected
"""

SLOW_TESTS = """\
import time
import pytest


@pytest.mark.parametrize("case", range(6))
def test_slow_but_passing(case):
    time.sleep(0.8)
"""


def test_after_one_timeout_later_tests_get_a_shorter_limit(tmp_path: Path) -> None:
    root = write_project(tmp_path, {"bits.py": HANGS, "test_bits.py": HANGING_TESTS})
    session = run_pytest(root, extra_env={"FIXLOOP_TEST_TIMEOUT": "2"})
    report = session.report
    assert (report.counts.collected, report.counts.failed) == (3, 3)
    messages = [case.exception_message or "" for case in report.tests]
    assert messages[0].startswith("did not finish in 2 s; it was at line ")
    for later in messages[1:]:
        assert later.startswith("did not finish in 1 s (shortened after an earlier test timed out)")
    assert report.stopped is None
    assert report.not_run == 0


def test_a_verification_whose_failures_are_all_timeouts_is_classified_timeout(
    tmp_path: Path,
) -> None:
    root = write_project(tmp_path, {"bits.py": HANGS, "test_bits.py": HANGING_TESTS})
    session = run_pytest(root, extra_env={"FIXLOOP_TEST_TIMEOUT": "1"})
    stage = StageResult(
        name="tests",
        kind=StageKind.TESTS,
        cmd="pytest",
        exit_code=session.exit_code,
        duration_ms=1,
        report=session.report,
    )
    result = classify([stage], project_modules=frozenset({"bits"}), after_baseline=True)
    assert result.error_class is ErrorClass.TIMEOUT
    assert result.primary.startswith(
        "test_bits.py::test_bitcount[127-7]: TestTimeout: did not finish in 1 s; it was at line"
    )


def test_tests_the_budget_has_no_time_for_are_not_run_and_the_session_fails(
    tmp_path: Path,
) -> None:
    # A 5 s stage keeps 2 s for the report: ~3 s for six tests of 0.8 s each.
    root = write_project(tmp_path, {"test_slow.py": SLOW_TESTS})
    env = {"FIXLOOP_TEST_TIMEOUT": "2.5", "FIXLOOP_STAGE_TIMEOUT": "5"}
    session = run_pytest(root, extra_env=env)
    report = session.report
    assert session.exit_code == 1  # never 0: not every collected test ran
    assert report.exitstatus == 1
    assert report.counts.failed == 0
    assert report.counts.collected == 6
    assert report.not_run >= 1
    assert report.counts.passed + report.not_run == 6
    assert report.stopped == (
        f"{report.not_run} of 6 tests not run: the stage's 5 s were nearly spent"
    )
    stage = StageResult(
        name="tests", kind=StageKind.TESTS, cmd="pytest", exit_code=1, duration_ms=1, report=report
    )
    assert classify([stage], project_modules=frozenset()) == Classification(
        error_class=ErrorClass.TIMEOUT, primary=report.stopped
    )
    judgement = judge([stage], Classification(error_class=ErrorClass.LOGIC, primary="x"))
    assert judgement.verdict is Verdict.FAILING
    assert judgement.reasons == [f"stage 'tests': {report.stopped}"]
    packet = distill([stage], Classification(error_class=ErrorClass.LOGIC, primary="x"))
    assert [(f.kind, f.exception) for f in packet.failures] == [("timeout", report.stopped)]
    assert summarise([stage]).endswith(f"{report.not_run} not run (time nearly up)")


def test_several_hangs_end_in_a_report_inside_the_stage_budget(tmp_path: Path) -> None:
    # Three hangs under a 4 s limit would take 12 s; a 6 s stage's budget is 4 s.
    root = write_project(tmp_path, {"bits.py": HANGS, "test_bits.py": HANGING_TESTS})
    env = {"FIXLOOP_TEST_TIMEOUT": "4", "FIXLOOP_STAGE_TIMEOUT": "6"}
    session = run_pytest(root, extra_env=env)
    report = session.report
    assert report.exitstatus == 1
    assert report.counts.failed >= 1
    assert report.counts.failed + report.not_run == 3
    first = report.tests[0]
    assert first.exception_type == "TestTimeout"
    assert "in bits.py, in bitcount (loop at lines 3-5)" in (first.exception_message or "")


def test_the_budget_and_the_shortened_limit_as_values(monkeypatch: object) -> None:
    import sys

    sys.path.insert(0, str(PLUGIN_DIR))
    try:
        from fixloop_pytest_timeout import (  # type: ignore[import-not-found]
            TimeBudget,
            after_a_timeout,
            limit_for_test,
        )
    finally:
        sys.path.remove(str(PLUGIN_DIR))
    import time

    assert after_a_timeout(20) == 4
    assert after_a_timeout(2) == 1
    assert after_a_timeout(0.5) == 0.5  # never longer than the test's own
    none = TimeBudget(None)
    assert none.remaining() is None
    assert not none.spent()
    assert limit_for_test(20, none, 0) == (20, "")
    assert limit_for_test(20, none, 1) == (4, "shortened after an earlier test timed out")
    assert limit_for_test(None, none, 3) == (None, "")
    assert limit_for_test(5, none, 1, marked=True) == (5, "")  # its marker is its own word
    fresh = TimeBudget(100, started=time.monotonic())  # 85 s usable
    assert limit_for_test(20, fresh, 0) == (20, "")
    late = TimeBudget(100, started=time.monotonic() - 80)  # ~5 s left
    limit, why = limit_for_test(20, late, 0)
    assert limit is not None
    assert 4 < limit < 5.1
    assert why == "the stage's time was nearly up"
    spent = TimeBudget(10, started=time.monotonic() - 9)
    assert spent.spent()
    assert limit_for_test(20, spent, 0) == (1.0, "the stage's time was nearly up")


# --- a test that keeps the alarm from stopping it ----------------------------------------

DEAF_TESTS = """\
import signal


def test_first():
    assert True


def test_ignores_the_alarm():
    signal.signal(signal.SIGALRM, signal.SIG_IGN)
    while True:
        pass


def test_after():
    assert True
"""

BLOCKING = """\
import signal
import time


def test_blocks_the_alarm():
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
    while True:
        time.sleep(0.05)
"""

CATCHING = """\
def test_catches_the_timeout():
    while True:
        try:
            while True:
                pass
        except BaseException:
            pass
"""

C_LOOP = """\
import collections
import itertools


def test_spins_in_c():
    collections.deque(itertools.repeat(0), maxlen=0)
"""


def run_deaf(tmp_path: Path, tests: str) -> tuple[float, Session]:
    import time

    root = write_project(tmp_path, {"test_deaf.py": tests})
    started = time.monotonic()
    session = run_pytest(
        root, extra_env={"FIXLOOP_TEST_TIMEOUT": "1", "FIXLOOP_STAGE_TIMEOUT": "60"}
    )
    return time.monotonic() - started, session


def test_a_test_that_ignores_the_alarm_is_stopped_by_the_watchdog(tmp_path: Path) -> None:
    took, session = run_deaf(tmp_path, DEAF_TESTS)
    assert took < 10  # the limit (1 s) and the grace (2 s), not the stage's 60 s
    report = session.report
    assert session.exit_code == 1
    assert report.exitstatus == 1
    assert (report.counts.passed, report.counts.failed) == (1, 1)
    ignoring = session.test("test_ignores_the_alarm")
    assert ignoring.exception_type == "TestTimeout"
    message = ignoring.exception_message or ""
    assert message.startswith("did not finish in 1 s and did not stop at its limit")
    assert message.endswith("in test_deaf.py, in test_ignores_the_alarm (loop at lines 10-11)")
    assert report.not_run == 1
    assert report.stopped == (
        "1 of 3 tests not run: test_deaf.py::test_ignores_the_alarm did not stop at its time limit"
    )


def test_a_test_that_blocks_the_alarm_still_times_out_in_seconds(tmp_path: Path) -> None:
    took, session = run_deaf(tmp_path, BLOCKING)
    assert took < 10
    assert session.test("test_blocks_the_alarm").exception_type == "TestTimeout"


def test_a_test_that_catches_its_timeout_is_stopped_by_the_watchdog(tmp_path: Path) -> None:
    took, session = run_deaf(tmp_path, CATCHING)
    assert took < 10
    case = session.test("test_catches_the_timeout")
    assert case.exception_type == "TestTimeout"
    assert "and did not stop at its limit" in case.exception_message


def test_a_test_spinning_in_c_is_ended_with_its_stack_dumped(tmp_path: Path) -> None:
    took, session = run_deaf(tmp_path, C_LOOP)
    assert took < 15
    assert session.exit_code != 0
    assert "Timeout (" in session.stderr
    assert 'test_deaf.py", line 6 in test_spins_in_c' in session.stderr


# --- limits from the suite's own times ----------------------------------------------------------

TIMED_TESTS = """\
import time


def test_quick():
    assert True


def test_takes_a_while():
    time.sleep(0.8)
"""


def test_the_report_records_the_call_time_of_each_slow_test(tmp_path: Path) -> None:
    root = write_project(tmp_path, {"test_timed.py": TIMED_TESTS})
    report = run_pytest(root, extra_env={"FIXLOOP_TEST_TIMEOUT": "20"}).report
    assert report.durations["test_timed.py::test_takes_a_while"] >= 0.8


SLOWER_THAN_THE_LIMIT = """\
import time


def test_slow_but_fine():
    time.sleep(1.5)
"""


def test_a_test_given_its_baseline_need_runs_past_the_plain_limit(tmp_path: Path) -> None:
    root = write_project(tmp_path, {"test_slow.py": SLOWER_THAN_THE_LIMIT})
    needs = '{"test_slow.py::test_slow_but_fine": 5}'
    env = {"FIXLOOP_TEST_TIMEOUT": "1", "FIXLOOP_TEST_NEEDS": needs}
    session = run_pytest(root, extra_env=env)
    assert session.exit_code == 0, session.stderr
    assert session.report.counts.passed == 1


HANG_THEN_SLOW = {
    "bits.py": HANGS,
    "test_a_hangs.py": "from bits import bitcount\n\n\ndef test_hangs():\n"
    "    assert bitcount(3) == 2\n",
    "test_b_slow.py": SLOWER_THAN_THE_LIMIT,
}


def test_after_a_timeout_a_later_test_keeps_its_baseline_need(tmp_path: Path) -> None:
    # The hang shortens later limits to 1 s; the slow test's need of 4 s stands.
    root = write_project(tmp_path, HANG_THEN_SLOW)
    needs = '{"test_b_slow.py::test_slow_but_fine": 4}'
    env = {"FIXLOOP_TEST_TIMEOUT": "2", "FIXLOOP_TEST_NEEDS": needs}
    report = run_pytest(root, extra_env=env).report
    assert (report.counts.passed, report.counts.failed) == (1, 1)
    assert [case.nodeid for case in report.tests] == ["test_a_hangs.py::test_hangs"]
