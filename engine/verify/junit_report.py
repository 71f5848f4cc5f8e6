"""JUnit XML (pytest --junitxml, Maven Surefire, jest-junit, go-junit-report, ...) as a
`TestReport`. Pure: text in, report out; hostile XML (a DOCTYPE, entities, a huge file) is
refused, a truncated file gives the test cases before the cut.

Test ids are `<classname>::<name>` (just `<name>` when the classname is empty or repeats it, as
jest-junit's does). pytest's "collection failure" errors are collection errors. `exitstatus`
follows pytest's numbers: 0 all passed, 1 tests failed, 2 a file did not collect, 5 no test.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from typing import cast

from engine.verify import go_failures, js_messages
from engine.verify.parsers import relative
from engine.verify.results import CollectionError, Frame, TestCase, TestCounts, TestReport

MAX_XML = 16 * 1024 * 1024
MAX_CASES = 20_000
_HOSTILE = re.compile(r"<!DOCTYPE|<!ENTITY", re.IGNORECASE)
_PY_FRAME = re.compile(r"^(?P<file>[^\s:<>]+\.py):(?P<line>\d+): ?(?P<what>.*)$", re.MULTILINE)
_JAVA = re.compile(r"expected: ?<(?P<expected>.*?)> but was: ?<(?P<actual>.*?)>")
_PY_ASSERT = re.compile(r"^assert (?P<actual>.+?) == (?P<expected>.+)$")
_TYPE_LINE = re.compile(r"^(?:E\s+)?(?P<type>[A-Za-z_][\w.]*(?:Error|Exception)): ?(?P<msg>.*)$")
_COLLECTION = "collection failure"


def _elements(text: str) -> tuple[list[ET.Element], bool, bool]:
    """(the closed testcase elements, whether the root is a JUnit root, whether it was cut)."""
    parser: ET.XMLPullParser[ET.Element] = ET.XMLPullParser(events=("start", "end"))
    cases: list[ET.Element] = []
    root_ok: bool | None = None
    try:
        parser.feed(text)
        parser.close()
        cut = False
    except ET.ParseError:
        cut = True
    for item in parser.read_events():
        event, element = cast(tuple[str, object], item)  # typeshed's union is too wide
        if not isinstance(element, ET.Element):
            continue
        if event == "start" and root_ok is None:
            root_ok = element.tag in {"testsuites", "testsuite"}
        elif event == "end" and element.tag == "testcase" and len(cases) < MAX_CASES:
            cases.append(element)
    return cases, bool(root_ok), cut


def _nodeid(case: ET.Element) -> str:
    name = (case.get("name") or "").strip()
    classname = (case.get("classname") or "").strip()
    return f"{classname}::{name}" if classname and classname != name else name


def _comparison(message: str) -> tuple[str | None, str | None]:
    first = message.strip().split("\n", 1)[0]
    expected, actual = js_messages.comparison(message)
    if expected is not None or actual is not None:
        return expected, actual
    if match := _JAVA.search(message) or _PY_ASSERT.match(first):
        return match["expected"], match["actual"]
    for line in message.splitlines()[:20]:  # go-junit-report: the test's `file.go:N: msg` lines
        expected, actual = go_failures.comparison(line)
        if expected is not None or actual is not None:
            return expected, actual
    return go_failures.comparison(message)  # testify's expected:/actual: lines


def _frames(text: str, roots: list[str]) -> list[Frame]:
    """Project frames, innermost first: a JavaScript stack, else a Python traceback."""
    frames = js_messages.project_frames(text, roots)
    if frames:
        return frames
    python = [
        Frame(file=relative(m["file"], roots), line=int(m["line"]))
        for m in _PY_FRAME.finditer(text)
    ]
    return [f for f in reversed(python) if not f.file.startswith("/")]


def _exception(problem: ET.Element, text: str) -> tuple[str | None, str]:
    """(type, message) from the element's attributes, else from its text."""
    message = (problem.get("message") or "").strip()
    message = "" if message == _COLLECTION else message
    kind = (problem.get("type") or "").strip() or None
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if kind is None and (js := js_messages.error_kind(message or text.strip()))[0]:
        return js[0], js_messages.without_stack(js[1])
    for line in [] if kind else [message.split("\n", 1)[0], *lines]:
        if match := _TYPE_LINE.match(line):
            kind, message = match["type"], message or match["msg"]
            break
    if kind is None and (last := _PY_FRAME.search("\n".join(lines[-1:]))):
        kind = last["what"].strip() or None  # pytest ends with `file.py:7: AssertionError`
    if kind is None and message.startswith("assert "):
        kind = "AssertionError"
    if kind and message.startswith(kind + ": "):
        message = message[len(kind) + 2 :]
    return kind, message or (lines[0] if lines else "")


