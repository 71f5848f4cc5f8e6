"""The in-sandbox pytest plugin, run on the host: real pytest sessions on the fixture projects.

Each project is copied to a temporary directory and run the way the verifier runs it
(`python -m pytest -p fixloop_pytest` with the plugin on PYTHONPATH), and the report line
is read back from stderr and validated as `TestReport`.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from engine.verify.results import TestCase, TestReport

REPO = Path(__file__).resolve().parents[2]
PLUGIN_DIR = REPO / "engine" / "verify" / "plugin"
PROJECTS = REPO / "tests" / "fixtures" / "projects"
MAX_REPORT_BYTES = 256 * 1024


@dataclass(frozen=True)
class Session:
    """One pytest run with the plugin: how it ended and the report line it left on stderr."""

    exit_code: int
    stdout: str
    stderr: str
    nonce: str

    @property
    def report_line(self) -> str | None:
        """The last stderr line starting with the nonce, as the host reads it."""
        lines = [line for line in self.stderr.split("\n") if line.startswith(self.nonce)]
        return lines[-1] if lines else None

    @property
    def payload(self) -> dict[str, object]:
        assert self.report_line is not None, f"no report line; stderr:\n{self.stderr}"
        decoded: dict[str, object] = json.loads(self.report_line[len(self.nonce) :])
        return decoded

    @property
    def report(self) -> TestReport:
        return TestReport.model_validate(self.payload)

    def test(self, name: str) -> TestCase:
        return next(case for case in self.report.tests if case.nodeid.endswith(f"::{name}"))


def run_pytest(
    workdir: Path, *args: str, nonce: str | None = None, extra_env: dict[str, str] | None = None
) -> Session:
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(PLUGIN_DIR), **(extra_env or {})}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    nonce = nonce if nonce is not None else f"FIXLOOP-{secrets.token_hex(8)}:"
    if nonce:
        env["FIXLOOP_REPORT_NONCE"] = nonce
    argv = [sys.executable, "-m", "pytest", "-p", "fixloop_pytest", "-p", "no:cacheprovider"]
    done = subprocess.run(
        [*argv, *args], cwd=workdir, env=env, capture_output=True, text=True, timeout=120
    )
    return Session(done.returncode, done.stdout, done.stderr, nonce)


def copy_project(name: str, destination: Path) -> Path:
    workdir = destination / name
    shutil.copytree(PROJECTS / name, workdir)
    return workdir


def line_of(path: Path, text: str) -> int:
    """The 1-based number of the first line of `path` containing `text`."""
    lines = path.read_text().splitlines()
    return next(number for number, line in enumerate(lines, 1) if text in line)


@pytest.fixture(scope="module")
def project_session(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Session]:
    """Run a fixture project once per module; tests read different parts of its report."""
    sessions: dict[str, Session] = {}

    def run(name: str) -> Session:
        if name not in sessions:
            workdir = copy_project(name, tmp_path_factory.mktemp("projects"))
            sessions[name] = run_pytest(workdir)
        return sessions[name]

    return run


def write_project(root: Path, files: dict[str, str]) -> Path:
    """A throwaway project for behaviours no fixture project shows."""
    (root / "pyproject.toml").write_text('[tool.pytest.ini_options]\ntestpaths = ["tests"]\n')
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


# --- a wrong value -------------------------------------------------------------------


def test_wrong_value_reports_expected_and_actual(project_session: Callable[[str], Session]) -> None:
    case = project_session("assertion_failure").test("test_mean_of_four_values")
    assert case.outcome == "failed"
    assert (case.expected, case.actual) == ("2.5", "2")
    assert case.exception_type == "AssertionError"
    assert case.explanation is not None
    assert case.explanation.startswith("assert 2 == 2.5")


def test_an_ordering_assert_keeps_its_operator_the_right_side_is_a_bound(tmp_path: Path) -> None:
    project = write_project(
        tmp_path,
        {
            "tests/test_bounds.py": (
                "def test_close():\n    assert abs(6.0) < 1e-4\n\n\n"
                "def test_member():\n    assert 3 in [1, 2]\n\n\n"
                "def test_equal():\n    assert 2 == 3\n"
            )
        },
    )
    session = run_pytest(project)
    close, member, equal = (session.test(f"test_{n}") for n in ("close", "member", "equal"))
    assert (close.actual, close.comparison, close.expected) == ("6.0", "<", "0.0001")
    assert (member.actual, member.comparison, member.expected) == ("3", "in", "[1, 2]")
    assert (equal.actual, equal.comparison, equal.expected) == ("2", None, "3")


def test_failure_names_the_assert_line_file_and_definition(
    project_session: Callable[[str], Session],
) -> None:
    case = project_session("assertion_failure").test("test_mean_of_four_values")
    test_file = PROJECTS / "assertion_failure" / "tests" / "test_stats.py"
    assert case.assertion == "assert mean([1, 2, 3, 4]) == 2.5"
    assert case.file == "tests/test_stats.py"
    assert case.line == line_of(test_file, "def test_mean_of_four_values")
    assert case.test_frame is not None
    assert case.test_frame.line == line_of(test_file, "assert mean([1, 2, 3, 4]) == 2.5")
    assert case.frame == case.test_frame


def test_counts_and_exit_status_match_pytest(project_session: Callable[[str], Session]) -> None:
    session = project_session("assertion_failure")
    report = session.report
    assert session.exit_code == report.exitstatus == 1
    assert report.counts.model_dump() == {
        "collected": 2,
        "passed": 1,
        "failed": 1,
        "errors": 0,
        "skipped": 0,
        "xfailed": 0,
        "xpassed": 0,
    }
    assert report.nodeids == [
        "tests/test_stats.py::test_mean_of_one_value",
        "tests/test_stats.py::test_mean_of_four_values",
    ]
    assert [case.nodeid for case in report.tests] == [
        "tests/test_stats.py::test_mean_of_four_values"
    ]
    assert not report.truncated


# --- exceptions ------------------------------------------------------------------------


def test_exception_frame_is_the_raising_line_in_the_package(
    project_session: Callable[[str], Session],
) -> None:
    case = project_session("exception_in_code").test("test_summary_of_empty_order")
    package = PROJECTS / "exception_in_code" / "orders" / "__init__.py"
    assert case.exception_type == "ZeroDivisionError"
    assert case.exception_message == "division by zero"
    assert case.frame is not None
    assert (case.frame.file, case.frame.function) == ("orders/__init__.py", "average")
    assert case.frame.line == line_of(package, "return sum(values) / len(values)")
    assert case.frame.source == "return sum(values) / len(values)"


def test_exception_test_frame_is_the_call_in_the_test(
    project_session: Callable[[str], Session],
) -> None:
    case = project_session("exception_in_code").test("test_summary_of_empty_order")
    test_file = PROJECTS / "exception_in_code" / "tests" / "test_orders.py"
    assert case.test_frame is not None
    assert case.test_frame.file == "tests/test_orders.py"
    assert case.test_frame.line == line_of(test_file, "summary = summarize([])")
    assert case.assertion == "summary = summarize([])"
    assert (case.expected, case.actual) == (None, None)  # no comparison failed


def test_wrong_arity_is_a_type_error_in_the_calling_line(
    project_session: Callable[[str], Session],
) -> None:
    case = project_session("arity_error").test("test_receipt_lines")
    assert case.exception_type == "TypeError"
    assert case.exception_message == "format_price() takes 1 positional argument but 2 were given"
    assert case.frame is not None
    assert case.frame.file == "receipts/__init__.py"
    assert "format_price(name, amount)" in case.frame.source


# --- collection ------------------------------------------------------------------------


def test_import_error_in_a_test_module_is_a_collection_error(
    project_session: Callable[[str], Session],
) -> None:
    report = project_session("collection_error").report
    [error] = report.collection_errors
    assert error.nodeid == "tests/test_perimeter.py"
    assert error.exception_type == "ImportError"
    assert error.exception_message is not None
    assert "cannot import name 'perimeter'" in error.exception_message
    assert error.frame is not None
    assert (error.frame.file, error.frame.line) == ("tests/test_perimeter.py", 1)
    assert "ImportError while importing test module" in error.text
    assert (report.exitstatus, report.counts.errors, report.counts.collected) == (2, 1, 1)


def test_syntax_error_frame_is_the_broken_line(project_session: Callable[[str], Session]) -> None:
    [error] = project_session("syntax_error").report.collection_errors
    assert error.exception_type == "SyntaxError"
    assert error.frame is not None
    assert (error.frame.file, error.frame.line) == ("calc/ops.py", 1)
    assert error.frame.source == "def add(a: int, b: int) -> int"


def test_missing_third_party_module_names_module_and_import_line(
    project_session: Callable[[str], Session],
) -> None:
    [error] = project_session("missing_module").report.collection_errors
    assert error.exception_type == "ModuleNotFoundError"
    assert error.exception_message == "No module named 'yaml_fixloop_missing'"
    assert error.frame is not None
    assert (error.frame.file, error.frame.source) == (
        "settings/__init__.py",
        "import yaml_fixloop_missing",
    )


def test_no_tests_is_exit_5_with_nothing_collected(
    project_session: Callable[[str], Session],
) -> None:
    session = project_session("no_tests")
    report = session.report
    assert session.exit_code == report.exitstatus == 5
    assert report.counts.collected == 0
    assert report.nodeids == []


# --- skips, xfail, parametrize ----------------------------------------------------------


def test_skips_are_counted_with_their_reasons(project_session: Callable[[str], Session]) -> None:
    report = project_session("all_skipped").report
    assert report.exitstatus == 0
    assert (report.counts.collected, report.counts.skipped, report.counts.passed) == (3, 3, 0)
    assert {case.nodeid.split("::")[1]: case.skip_reason for case in report.tests} == {
        "test_new_api": "waiting for the new API",
        "test_timing": "flaky on slow machines",
        "test_python2_only": "only for Python 2",
    }
    assert {case.outcome for case in report.tests} == {"skipped"}


def test_xfail_xpass_and_strict_xpass_are_counted_like_pytest(
    project_session: Callable[[str], Session],
) -> None:
    session = project_session("xfail_xpass")
    counts = session.report.counts
    assert (counts.xfailed, counts.xpassed, counts.failed, counts.passed) == (1, 1, 1, 0)
    assert session.report.exitstatus == 1
    assert session.test("test_rounding").outcome == "xfailed"
    assert session.test("test_rounding").skip_reason == "rounding bug #12"
    assert session.test("test_fixed_since").outcome == "xpassed"
    strict = session.test("test_strict_expectation")
    assert strict.outcome == "failed"
    assert strict.explanation == "[XPASS(strict)] must still fail"


def test_parametrized_failures_are_separate_with_their_values(
    project_session: Callable[[str], Session],
) -> None:
    report = project_session("parametrized").report
    failures = {case.nodeid: (case.expected, case.actual) for case in report.tests}
    assert failures == {
        "tests/test_double.py::test_double[3-6]": ("6", "9"),
        "tests/test_double.py::test_double[4-8]": ("8", "16"),
    }
    assert (report.counts.passed, report.counts.failed) == (2, 2)


# --- size cap ---------------------------------------------------------------------------


def test_many_failures_are_all_counted_within_the_size_cap(
    project_session: Callable[[str], Session],
) -> None:
    session = project_session("many_failures")
    assert session.report_line is not None
    assert len(session.report_line.encode()) < MAX_REPORT_BYTES
    report = session.report
    assert (report.counts.failed, report.counts.passed) == (120, 4)
    assert len(report.tests) == 120
    assert len(report.nodeids) == 124
    assert report.truncated


def test_many_failures_keep_full_details_for_the_first_fifty(
    project_session: Callable[[str], Session],
) -> None:
    tests = project_session("many_failures").report.tests
    assert all(case.explanation and case.expected for case in tests[:50])
    assert not any(case.explanation or case.expected for case in tests[50:])
    # the one-line form still says what failed, with a distinct value each time
    assert tests[-1].exception_type == "AssertionError"
    assert len({case.exception_message for case in tests}) == 120


# --- behaviours no fixture project shows --------------------------------------------------


def test_teardown_error_after_a_pass_counts_as_passed_and_error(tmp_path: Path) -> None:
    project = write_project(
        tmp_path,
        {
            "tests/test_teardown.py": (
                "import pytest\n\n\n"
                "@pytest.fixture\n"
                "def resource():\n"
                "    yield 1\n"
                "    raise RuntimeError('cleanup failed')\n\n\n"
                "def test_uses_resource(resource):\n"
                "    assert resource == 1\n"
            )
        },
    )
    session = run_pytest(project)
    counts = session.report.counts
    assert (counts.passed, counts.errors, counts.failed) == (1, 1, 0)
    case = session.test("test_uses_resource")
    assert (case.outcome, case.when, case.exception_type) == ("error", "teardown", "RuntimeError")


def test_module_level_skip_counts_as_a_skipped_module(tmp_path: Path) -> None:
    project = write_project(
        tmp_path,
        {
            "tests/test_optional.py": (
                "import pytest\n\n"
                "pytest.importorskip('no_such_module_for_fixloop')\n\n\n"
                "def test_never_collected():\n"
                "    pass\n"
            )
        },
    )
    report = run_pytest(project).report
    assert report.counts.skipped == 1
    [case] = report.tests
    assert (case.nodeid, case.outcome) == ("tests/test_optional.py", "skipped")
    assert case.skip_reason is not None
    assert "no_such_module_for_fixloop" in case.skip_reason


def test_captured_output_of_a_failing_test_is_kept(tmp_path: Path) -> None:
    project = write_project(
        tmp_path,
        {"tests/test_noisy.py": "def test_noisy():\n    print('state: 42')\n    assert False\n"},
    )
    case = run_pytest(project).test("test_noisy")
    assert "state: 42" in case.captured


def test_an_error_inside_the_plugin_is_reported_not_raised(tmp_path: Path) -> None:
    # A plugin that rewrites reports the way no plugin should trips the recorder.
    project = copy_project("assertion_failure", tmp_path)
    (project / "tests" / "conftest.py").write_text(
        "import pytest\n\n\n"
        "@pytest.hookimpl(tryfirst=True)\n"
        "def pytest_runtest_logreport(report):\n"
        "    report.location = (report.location[0], 'not a line', report.location[2])\n"
    )
    session = run_pytest(project)
    assert session.exit_code == 1  # the session's own result, untouched
    assert "runtest_logreport" in str(session.payload["internal_error"])
    assert session.report.counts.failed == 1


# --- activation -------------------------------------------------------------------------


def test_without_the_nonce_nothing_is_written(tmp_path: Path) -> None:
    project = copy_project("passing", tmp_path)
    session = run_pytest(project, nonce="")
    assert session.exit_code == 0
    assert session.stderr == ""
    assert "3 passed" in session.stdout


def test_the_report_is_the_last_line_of_stderr(tmp_path: Path) -> None:
    # The host takes the last nonce line, so nothing the session prints may follow it.
    project = copy_project("passing", tmp_path)
    session = run_pytest(project)
    assert session.stderr.endswith("\n")
    assert session.stderr.rstrip("\n").split("\n")[-1] == session.report_line
    assert session.report.counts.passed == 3
