"""Failing tests first: which stages a narrowed run keeps and narrows (pure), and the plugin
deselecting every test but the ones it is given (real pytest sessions on the host)."""

from __future__ import annotations

import json
from pathlib import Path

from engine.feedback.tree import Verification, stands
from engine.verify.classify import Classification, ErrorClass
from engine.verify.focus import MAX_FOCUS_TESTS, narrowed_note, narrowing
from engine.verify.results import (
    StageFocus,
    StageKind,
    StageResult,
    TestCase,
    TestCounts,
    TestReport,
)
from engine.verify.stages import Stage
from engine.verify.verdict import Judgement, Verdict
from engine.verify.verdict import test_counts as counted
from tests.engine.test_pytest_plugin import run_pytest

TESTS = Stage(name="tests", kind=StageKind.TESTS, cmd="python -m pytest -q")
LINT = Stage(name="lint", kind=StageKind.LINT, cmd="ruff check .")
GO = Stage(name="go", kind=StageKind.TESTS, cmd="go test ./...")


def stage_of(
    failing: list[str], collected: int = 10, *, focus: StageFocus | None = None, **report: object
) -> StageResult:
    cases = [TestCase(nodeid=nodeid, outcome="failed") for nodeid in failing]
    counts = TestCounts(collected=collected, passed=collected - len(failing), failed=len(failing))
    return StageResult(
        name="tests",
        kind=StageKind.TESTS,
        cmd=TESTS.cmd,
        exit_code=1 if failing else 0,
        duration_ms=1,
        report=TestReport(exitstatus=1 if failing else 0, counts=counts, tests=cases, **report),
        focus=focus,
    )


def lint_result(exit_code: int) -> StageResult:
    return StageResult(
        name="lint", kind=StageKind.LINT, cmd=LINT.cmd, exit_code=exit_code, duration_ms=1
    )


def test_a_failing_test_stage_narrows_to_its_failing_tests_and_a_passed_stage_is_left_out() -> None:
    plan = narrowing([LINT, TESTS], [lint_result(0), stage_of(["t.py::a", "t.py::b"])])
    assert plan == {"tests": StageFocus(tests=["t.py::a", "t.py::b"], carried_passed=8)}


def test_a_failed_stage_that_cannot_narrow_runs_whole_beside_the_narrowed_one() -> None:
    plan = narrowing([LINT, TESTS], [lint_result(1), stage_of(["t.py::a"])])
    assert plan == {"lint": None, "tests": StageFocus(tests=["t.py::a"], carried_passed=9)}


def test_nothing_to_narrow_means_no_narrowed_run() -> None:
    go = StageResult(name="go", kind=StageKind.TESTS, cmd=GO.cmd, exit_code=1, duration_ms=1)
    assert narrowing([LINT, GO], [lint_result(1), go]) is None
    assert narrowing([TESTS], None) is None
    assert narrowing([TESTS], [stage_of([])]) is None


def test_a_report_that_does_not_name_every_failure_runs_whole() -> None:
    for report in ({"truncated": True}, {"not_run": 3, "stopped": "time"}):
        assert narrowing([TESTS], [stage_of(["t.py::a"], **report)]) is None
    assert narrowing([TESTS], [stage_of(["t.py::a"], collected=1)]) is None  # all failed
    many = [f"t.py::test_{k}" for k in range(MAX_FOCUS_TESTS + 1)]
    assert narrowing([TESTS], [stage_of(many, collected=1000)]) is None


def test_a_changed_command_runs_whole() -> None:
    other = Stage(name="tests", kind=StageKind.TESTS, cmd="python -m pytest -x")
    assert narrowing([other], [stage_of(["t.py::a"])]) is None


def test_after_a_narrowed_run_the_stages_it_left_out_stay_out_and_counts_carry_over() -> None:
    narrowed = stage_of(
        ["t.py::a"], collected=2, focus=StageFocus(tests=["t.py::a", "t.py::b"], carried_passed=8)
    )
    plan = narrowing([LINT, TESTS], [narrowed])
    assert plan == {"tests": StageFocus(tests=["t.py::a"], carried_passed=9)}
    counts = counted([narrowed])
    assert counts is not None
    assert (counts.collected, counts.passed, counts.failed) == (10, 9, 1)
    one_left = stage_of(
        ["t.py::a"], collected=1, focus=StageFocus(tests=["t.py::a"], carried_passed=9)
    )
    assert narrowing([TESTS], [one_left]) == {
        "tests": StageFocus(tests=["t.py::a"], carried_passed=9)
    }
    note = narrowed_note([narrowed])
    assert note is not None
    assert "only the 2 tests that failed last time; the other 8" in note


def test_a_narrowed_session_that_ran_more_than_it_was_given_does_not_stand() -> None:
    def verification(collected: int) -> Verification:
        stage = stage_of(
            ["t.py::a"], collected=collected, focus=StageFocus(tests=["t.py::a"], carried_passed=9)
        )
        judgement = Judgement(
            verdict=Verdict.FAILING,
            classification=Classification(error_class=ErrorClass.LOGIC, primary="t.py::a"),
        )
        return Verification(judgement=judgement, stages=[stage])

    assert stands(verification(1))
    assert not stands(verification(10))


PROJECT = {
    "test_m.py": (
        "import pytest\n\n\ndef test_one():\n    assert 1\n\n\ndef test_two():\n    assert 0\n\n\n"
        "@pytest.mark.parametrize('x', [1, 2, 3])\ndef test_param(x):\n    assert x != 2\n"
    ),
}


def write(root: Path) -> Path:
    for name, text in PROJECT.items():
        (root / name).write_text(text)
    return root


def test_the_plugin_runs_only_the_tests_it_is_given(tmp_path: Path) -> None:
    ids = ["test_m.py::test_two", "test_m.py::test_param[2]", "test_m.py::gone"]
    session = run_pytest(write(tmp_path), extra_env={"FIXLOOP_ONLY_TESTS": json.dumps(ids)})
    report = session.report
    assert session.exit_code == 1
    assert sorted(report.nodeids) == sorted(ids[:2])
    assert (report.counts.collected, report.counts.failed, report.counts.passed) == (2, 2, 0)


def test_the_plugin_narrows_in_xdist_workers_too(tmp_path: Path) -> None:
    ids = ["test_m.py::test_one"]
    session = run_pytest(
        write(tmp_path), "-n", "2", extra_env={"FIXLOOP_ONLY_TESTS": json.dumps(ids)}
    )
    assert session.exit_code == 0, session.stdout
    assert "1 passed" in session.stdout
    assert "failed" not in session.stdout


def test_without_the_report_nonce_the_list_is_ignored(tmp_path: Path) -> None:
    ids = json.dumps(["test_m.py::test_one"])
    session = run_pytest(write(tmp_path), nonce="", extra_env={"FIXLOOP_ONLY_TESTS": ids})
    assert "2 failed, 3 passed" in session.stdout
