"""Jest's `--json` and Vitest's `--reporter=json` output as a `TestReport`. Pure: text in, report
out.

Both write one JSON object (`numTotalTests`, `testResults[].assertionResults[]`). Test ids are
`<test file>::<describe>::...::<title>`, the file relative to the project. A test file that did not
run (a syntax error, a missing module, a failing hook) is a collection error named by its file.
Jest's failure messages carry the stack; Vitest 1.x gives the message alone and the `location`
of the error, which is taken as a line of the test file only for an assertion. `exitstatus`
follows pytest's numbers: 0 all passed, 1 tests failed, 2 a file did not run, 5 no test ran.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from engine.verify.js_messages import (
    ERROR_LINE,
    MAX_MESSAGE,
    SYNTAX_AT,
    comparison,
    error_kind,
    project_frames,
    unrooted,
    without_stack,
)
from engine.verify.parsers import relative, strip_ansi
from engine.verify.results import CollectionError, Frame, TestCase, TestCounts, TestReport

MAX_TEXT = 64 * 1024 * 1024
_OUTCOMES = {
    "passed": "passed",
    "failed": "failed",
    "pending": "skipped",
    "skipped": "skipped",
    "todo": "skipped",
    "disabled": "skipped",
    "focused": "passed",
}
_SKIP_REASONS = {
    "pending": "skipped (test.skip, xit, or another test's .only)",
    "skipped": "skipped (test.skip, or another test's .only)",
    "todo": "test.todo: not written yet",
}
# What Jest and Vitest print instead of their JSON when no test file matched.
_NO_TESTS = re.compile(r"^No tests found, exiting with code|^No test files found, exiting", re.M)
_CODE_FRAME = re.compile(r"^\s*> (?P<line>\d+) \| (?P<code>.*)$", re.MULTILINE)
_SUITE_HEADER = "● Test suite failed to run"


def _find_object(text: str) -> dict[str, object] | None:
    """The runner's JSON object: the whole text, or the first `{"num...` object within it."""
    decoder = json.JSONDecoder()
    starts = [0] if text.startswith("{") else []
    starts += [m.start() for m in re.finditer(r'\{"num', text)][:5]
    for start in starts:
        try:
            found, _ = decoder.raw_decode(text, start)
        except (json.JSONDecodeError, RecursionError):
            continue
        if isinstance(found, dict) and isinstance(found.get("testResults"), list):
            return found
    return None


def _code_line(block: str, frame: Frame | None) -> str | None:
    """The `> N | code` line of Jest's code frame, when it shows `frame`'s line."""
    match = _CODE_FRAME.search(block)
    if match and frame is not None and int(match["line"]) == frame.line:
        return match["code"].strip()
    return None


def _case(
    item: dict[str, object], file: str, suite_message: str, roots: list[str], outcome: str
) -> TestCase:
    titles = [str(t) for t in _list(item.get("ancestorTitles")) if str(t)] + [
        str(item.get("title", ""))
    ]
    nodeid = "::".join([file, *titles])
    location = item.get("location") if isinstance(item.get("location"), dict) else {}
    defined = int(location.get("line") or 0) if isinstance(location, dict) else 0
    if outcome == "skipped":
        status = str(item.get("status"))
        return TestCase(
            nodeid=nodeid,
            outcome="skipped",
            file=file,
            line=defined,
            skip_reason=_SKIP_REASONS.get(status, status),
        )
    failures = [unrooted(strip_ansi(str(m)), roots) for m in _list(item.get("failureMessages"))]
    failure = failures[0] if failures else ""
    message = without_stack(failure)
    kind, text = error_kind(message)
    expected, actual = comparison(text)
    frames = project_frames(failure, roots)
    in_test = [f for f in frames if f.file == file]
    test_frame = in_test[0] if in_test else None
    line = test_frame.line if test_frame else defined  # Jest: where the test is defined
    if not frames:  # Vitest: `location` is the error's line, in whichever file threw it
        assertion = kind == "AssertionError" and defined
        test_frame = Frame(file=file, line=defined) if assertion else None
        line = defined if assertion else 0
    frame = frames[0] if frames else test_frame
    block = _block(suite_message, titles)
    source = _code_line(block, frame)
    if frame is not None and source:
        frame = frame.model_copy(update={"source": source})
    return TestCase(
        nodeid=nodeid,
        outcome="failed",
        file=file,
        line=line,
        assertion=source if _same_line(frame, test_frame) else None,
        explanation=text[:MAX_MESSAGE] if kind == "AssertionError" else None,
        expected=expected,
        actual=actual,
        exception_type=kind,
        exception_message=(text.split("\n", 1)[0] if kind == "AssertionError" else text)[
            :MAX_MESSAGE
        ],
        test_frame=test_frame,
        frame=frame,
        captured="\n".join(failures[1:])[:2000],
    )


