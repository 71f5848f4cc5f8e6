"""fixloop's pytest plugin: one JSON report of the session, written to the real stderr.

Runs inside the sandbox (mounted read-only, loaded with ``-p fixloop_pytest``), so it
imports nothing from fixloop: stdlib and pytest (7 or 8) only. It does nothing unless
FIXLOOP_REPORT_NONCE is set. When the session is over it writes one line, nonce + JSON,
to the stderr it duplicated at import (before pytest captured fd 2); the host takes the
last line that starts with the nonce. The JSON's field names are the contract with
``engine.verify.results.TestReport``. It never fails the session: its own errors end up in
the report's "internal_error" field.

Its helpers are sibling modules in the same directory, mounted with it on PYTHONPATH (and
copied beside it into a built image's site-packages): `fixloop_pytest_source` (text, frames,
statements), `fixloop_pytest_fit` (fitting the report into its byte budget) and
`fixloop_pytest_runtime` (the first failure's local variables).
"""

from __future__ import annotations

import contextlib
import json
import linecache
import os
import sys
import traceback
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any

import pytest
from fixloop_pytest_fit import fit_report
from fixloop_pytest_runtime import failing_frame, frame_values
from fixloop_pytest_source import (
    SOURCE_CHARS,
    RawFrame,
    asserting_frame,
    clip,
    describe_error,
    is_internal,
    raw_frames,
    safe_repr,
    statement_source,
    strip_prefix,
)
from fixloop_pytest_timeout import MARKER, configured_limit, describe_hang, limit_of, time_limit

NONCE_VARIABLE = "FIXLOOP_REPORT_NONCE"


EXPLANATION_CHARS = 2000
CAPTURED_CHARS = 2000
MESSAGE_CHARS = 1000

COUNT_NAMES = ("collected", "passed", "failed", "errors", "skipped", "xfailed", "xpassed")
# Failures first: they get the full details when there are too many entries to keep.
OUTCOME_RANK = {"failed": 0, "error": 0, "xpassed": 1, "skipped": 2, "xfailed": 2}
# Raised to skip or xfail a test: the reason says it all, there is no failure to describe.
NOT_FAILURES = (pytest.skip.Exception, pytest.xfail.Exception)


def _dup_stderr() -> int | None:
    """The real stderr, taken before pytest's fd capture replaces fd 2."""
    if not os.environ.get(NONCE_VARIABLE):
        return None
    try:
        return os.dup(2)
    except OSError:
        return None


_NONCE = os.environ.get(NONCE_VARIABLE, "")
_real_stderr = _dup_stderr()
_recording = False  # one report per process, for the outermost session


def pytest_configure(config: pytest.Config) -> None:
    global _recording
    if not _NONCE or _recording or hasattr(config, "workerinput"):  # xdist workers: controller
        return
    try:
        if not config.pluginmanager.hasplugin("timeout"):  # pytest-timeout registers its own
            config.addinivalue_line("markers", MARKER)
        config.pluginmanager.register(SessionRecorder(config), "fixloop-session-recorder")
        _recording = True
    except Exception as exc:  # the plugin must never break the session
        _write_line({"internal_error": f"configure: {describe_error(exc)}"})


# --- the recorder -----------------------------------------------------------------------


@dataclass
class Comparison:
    """The last failing comparison an assert made, and the frame that made it."""

    op: str
    left: str
    right: str
    frame: FrameType | None
    line: int