def _case(case: ET.Element, roots: list[str]) -> TestCase | CollectionError | None:
    """None for a test that passed."""
    nodeid = _nodeid(case)
    file = relative(case.get("file") or "", roots)
    line = int(case.get("line") or 0) if (case.get("line") or "").isdigit() else 0
    skipped = case.find("skipped")
    problem = case.find("failure")
    if problem is None:
        problem = case.find("error")
    if problem is None:
        if skipped is None:
            return None
        reason = (skipped.get("message") or skipped.text or "").strip()
        return TestCase(nodeid=nodeid, outcome="skipped", file=file, line=line, skip_reason=reason)
    text = js_messages.unrooted(problem.text or "", roots)
    kind, message = _exception(problem, text)
    frames = _frames(text, roots)
    if problem.get("message") == _COLLECTION:
        where = file or nodeid
        return CollectionError(
            nodeid=where,
            exception_type=kind,
            exception_message=message[: js_messages.MAX_MESSAGE],
            frame=frames[0] if frames else None,
            text=text[: js_messages.MAX_MESSAGE],
        )
    in_test = [f for f in frames if file and f.file == file]
    test_frame = in_test[0] if in_test else None
    expected, actual = _comparison(message + "\n" + text)
    return TestCase(
        nodeid=nodeid,
        outcome="error" if problem.tag == "error" else "failed",
        file=file or (frames[-1].file if frames else ""),
        line=test_frame.line if test_frame else line,
        explanation=message[: js_messages.MAX_MESSAGE] if kind == "AssertionError" else None,
        expected=expected,
        actual=actual,
        exception_type=kind,
        exception_message=(message.split("\n", 1)[0] if kind == "AssertionError" else message)[
            : js_messages.MAX_MESSAGE
        ],
        test_frame=test_frame,
        frame=frames[0] if frames else None,
        captured=js_messages.unrooted((case.findtext("system-out") or "")[-2000:], roots),
    )


def parse_junit(text: str, roots: Iterable[str] = ()) -> TestReport | None:
    """The report of a JUnit XML file's text; None when it is not JUnit XML or is refused."""
    text = text.lstrip("\ufeff \t\r\n")
    if len(text) > MAX_XML or not text.startswith("<") or _HOSTILE.search(text):
        return None
    roots = list(roots)
    elements, is_junit, cut = _elements(text)
    if not is_junit or (cut and not elements):
        return None
    nodeids: list[str] = []
    cases: list[TestCase] = []
    errors: list[CollectionError] = []
    counts = {"passed": 0, "failed": 0, "error": 0, "skipped": 0}
    for element in elements:
        found = _case(element, roots)
        if isinstance(found, CollectionError):
            errors.append(found)
            continue
        nodeids.append(_nodeid(element))
        counts[found.outcome if found else "passed"] += 1
        if found is not None:
            cases.append(found)
    exitstatus = 2 if errors else 1 if counts["failed"] or counts["error"] else 0
    if not nodeids and not errors:
        exitstatus = 5
    return TestReport(
        exitstatus=exitstatus,
        counts=TestCounts(
            collected=len(nodeids),
            passed=counts["passed"],
            failed=counts["failed"],
            errors=counts["error"] + len(errors),
            skipped=counts["skipped"],
        ),
        nodeids=nodeids,
        tests=cases,
        collection_errors=errors,
        truncated=cut,
    )