def _same_line(a: Frame | None, b: Frame | None) -> bool:
    return a is not None and b is not None and (a.file, a.line) == (b.file, b.line)


def _block(message: str, titles: list[str]) -> str:
    """The part of a file's human message about one test (`● a › b`)."""
    header = "● " + " › ".join(titles)
    start = message.find(header + "\n")
    if start < 0:
        return ""
    end = message.find("\n  ● ", start + len(header))
    return message[start : end if end >= 0 else len(message)]


def _list(value: object) -> list[object]:
    return value if isinstance(value, list) else []


def _collection_error(file: str, message: str, roots: list[str]) -> CollectionError:
    text = unrooted(strip_ansi(message), roots).replace(_SUITE_HEADER, "").strip()
    kind, what, frame = None, "", None
    for line in text.splitlines():
        if match := ERROR_LINE.match(line):
            kind, what = match["type"], match["msg"]
            if at := SYNTAX_AT.match(what):
                what = at["msg"]
                frame = Frame(file=relative(at["file"], roots), line=int(at["line"]))
            break
    if kind is None:
        what = next((line.strip() for line in text.splitlines() if line.strip()), "")
        if re.search(r"invalid JS syntax|Unexpected token|Failed to parse", what):
            kind = "SyntaxError"
    if frame is None:
        frames = project_frames(text, roots)
        frame = frames[-1] if frames else None
    return CollectionError(
        nodeid=file,
        exception_type=kind,
        exception_message=what[:MAX_MESSAGE],
        frame=frame,
        text=text[:MAX_MESSAGE],
    )


def parse_js_tests(text: str, roots: Iterable[str] = ()) -> TestReport | None:
    """The report of Jest's `--json` or Vitest's `--reporter=json` output; None when the text
    holds no such JSON object (the runner crashed before writing it)."""
    if len(text) > MAX_TEXT:
        return None
    roots = list(roots)
    found = _find_object(text.strip())
    if found is None:
        return TestReport(exitstatus=5) if _NO_TESTS.search(strip_ansi(text)) else None
    nodeids: list[str] = []
    cases: list[TestCase] = []
    errors: list[CollectionError] = []
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    for suite in _list(found.get("testResults")):
        if not isinstance(suite, dict):
            continue
        file = relative(str(suite.get("name", "")), roots)
        message = str(suite.get("message") or suite.get("failureMessage") or "")
        items = [i for i in _list(suite.get("assertionResults")) if isinstance(i, dict)]
        for item in items:
            outcome = _OUTCOMES.get(str(item.get("status")), "skipped")
            case = _case(item, file, unrooted(strip_ansi(message), roots), roots, outcome)
            nodeids.append(case.nodeid)
            counts[outcome] += 1
            if outcome != "passed":
                cases.append(case)
        if suite.get("status") == "failed" and not any(
            c.outcome == "failed" for c in cases if c.nodeid.startswith(file + "::")
        ):
            errors.append(_collection_error(file, message or "the test file failed", roots))
    exitstatus = 2 if errors else 1 if counts["failed"] else 0
    if not nodeids and not errors:
        exitstatus = 5
    return TestReport(
        exitstatus=exitstatus,
        counts=TestCounts(collected=len(nodeids), errors=len(errors), **counts),
        nodeids=nodeids,
        tests=cases,
        collection_errors=errors,
    )
