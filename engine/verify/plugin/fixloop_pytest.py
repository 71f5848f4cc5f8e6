"""fixloop's pytest plugin: one JSON report of the session, written to the real stderr.

Runs inside the sandbox (mounted read-only, loaded with ``-p fixloop_pytest``), so it
imports nothing from fixloop: stdlib and pytest (7 or 8) only. It does nothing unless
FIXLOOP_REPORT_NONCE is set. When the session is over it writes one line, nonce + JSON,
to the stderr it duplicated at import (before pytest captured fd 2); the host takes the
last line that starts with the nonce. The JSON's field names are the contract with
``engine.verify.results.PytestReport``. It never fails the session: its own errors end up in
the report's "internal_error" field.

One file of ~600 lines on purpose: it reaches the sandbox as this single file, which pytest
loads by name beside only stdlib and pytest, so it has no package to split helpers into.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import json
import linecache
import os
import sys
import textwrap
import traceback
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any

import pytest

NONCE_VARIABLE = "FIXLOOP_REPORT_NONCE"

MAX_REPORT_BYTES = 256 * 1024
FULL_DETAIL_TESTS = 50  # the first failures keep everything; the rest one line each
MAX_TESTS = 2000
MAX_NODEIDS = 5000
FULL_DETAIL_COLLECTION_ERRORS = 20
MAX_COLLECTION_ERRORS = 500
NODEID_SHARE = 0.3  # of the byte budget kept for nodeids before test details take the rest

EXPLANATION_CHARS = 2000
CAPTURED_CHARS = 2000
MESSAGE_CHARS = 1000
SHORT_MESSAGE_CHARS = 200
REPR_CHARS = 500
SOURCE_CHARS = 500

COUNT_NAMES = ("collected", "passed", "failed", "errors", "skipped", "xfailed", "xpassed")
# Failures first: they get the full details when there are too many entries to keep.
OUTCOME_RANK = {"failed": 0, "error": 0, "xpassed": 1, "skipped": 2, "xfailed": 2}
SLIM_FIELDS = ("nodeid", "outcome", "when", "file", "line", "exception_type")
INTERNAL_DIRS = frozenset({"site-packages", "dist-packages", "_pytest", "pluggy"})
THIS_FILE = os.path.abspath(__file__)
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
        config.pluginmanager.register(SessionRecorder(config), "fixloop-session-recorder")
        _recording = True
    except Exception as exc:  # the plugin must never break the session
        _write_line({"internal_error": f"configure: {_describe_error(exc)}"})


# --- small text helpers ---------------------------------------------------------------


def _clip(text: str, limit: int) -> str:
    """At most about `limit` characters: head and tail around a note of what was cut."""
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head
    return f"{text[:head]}\n[... {len(text) - limit} characters cut ...]\n{text[-tail:]}"


def _safe_repr(value: object, limit: int = REPR_CHARS) -> str:
    try:
        text = repr(value)
    except Exception as exc:
        text = f"<{type(value).__name__} object; repr() failed: {_describe_error(exc)}>"
    return _clip(text, limit)


def _describe_error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _strip_prefix(text: str, prefix: str) -> str:
    return text[len(prefix) :] if text.startswith(prefix) else text


# --- frames -----------------------------------------------------------------------------


@dataclass(frozen=True)
class RawFrame:
    """One traceback entry, with the absolute path of its file."""

    path: str
    line: int
    function: str


def _raw_frames(tb: TracebackType | None) -> list[RawFrame]:
    return [
        RawFrame(frame.f_code.co_filename, lineno or 0, frame.f_code.co_name)
        for frame, lineno in traceback.walk_tb(tb)
    ]


@functools.lru_cache(maxsize=1024)
def _is_internal(path: str) -> bool:
    """Installed packages, pytest and pluggy, this plugin, and frozen/generated code."""
    if path.startswith("<") or os.path.abspath(path) == THIS_FILE:
        return True
    return not INTERNAL_DIRS.isdisjoint(Path(path).parts)


def _asserting_frame(frame: FrameType | None) -> FrameType | None:
    """The first caller outside pytest and pluggy: where the failing comparison is."""
    while frame is not None and _is_internal(frame.f_code.co_filename):
        frame = frame.f_back
    return frame


@functools.lru_cache(maxsize=64)
def _statements(path: str) -> tuple[str, list[ast.stmt]] | None:
    """A file's source and its statements, parsed once per session."""
    try:
        source = "".join(linecache.getlines(path))
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return None
    return source, [node for node in ast.walk(tree) if isinstance(node, ast.stmt)]