class SessionRecorder:
    """Collects what the session did; writes the report when pytest unconfigures."""

    def __init__(self, config: pytest.Config) -> None:
        self.rootdir = Path(str(config.rootpath)).resolve()
        self.session: pytest.Session | None = None
        self.counts = dict.fromkeys(COUNT_NAMES, 0)
        self.nodeids: list[str] = []
        self.tests: list[dict[str, Any]] = []
        self.reported: set[str] = set()  # nodeids that already have an entry
        self.collection_errors: list[dict[str, Any]] = []
        self.details: dict[tuple[str, str], dict[str, Any]] = {}  # (nodeid, when) -> failure
        self.collect_details: dict[str, dict[str, Any]] = {}
        self.comparison: Comparison | None = None
        self.runtime_taken = False  # only the first failure's locals are captured
        self.internal_errors: list[str] = []
        self.emitted = False
        self._relative: dict[str, str] = {}
        # Per-test limits: ours, unless pytest-timeout is loaded and keeps its own.
        external = config.pluginmanager.hasplugin("timeout")
        self.test_timeout = None if external else configured_limit()
        self.limits_tests = not external

    @contextlib.contextmanager
    def guard(self, where: str) -> Iterator[None]:
        """Record, never raise: the session goes on whatever happens here."""
        try:
            yield
        except Exception as exc:
            if len(self.internal_errors) < 5:
                self.internal_errors.append(f"{where}: {describe_error(exc)}")

    # -- paths and frames

    def relative(self, path: str) -> str:
        """`path` relative to the rootdir (posix) when inside it, else absolute."""
        if path not in self._relative:
            resolved = Path(path).resolve()
            inside = resolved.is_relative_to(self.rootdir)
            self._relative[path] = (
                resolved.relative_to(self.rootdir).as_posix() if inside else resolved.as_posix()
            )
        return self._relative[path]

    def in_project(self, path: str) -> bool:
        return not is_internal(path) and not os.path.isabs(self.relative(path))

    def frame_json(self, frame: RawFrame) -> dict[str, Any]:
        source = linecache.getline(frame.path, frame.line).strip()
        return {
            "file": self.relative(frame.path),
            "line": frame.line,
            "function": frame.function,
            "source": clip(source, SOURCE_CHARS),
        }

    def project_frame(self, frames: list[RawFrame]) -> RawFrame | None:
        return next((f for f in reversed(frames) if self.in_project(f.path)), None)

    def runtime_values(self, item: pytest.Item, tb: TracebackType | None) -> dict[str, Any] | None:
        """The locals of the failure's deepest project frame (the code under test before the
        test itself), read now, while the traceback still holds them."""
        test_file = self.relative(str(item.path))

        def is_test_file(path: str) -> bool:
            relative = self.relative(path)
            name = relative.rsplit("/", 1)[-1]
            if relative == test_file or name == "conftest.py":
                return True
            in_tests = not {"tests", "test"}.isdisjoint(relative.split("/")[:-1])
            return in_tests or name.startswith("test_") or name.endswith("_test.py")

        found = failing_frame(tb, self.in_project, is_test_file)
        if found is None:
            return None
        frame, line = found
        values, omitted = frame_values(frame)
        if not values:
            return None
        where = RawFrame(frame.f_code.co_filename, line, frame.f_code.co_name)
        return {
            "frame": self.frame_json(where),
            "values": values,
            "omitted": omitted,
        }

    # -- hooks: collection

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.session = session

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        with self.guard("collection_finish"):
            self.nodeids = [item.nodeid for item in session.items]

    def pytest_exception_interact(
        self, node: pytest.Item | pytest.Collector, call: pytest.CallInfo[Any], report: Any
    ) -> None:
        # Collection only: test failures are described in pytest_runtest_makereport.
        if not isinstance(report, pytest.CollectReport) or call.excinfo is None:
            return
        with self.guard("exception_interact"):
            exc = call.excinfo.value
            if isinstance(exc, pytest.Collector.CollectError):  # pytest's wrapper: the cause
                exc = exc.__cause__ or exc.__context__ or exc
            self.collect_details[report.nodeid] = self.describe_exception(exc)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        with self.guard("collectreport"):
            if report.failed:
                self.counts["errors"] += 1
                self.collection_errors.append(self.collection_error(report))
            elif report.skipped:
                self.counts["skipped"] += 1
                self.add_test(self.collection_skip(report))

    def collection_error(self, report: pytest.CollectReport) -> dict[str, Any]:
        found = self.collect_details.pop(report.nodeid, {})
        return {
            "nodeid": report.nodeid,
            "exception_type": found.get("exception_type"),
            "exception_message": found.get("exception_message"),
            "frame": found.get("frame"),
            "text": clip(str(report.longrepr), EXPLANATION_CHARS),
        }

    def collection_skip(self, report: pytest.CollectReport) -> dict[str, Any]:
        line, reason = 0, str(report.longrepr)
        if isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
            line, reason = report.longrepr[1] or 0, str(report.longrepr[2])
        return {
            "nodeid": report.nodeid,
            "outcome": "skipped",
            "when": "collect",
            "file": report.nodeid.split("::")[0],
            "line": line,
            "skip_reason": strip_prefix(reason, "Skipped: "),
        }

    # -- hooks: running tests

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, Any, None]:
        limit = limit_of(item, self.test_timeout) if self.limits_tests else None
        with time_limit(limit, self.where_it_hung):
            yield

    def where_it_hung(self, frame: FrameType | None) -> str:
        return describe_hang(
            frame, lambda path: self.relative(path) if self.in_project(path) else None
        )

    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        self.comparison = None

    def pytest_runtest_logfinish(self, nodeid: str, location: Any) -> None:
        self.comparison = None  # lets the asserting frame (and its locals) go

    def pytest_assertrepr_compare(
        self, config: pytest.Config, op: str, left: object, right: object
    ) -> None:
        with self.guard("assertrepr_compare"):
            frame = asserting_frame(sys._getframe(1))
            line = frame.f_lineno if frame is not None else 0
            self.comparison = Comparison(op, safe_repr(left), safe_repr(right), frame, line)

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, Any, None]:
        outcome = yield  # tryfirst: outermost, so xfail handling has already run
        if call.excinfo is None or isinstance(call.excinfo.value, NOT_FAILURES):
            return
        with self.guard("runtest_makereport"):
            report = outcome.get_result()
            details = self.describe_failure(item, call)
            self.details[(report.nodeid, report.when)] = details
            if report.failed and not self.runtime_taken:  # not an xfail: a failure to show
                self.runtime_taken = True
                runtime = self.runtime_values(item, call.excinfo.tb)
                if runtime is not None:
                    details["runtime"] = runtime

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        with self.guard("runtest_logreport"):
            details = self.details.pop((report.nodeid, report.when), {})
            count, outcome = _classify(report)
            if count is not None:
                self.counts[count] += 1
            if outcome is not None and report.nodeid not in self.reported:
                self.add_test(self.test_case(report, outcome, details))

    def add_test(self, case: dict[str, Any]) -> None:
        self.reported.add(case["nodeid"])
        self.tests.append(case)

    # -- describing failures

    def describe_exception(self, exc: BaseException) -> dict[str, Any]:
        """Type, message and the last project frame (for a SyntaxError: where it is)."""
        described: dict[str, Any] = {
            "exception_type": type(exc).__qualname__,
            "exception_message": clip(str(exc), MESSAGE_CHARS),
        }
        if isinstance(exc, SyntaxError) and exc.filename and exc.lineno:
            source = (exc.text or "").strip()
            described["frame"] = {
                "file": self.relative(exc.filename),
                "line": exc.lineno,
                "function": "",
                "source": clip(source, SOURCE_CHARS),
            }
            return described
        frame = self.project_frame(raw_frames(exc.__traceback__))
        described["frame"] = self.frame_json(frame) if frame else None
        return described

    def describe_failure(self, item: pytest.Item, call: pytest.CallInfo[None]) -> dict[str, Any]:
        assert call.excinfo is not None
        exc = call.excinfo.value
        described = self.describe_exception(exc)
        explanation = _explanation(exc) or call.excinfo.exconly()
        frames = raw_frames(call.excinfo.tb)
        test_file = self.relative(str(item.path))
        in_test = [f for f in frames if self.relative(f.path) == test_file]
        if in_test:
            described["test_frame"] = self.frame_json(in_test[-1])
            described["assertion"] = statement_source(in_test[-1].path, in_test[-1].line)
        comparison = self.comparison if isinstance(exc, AssertionError) else None
        if comparison is not None and _made_by(comparison, call.excinfo.tb):
            described["actual"], described["expected"] = comparison.left, comparison.right
            if comparison.op != "==":  # `6.0 < 0.0001`: the right side is no expected value
                described["comparison"] = comparison.op
            if comparison.op != "==" and f" {comparison.op} " not in explanation:
                explanation = f"[{comparison.op}] {explanation}"
        described["explanation"] = clip(explanation, EXPLANATION_CHARS)
        return described

    def test_case(
        self, report: pytest.TestReport, outcome: str, details: dict[str, Any]
    ) -> dict[str, Any]:
        path, line, _ = report.location
        case: dict[str, Any] = {
            "nodeid": report.nodeid,
            "outcome": outcome,
            "when": report.when,
            "file": path.replace(os.sep, "/"),
            "line": line + 1 if line is not None else 0,
            **details,
            "captured": clip(_captured(report), CAPTURED_CHARS),
        }
        errorstring = getattr(report.longrepr, "errorstring", None)
        if errorstring:  # a fixture error: pytest's message beats the exception's repr
            case["exception_message"] = clip(str(errorstring), MESSAGE_CHARS)
            case["explanation"] = clip(str(errorstring), EXPLANATION_CHARS)
        if outcome in ("skipped", "xfailed", "xpassed"):
            case["skip_reason"] = _skip_reason(report)
        elif not details:  # no exception seen here (e.g. a strict XPASS): pytest's words
            case["explanation"] = clip(_crash_message(report), EXPLANATION_CHARS)
        return case

    # -- the report

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self.emitted:
            return
        self.emitted = True
        report: dict[str, Any] = {"exitstatus": _exitstatus(self.session), "counts": self.counts}
        with self.guard("report"):
            report = self.build_report()
        if self.internal_errors:
            report["internal_error"] = clip("; ".join(self.internal_errors), MESSAGE_CHARS)
        _write_line(report)

    def build_report(self) -> dict[str, Any]:
        collected = getattr(self.session, "testscollected", None)
        self.counts["collected"] = collected if collected is not None else len(self.nodeids)
        tests = sorted(self.tests, key=lambda case: OUTCOME_RANK.get(case["outcome"], 3))
        return fit_report(
            {
                "exitstatus": _exitstatus(self.session),
                "counts": self.counts,
                "nodeids": [],
                "tests": [],
                "collection_errors": [],
                "truncated": False,
            },
            tests=tests,
            nodeids=self.nodeids,
            collection_errors=self.collection_errors,
        )


