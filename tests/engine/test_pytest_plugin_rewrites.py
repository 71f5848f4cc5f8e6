"""The plugin notices reports the project's own hooks rewrite: real pytest sessions, run as the
verifier runs them, each with a conftest.py that lies in one way, or not at all."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.engine.test_pytest_plugin import Session, copy_project, run_pytest, write_project

FAILING_TEST = """\
def test_sum():
    assert 1 + 1 == 3


def test_fine():
    assert True
"""

MAKEREPORT_FLIP = """\
import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        report.outcome = "passed"
"""

NEW_STYLE_FLIP = """\
import pytest


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    report = yield
    report.outcome = "passed"
    return report
"""

LOGREPORT_FLIP = """\
import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logreport(report):
    if report.failed:
        report.outcome = "passed"
"""

TESTSTATUS_LIE = """\
def pytest_report_teststatus(report, config):
    if report.when == "call" and report.failed:
        return "passed", ".", "PASSED"
"""

STASHING = """\
import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    setattr(item, "report_" + outcome.get_result().when, outcome.get_result())
"""


def session_with(tmp_path: Path, conftest: str, where: str = "conftest.py") -> Session:
    root = write_project(tmp_path, {"tests/test_sum.py": FAILING_TEST, where: conftest})
    return run_pytest(root)


def test_a_makereport_hook_that_flips_a_failure_is_named_with_its_file(tmp_path: Path) -> None:
    session = session_with(tmp_path, MAKEREPORT_FLIP)
    assert session.exit_code == 0  # the lie works on pytest itself
    [rewrite] = session.report.rewritten
    assert rewrite.nodeid == "tests/test_sum.py::test_sum"
    assert rewrite.when == "call"
    assert rewrite.what == "rewritten as passed"
    assert rewrite.hooks == ["pytest_runtest_makereport in conftest.py:4"]


def test_a_new_style_wrapper_in_a_deeper_conftest_is_named(tmp_path: Path) -> None:
    session = session_with(tmp_path, NEW_STYLE_FLIP, where="tests/conftest.py")
    assert session.exit_code == 0
    assert [r.nodeid for r in session.report.rewritten] == ["tests/test_sum.py::test_sum"]
    assert session.report.rewritten[0].hooks == ["pytest_runtest_makereport in tests/conftest.py:4"]


def test_a_logreport_hook_that_flips_a_failure_is_noticed(tmp_path: Path) -> None:
    session = session_with(tmp_path, LOGREPORT_FLIP)
    [rewrite] = session.report.rewritten
    assert rewrite.what == "rewritten as passed"
    assert rewrite.hooks == ["pytest_runtest_logreport in conftest.py:4"]


def test_a_teststatus_hook_that_shows_a_failure_as_passed_is_noticed(tmp_path: Path) -> None:
    session = session_with(tmp_path, TESTSTATUS_LIE)
    assert session.report.counts.failed == 1  # what the report says is still the truth
    [rewrite] = session.report.rewritten
    assert rewrite.what == "shown as passed"
    assert rewrite.hooks == ["pytest_report_teststatus in conftest.py:1"]


def test_a_hook_that_only_keeps_reports_is_not_a_rewrite(tmp_path: Path) -> None:
    session = session_with(tmp_path, STASHING)
    assert session.report.counts.failed == 1
    assert session.report.rewritten == []
    assert "rewritten" not in session.payload


@pytest.mark.parametrize("project", ["xfail_xpass", "all_skipped", "assertion_failure"])
def test_pytests_own_skips_xfails_and_failures_are_no_rewrite(tmp_path: Path, project: str) -> None:
    session = run_pytest(copy_project(project, tmp_path))
    assert session.report.internal_error is None
    assert session.report.rewritten == []