def _statement_source(path: str, line: int) -> str:
    """The statement starting or running through `line`, stripped (a header line for blocks)."""
    text = _clip(linecache.getline(path, line).strip(), SOURCE_CHARS)
    parsed = _statements(path)
    if parsed is None:
        return text
    source, statements = parsed
    around = [node for node in statements if node.lineno <= line <= (node.end_lineno or 0)]
    if not around:
        return text
    innermost = max(around, key=lambda node: node.lineno)
    if hasattr(innermost, "body"):  # a block: its header line, not the whole block
        return text
    segment = ast.get_source_segment(source, innermost, padded=True)
    return _clip(textwrap.dedent(segment).strip(), SOURCE_CHARS) if segment else text


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
        self.internal_errors: list[str] = []
        self.emitted = False
        self._relative: dict[str, str] = {}

    @contextlib.contextmanager
    def guard(self, where: str) -> Iterator[None]:
        """Record, never raise: the session goes on whatever happens here."""
        try:
            yield
        except Exception as exc:
            if len(self.internal_errors) < 5:
                self.internal_errors.append(f"{where}: {_describe_error(exc)}")

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
        return not _is_internal(path) and not os.path.isabs(self.relative(path))

    def frame_json(self, frame: RawFrame) -> dict[str, Any]:
        source = linecache.getline(frame.path, frame.line).strip()
        return {
            "file": self.relative(frame.path),
            "line": frame.line,
            "function": frame.function,
            "source": _clip(source, SOURCE_CHARS),
        }

    def project_frame(self, frames: list[RawFrame]) -> RawFrame | None:
        return next((f for f in reversed(frames) if self.in_project(f.path)), None)

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
            "text": _clip(str(report.longrepr), EXPLANATION_CHARS),
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
            "skip_reason": _strip_prefix(reason, "Skipped: "),
        }

    # -- hooks: running tests

    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        self.comparison = None

    def pytest_runtest_logfinish(self, nodeid: str, location: Any) -> None:
        self.comparison = None  # lets the asserting frame (and its locals) go

    def pytest_assertrepr_compare(
        self, config: pytest.Config, op: str, left: object, right: object
    ) -> None:
        with self.guard("assertrepr_compare"):
            frame = _asserting_frame(sys._getframe(1))
            line = frame.f_lineno if frame is not None else 0
            self.comparison = Comparison(op, _safe_repr(left), _safe_repr(right), frame, line)

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, Any, None]:
        outcome = yield  # tryfirst: outermost, so xfail handling has already run
        if call.excinfo is None or isinstance(call.excinfo.value, NOT_FAILURES):
            return
        with self.guard("runtest_makereport"):
            report = outcome.get_result()
            self.details[(report.nodeid, report.when)] = self.describe_failure(item, call)

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
            "exception_message": _clip(str(exc), MESSAGE_CHARS),
        }
        if isinstance(exc, SyntaxError) and exc.filename and exc.lineno:
            source = (exc.text or "").strip()
            described["frame"] = {
                "file": self.relative(exc.filename),
                "line": exc.lineno,
                "function": "",
                "source": _clip(source, SOURCE_CHARS),
            }
            return described
        frame = self.project_frame(_raw_frames(exc.__traceback__))
        described["frame"] = self.frame_json(frame) if frame else None
        return described

    def describe_failure(self, item: pytest.Item, call: pytest.CallInfo[None]) -> dict[str, Any]:
        assert call.excinfo is not None
        exc = call.excinfo.value
        described = self.describe_exception(exc)
        explanation = _explanation(exc) or call.excinfo.exconly()
        frames = _raw_frames(call.excinfo.tb)
        test_file = self.relative(str(item.path))
        in_test = [f for f in frames if self.relative(f.path) == test_file]
        if in_test:
            described["test_frame"] = self.frame_json(in_test[-1])
            described["assertion"] = _statement_source(in_test[-1].path, in_test[-1].line)
        comparison = self.comparison if isinstance(exc, AssertionError) else None
        if comparison is not None and _made_by(comparison, call.excinfo.tb):
            described["actual"], described["expected"] = comparison.left, comparison.right
            if comparison.op != "==" and f" {comparison.op} " not in explanation:
                explanation = f"[{comparison.op}] {explanation}"
        described["explanation"] = _clip(explanation, EXPLANATION_CHARS)
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
            "captured": _clip(_captured(report), CAPTURED_CHARS),
        }
        errorstring = getattr(report.longrepr, "errorstring", None)
        if errorstring:  # a fixture error: pytest's message beats the exception's repr
            case["exception_message"] = _clip(str(errorstring), MESSAGE_CHARS)
            case["explanation"] = _clip(str(errorstring), EXPLANATION_CHARS)
        if outcome in ("skipped", "xfailed", "xpassed"):
            case["skip_reason"] = _skip_reason(report)
        elif not details:  # no exception seen here (e.g. a strict XPASS): pytest's words
            case["explanation"] = _clip(_crash_message(report), EXPLANATION_CHARS)
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
            report["internal_error"] = _clip("; ".join(self.internal_errors), MESSAGE_CHARS)
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
        return _clip(_strip_prefix(str(report.wasxfail), "reason: "), MESSAGE_CHARS)
    longrepr = report.longrepr
    reason = str(longrepr[2]) if isinstance(longrepr, tuple) and len(longrepr) == 3 else ""
    return _clip(_strip_prefix(reason, "Skipped: "), MESSAGE_CHARS)