def _exitstatus(session: pytest.Session | None) -> int | None:
    """The session's final exit status (pytest.ExitCode is an int), if it got one."""
    status = getattr(session, "exitstatus", None)
    try:
        return int(status) if status is not None else None
    except (TypeError, ValueError):
        return None


def _explanation(exc: BaseException) -> str:
    """What pytest prints after "E": for a rewritten assert, its message is the explanation."""
    if isinstance(exc, AssertionError):
        return str(exc) or "AssertionError"
    return ""


def _made_by(comparison: Comparison, tb: TracebackType | None) -> bool:
    """Was this comparison the assert that raised? Same frame, same line."""
    entries = list(traceback.walk_tb(tb))
    if not entries:
        return False
    frame, line = entries[-1]
    return frame is comparison.frame and line == comparison.line


def _classify(report: pytest.TestReport) -> tuple[str | None, str | None]:
    """(count to increment, outcome of a test entry) as pytest's terminal summary sees it."""
    xfail = hasattr(report, "wasxfail")
    if report.passed:
        if xfail:
            return "xpassed", "xpassed"
        return ("passed" if report.when == "call" else None), None
    if report.failed:
        return ("failed", "failed") if report.when == "call" else ("errors", "error")
    if report.skipped:
        return ("xfailed", "xfailed") if xfail else ("skipped", "skipped")
    return None, None  # e.g. pytest-rerunfailures' "rerun"


def _skip_reason(report: pytest.TestReport) -> str:
    if hasattr(report, "wasxfail"):
        return clip(strip_prefix(str(report.wasxfail), "reason: "), MESSAGE_CHARS)
    longrepr = report.longrepr
    reason = str(longrepr[2]) if isinstance(longrepr, tuple) and len(longrepr) == 3 else ""
    return clip(strip_prefix(reason, "Skipped: "), MESSAGE_CHARS)


def _crash_message(report: pytest.TestReport) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    return str(getattr(crash, "message", None) or report.longrepr or "")


def _captured(report: pytest.TestReport) -> str:
    return "\n".join(f"----- {title} -----\n{content}" for title, content in report.sections)


def _write_line(report: dict[str, Any]) -> None:
    """One line, nonce + JSON, to the real stderr; fd 2 if it could not be duplicated."""
    global _real_stderr
    fd, _real_stderr = _real_stderr, None
    try:
        payload = json.dumps(report, separators=(",", ":"))
        data = f"\n{_NONCE}{payload}\n".encode()
        target = fd if fd is not None else 2
        while data:
            data = data[os.write(target, data) :]
    except Exception:  # nowhere left to report to
        pass
    finally:
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)
