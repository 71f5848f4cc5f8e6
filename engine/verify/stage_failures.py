"""What a failed stage says went wrong, whatever it came from: the failing tests, collection
errors and exceptions read from its pytest report or, without one, from its output.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from engine.verify.results import StageKind, StageResult, TestCase


@dataclass(frozen=True)
class StageFailure:
    """One failing test, collection or stage: where, and the exception it ended in."""

    where: str  # a test nodeid, a collected file, or a stage name
    exception_type: str | None
    message: str

    @property
    def short_type(self) -> str:
        """`socket.gaierror` and `gaierror` are the same exception."""
        return (self.exception_type or "").rsplit(".", 1)[-1]

    @property
    def headline(self) -> str:
        message = first_line(self.message)
        if self.exception_type and message:
            return f"{self.exception_type}: {message}"
        return self.exception_type or message or "failed"


@dataclass(frozen=True)
class StageFailures:
    """What one failed tests (or generic) stage says went wrong, from its report or its text."""

    tests: list[StageFailure]  # failing tests, in run order
    collection: list[StageFailure]
    no_tests: bool
    text: str  # raw output worth scanning for environment causes


_FAILING_OUTCOMES = frozenset({"failed", "error"})


def first_line(text: str) -> str:
    """The first non-blank line of `text`, stripped."""
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def stage_failed(stage: StageResult) -> bool:
    """Exit status, or a report/diagnostics that show failures a `|| true` hid."""
    if not stage.succeeded:
        return True
    report = stage.report
    if report and (
        report.collection_errors or any(t.outcome in _FAILING_OUTCOMES for t in report.tests)
    ):
        return True
    return any(d.severity == "error" for d in stage.diagnostics)


def _test_failure(test: TestCase) -> StageFailure:
    message = test.exception_message or test.explanation or ""
    return StageFailure(test.nodeid, test.exception_type, message)


# --- reading pytest's text when there is no report ----------------------------------------------

_SUMMARY_LINE = re.compile(r"^(FAILED|ERROR) (\S+)(?: - (.*))?$", re.MULTILINE)
_E_EXCEPTION = re.compile(r"^E\s+([A-Za-z_][\w.]*): ?(.*)$", re.MULTILINE)
_E_ASSERT = re.compile(r"^E\s+(assert .*)$", re.MULTILINE)
_TRACEBACK_LAST = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|gaierror)): (.*)$", re.M)
_COLLECTING = re.compile(r"ERROR collecting (\S+)|errors? during collection")
_NO_TESTS_TEXT = re.compile(r"\bno tests ran\b|\bcollected 0 items\b")
_LOWER_EXCEPTIONS = frozenset({"gaierror", "herror", "timeout", "error"})


def _looks_like_exception(name: str) -> bool:
    last = name.rsplit(".", 1)[-1]
    return last[:1].isupper() or last in _LOWER_EXCEPTIONS


def _first_exception_in_text(text: str) -> tuple[str, str] | None:
    """The first `E   Type: message` (or `E   assert ...`) block of pytest's output."""
    found: list[tuple[int, str, str]] = []
    for match in _E_EXCEPTION.finditer(text):
        if _looks_like_exception(match.group(1)):
            found.append((match.start(), match.group(1), match.group(2)))
            break
    if assertion := _E_ASSERT.search(text):
        found.append((assertion.start(), "AssertionError", assertion.group(1)))
    if not found and (last := list(_TRACEBACK_LAST.finditer(text))):
        found.append((0, last[-1].group(1), last[-1].group(2)))  # a plain Python traceback
    if not found:
        return None
    _, kind, message = min(found)
    return kind, message


def _failures_from_text(stage: StageResult) -> StageFailures:
    text = "\n".join(part for part in (stage.excerpt, stage.stdout, stage.stderr) if part)
    exception = _first_exception_in_text(text)
    kind, message = exception if exception else (None, first_line(stage.stderr or stage.stdout))
    summary = [(m.group(1), m.group(2), m.group(3) or "") for m in _SUMMARY_LINE.finditer(text)]
    collecting = _COLLECTING.search(text)
    if collecting:
        files = [node for outcome, node, _ in summary if outcome == "ERROR" and "::" not in node]
        files = files or [collecting.group(1) or stage.name]
        collection = [StageFailure(files[0], kind, message)] + [
            StageFailure(f, None, "") for f in files[1:]
        ]
        return StageFailures([], collection, no_tests=False, text=text)
    tests = [
        StageFailure(node, kind if i == 0 else None, message if i == 0 else detail)
        for i, (_, node, detail) in enumerate(summary)
    ]
    no_tests = stage.kind is StageKind.TESTS and (
        stage.exit_code == 5 or (not tests and bool(_NO_TESTS_TEXT.search(text)))
    )
    if not tests and not no_tests and not stage.succeeded:
        tests = [StageFailure(f"stage '{stage.name}' (exit {stage.exit_code})", kind, message)]
    return StageFailures(tests, [], no_tests=no_tests, text=text)


def read_failures(stage: StageResult) -> StageFailures:
    """What went wrong in `stage`: from its pytest report when there is one, else its text."""
    report = stage.report
    if report is None:
        return _failures_from_text(stage)
    tests = [_test_failure(t) for t in report.tests if t.outcome in _FAILING_OUTCOMES]
    collection = [
        StageFailure(c.nodeid, c.exception_type, c.exception_message or c.text)
        for c in report.collection_errors
    ]
    parsed = _first_exception_in_text(report.collection_errors[0].text) if collection else None
    if parsed and collection[0].exception_type is None:
        collection[0] = StageFailure(collection[0].where, *parsed)
    no_tests = report.exitstatus == 5 or (report.counts.collected == 0 and not collection)
    # Without failures in the report (pytest crashed, a conftest did not import) the cause is
    # only in the process output.
    quiet = not tests and not collection
    text = "\n".join((stage.stdout, stage.stderr)) if quiet and not stage.succeeded else ""
    if quiet and not no_tests and not stage.succeeded:
        parsed = _first_exception_in_text(text)
        kind, message = parsed if parsed else (None, first_line(stage.stderr or stage.stdout))
        tests = [StageFailure(f"stage '{stage.name}' (exit {stage.exit_code})", kind, message)]
    return StageFailures(tests, collection, no_tests=no_tests, text=text)