def _crash_message(report: pytest.TestReport) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    return str(getattr(crash, "message", None) or report.longrepr or "")


def _captured(report: pytest.TestReport) -> str:
    return "\n".join(f"----- {title} -----\n{content}" for title, content in report.sections)


# --- fitting and writing ----------------------------------------------------------------


def _size(value: object) -> int:
    return len(json.dumps(value, separators=(",", ":"))) + 1  # +1: the comma


def _slim_test(case: dict[str, Any]) -> dict[str, Any]:
    slim = {name: case[name] for name in SLIM_FIELDS if name in case}
    for name in ("exception_message", "skip_reason"):
        if case.get(name):
            slim[name] = _clip(str(case[name]), SHORT_MESSAGE_CHARS)
    return slim


def _slim_collection_error(error: dict[str, Any]) -> dict[str, Any]:
    slim = {name: error.get(name) for name in ("nodeid", "exception_type", "frame")}
    slim["exception_message"] = _clip(
        str(error.get("exception_message") or ""), SHORT_MESSAGE_CHARS
    )
    return slim


def _loses(item: dict[str, Any], slim: dict[str, Any]) -> bool:
    """Does the slim form leave out or shorten anything the item said?"""
    return any(value and slim.get(name) != value for name, value in item.items())


@dataclass
class Budget:
    """Bytes left for the report's lists, and how much of them full details may take."""

    left: int
    dropped: bool = False

    def fill(
        self,
        items: list[dict[str, Any]],
        slim: Callable[[dict[str, Any]], dict[str, Any]],
        full_count: int,
        full_bytes: int,
    ) -> list[dict[str, Any]]:
        """The first `full_count` items whole while `full_bytes` last, the rest slim; in order."""
        kept: list[dict[str, Any]] = []
        for index, item in enumerate(items):
            piece = item
            if index >= full_count or _size(item) > min(full_bytes, self.left):
                piece = slim(item)
                self.dropped = self.dropped or _loses(item, piece)
            size = _size(piece)
            if size > self.left:
                break
            if piece is item:
                full_bytes -= size
            self.left -= size
            kept.append(piece)
        self.dropped = self.dropped or len(kept) < len(items)
        return kept


def fit_report(
    base: dict[str, Any],
    tests: list[dict[str, Any]],
    nodeids: list[str],
    collection_errors: list[dict[str, Any]],
) -> dict[str, Any]:
    """Fill the lists by value, within MAX_REPORT_BYTES: full details of the first errors
    and failures, one line for the rest, then as many nodeids as fit."""
    budget = Budget(MAX_REPORT_BYTES - 4096 - _size(base))
    budget.dropped = len(nodeids) > MAX_NODEIDS
    nodeids = nodeids[:MAX_NODEIDS]
    reserve = min(sum(_size(nodeid) for nodeid in nodeids), int(budget.left * NODEID_SHARE))
    budget.left -= reserve
    base["collection_errors"] = budget.fill(
        collection_errors[:MAX_COLLECTION_ERRORS],
        _slim_collection_error,
        FULL_DETAIL_COLLECTION_ERRORS,
        budget.left // 4,
    )
    base["tests"] = budget.fill(tests[:MAX_TESTS], _slim_test, FULL_DETAIL_TESTS, budget.left // 2)
    budget.dropped = budget.dropped or len(collection_errors) > MAX_COLLECTION_ERRORS
    budget.dropped = budget.dropped or len(tests) > MAX_TESTS
    budget.left += reserve
    for nodeid in nodeids:
        if _size(nodeid) > budget.left:
            budget.dropped = True
            break
        budget.left -= _size(nodeid)
        base["nodeids"].append(nodeid)
    base["truncated"] = budget.dropped
    return base


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
