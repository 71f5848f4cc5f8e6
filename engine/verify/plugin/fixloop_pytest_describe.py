"""Describing what went wrong, for fixloop's pytest plugin: an exception, a test's failure and
its report entry, as the JSON the host reads into `engine.verify.results.TestCase`.

A sibling of `fixloop_pytest` (stdlib and pytest only: it runs inside the sandbox). The
recorder there holds the session's state; this module turns pytest's objects into entries.
"""

from __future__ import annotations

import linecache
import os
import traceback
from dataclasses import dataclass
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any

import pytest
from fixloop_pytest_runtime import failing_frame, frame_values
from fixloop_pytest_source import (
    SOURCE_CHARS,
    RawFrame,
    clip,
    is_internal,
    raw_frames,
    statement_source,
    strip_prefix,
)

EXPLANATION_CHARS = 2000
CAPTURED_CHARS = 2000
MESSAGE_CHARS = 1000


@dataclass
class Comparison:
    """The last failing comparison an assert made, and the frame that made it."""

    op: str
    left: str
    right: str
    frame: FrameType | None
    line: int


class Describer:
    """Paths relative to the project's root, frames inside it, and failures in its terms."""

    def __init__(self, rootdir: Path) -> None:
        self.rootdir = rootdir
        self._relative: dict[str, str] = {}

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

    # -- failures

    def exception(self, exc: BaseException) -> dict[str, Any]:
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

    def failure(
        self, item: pytest.Item, call: pytest.CallInfo[None], comparison: Comparison | None
    ) -> dict[str, Any]:
        """A test's failure: the exception, the test's own failing statement, and expected
        and actual when `comparison` (the assert's last) is the one that raised."""
        assert call.excinfo is not None
        exc = call.excinfo.value
        described = self.exception(exc)
        explanation = _explanation(exc) or call.excinfo.exconly()
        frames = raw_frames(call.excinfo.tb)
        test_file = self.relative(str(item.path))
        in_test = [f for f in frames if self.relative(f.path) == test_file]
        if in_test:
            described["test_frame"] = self.frame_json(in_test[-1])
            described["assertion"] = statement_source(in_test[-1].path, in_test[-1].line)
        if not isinstance(exc, AssertionError):
            comparison = None
        if comparison is not None and _made_by(comparison, call.excinfo.tb):
            described["actual"], described["expected"] = comparison.left, comparison.right
            if comparison.op != "==":  # `6.0 < 0.0001`: the right side is no expected value
                described["comparison"] = comparison.op
            if comparison.op != "==" and f" {comparison.op} " not in explanation:
                explanation = f"[{comparison.op}] {explanation}"
        described["explanation"] = clip(explanation, EXPLANATION_CHARS)
        return described


def case_entry(report: pytest.TestReport, outcome: str, details: dict[str, Any]) -> dict[str, Any]:
    """A test's report entry: where it is, its outcome, and what went wrong (`details`)."""
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


def collection_error(report: pytest.CollectReport, found: dict[str, Any]) -> dict[str, Any]:
    """A file that failed to collect, with its exception as `exception` described it."""
    return {
        "nodeid": report.nodeid,
        "exception_type": found.get("exception_type"),
        "exception_message": found.get("exception_message"),
        "frame": found.get("frame"),
        "text": clip(str(report.longrepr), EXPLANATION_CHARS),
    }


def collection_skip(report: pytest.CollectReport) -> dict[str, Any]:
    """A module skipped as it was collected (`pytest.skip(allow_module_level=True)`)."""
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


def classify(report: pytest.TestReport) -> tuple[str | None, str | None]:
    """(count to increment, outcome of a test entry) as pytest's terminal summary sees it: a
    subtest that passed (pytest's `subtests`, unittest's `subTest`) is no test of its own
    (pytest says "N subtests passed" apart), one that failed counts as a failure of its test."""
    xfail = hasattr(report, "wasxfail")
    if report.passed:
        if xfail:
            return "xpassed", "xpassed"
        return ("passed" if report.when == "call" and not is_subtest(report) else None), None
    if report.failed:
        return ("failed", "failed") if report.when == "call" else ("errors", "error")
    if report.skipped:
        return ("xfailed", "xfailed") if xfail else ("skipped", "skipped")
    return None, None  # e.g. pytest-rerunfailures' "rerun"


def is_subtest(report: pytest.TestReport) -> bool:
    """A report of one subtest inside a test (pytest 9's own and pytest-subtests' report)."""
    return type(report).__name__ == "SubtestReport"


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
