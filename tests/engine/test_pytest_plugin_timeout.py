"""The plugin's per-test time limit: a test that loops forever is stopped at its line after
FIXLOOP_TEST_TIMEOUT seconds, reported as a TestTimeout with where it was and the loop around
it, and the rest of the session still runs and reports (issue 21)."""

from __future__ import annotations

from pathlib import Path

from engine.feedback.distill import distill
from engine.verify.classify import Classification, ErrorClass
from engine.verify.execute import per_test_limit, stage_env
from engine.verify.results import StageKind, StageResult
from engine.verify.stages import Stage
from tests.engine.test_pytest_plugin import run_pytest, write_project

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


def test_the_limit_is_never_more_than_half_the_stage() -> None:
    assert per_test_limit(20, 300) == 20
    assert per_test_limit(20, 30) == 15
    assert per_test_limit(0, 300) is None
    assert per_test_limit(None, 300) is None
    pytest_stage = Stage(name="tests", kind=StageKind.TESTS, cmd="python -m pytest -q")
    assert stage_env(pytest_stage, "n:", 300, 20)["FIXLOOP_TEST_TIMEOUT"] == "20"
    assert "FIXLOOP_TEST_TIMEOUT" not in stage_env(pytest_stage, "n:", 300, None)
    go_stage = Stage(name="tests", kind=StageKind.TESTS, cmd="go test ./...")
    assert stage_env(go_stage, "n:", 300, 20) == {}  # other runners: the stage's limit only
