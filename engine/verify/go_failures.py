"""What one Go test printed, read as a failure: Go's `file_test.go:9: message` lines and the
`got X, want Y` convention, or a panic and its goroutine stack. Pure; used by `go_report`.
"""

from __future__ import annotations

import re

from engine.verify.parsers import relative
from engine.verify.results import Frame, TestCase

_TEST_LINE = re.compile(r"^\s+(?P<file>[\w.\-]+\.go):(?P<line>\d+): (?P<msg>.*)$")
_PANIC = re.compile(r"^\s*panic: (?P<msg>.*?)(?: \[recovered\])?$")
STACK_CALL = re.compile(r"^(?P<func>[\w.\-/()*\[\]{}]+)\(.*\)$")
STACK_FILE = re.compile(r"^\t(?P<file>\S+\.go):(?P<line>\d+)(?: \+0x[0-9a-f]+)?$")
FRAMEWORK = re.compile(r"^\s*(=== (RUN|PAUSE|CONT|NAME)|--- (PASS|FAIL|SKIP):|PASS$|FAIL$|ok\s)")
_TESTIFY_VALUE = re.compile(r"^(expected|actual)\s*:\s?(.*)$", re.MULTILINE)
_TESTIFY_FIELD = re.compile(r"^(Error|Messages):\s*(.*)$", re.MULTILINE)
_COMPARISONS = (
    re.compile(r"\bgot:? (?P<actual>.+?),? want:? (?P<expected>.+)$"),
    re.compile(r"\bwant:? (?P<expected>.+?),? got:? (?P<actual>.+)$"),
    re.compile(r"= (?P<actual>.+?), want (?P<expected>.+)$"),
)


def _in_dir(directory: str, file: str) -> str:
    return f"{directory}/{file}" if directory else file


def _stack(lines: list[str], roots: list[str]) -> list[Frame]:
    """Project frames of the first goroutine's trace, outermost last (as Go prints them)."""
    frames: list[Frame] = []
    function = ""
    for line in lines:
        if match := STACK_CALL.match(line):
            function = match["func"].rsplit("/", 1)[-1]
        elif match := STACK_FILE.match(line):
            path = relative(match["file"], roots)
            if not path.startswith("/") and not path.startswith("_testmain"):
                frames.append(Frame(file=path, line=int(match["line"]), function=function))
        elif frames and not line.strip():
            break
    return frames


def comparison(message: str) -> tuple[str | None, str | None]:
    """(expected, actual) by Go's `got X, want Y` convention, or testify's `expected:` and
    `actual  :` lines."""
    for pattern in _COMPARISONS:
        if match := pattern.search(message.split("\n", 1)[0]):
            return match["expected"].strip(), match["actual"].strip()
    values: dict[str, str] = {}
    for match in _TESTIFY_VALUE.finditer(message):
        values.setdefault(match[1], match[2].strip())
    return values.get("expected"), values.get("actual")


def _headline(message: str) -> str:
    """The failure in a line: testify's `Error:` (and `Messages:`) under its `Error Trace:`."""
    if not message.lstrip().startswith("Error Trace:"):
        return message.strip()
    fields: dict[str, str] = {}
    for match in _TESTIFY_FIELD.finditer(message):
        fields.setdefault(match[1], match[2].strip())
    said = " ".join(v for v in (fields.get("Error"), fields.get("Messages")) if v)
    return said or message.strip()


def go_case(
    nodeid: str, name: str, output: list[str], directory: str, roots: list[str], outcome: str
) -> TestCase:
    """A test that did not pass, from what it printed: its first `file.go:N: message` line
    (file made project-relative by the package's `directory`), or its panic and stack."""
    messages: list[tuple[str, int, str]] = []
    captured: list[str] = []
    panic: str | None = None
    frames: list[Frame] = []
    for index, line in enumerate(output):
        if match := _TEST_LINE.match(line):
            messages.append((match["file"], int(match["line"]), match["msg"]))
        elif messages and line.startswith("        "):
            file, number, text = messages[-1]
            messages[-1] = (file, number, f"{text}\n{line.strip()}")
        elif panic is None and (match := _PANIC.match(line)):
            panic = match["msg"]
            frames = _stack(output[index:], roots)
        elif panic is None and not FRAMEWORK.match(line) and line.strip():
            captured.append(line)
    if outcome == "skipped":
        reason = messages[0][2] if messages else None
        file, line_no = (
            (_in_dir(directory, messages[0][0]), messages[0][1]) if messages else ("", 0)
        )
        return TestCase(
            nodeid=nodeid, outcome="skipped", file=file, line=line_no, skip_reason=reason
        )
    if panic is not None:
        test_frames = [f for f in frames if f.file.endswith("_test.go")]
        test_frame = test_frames[0] if test_frames else None
        return TestCase(
            nodeid=nodeid,
            outcome=outcome,
            file=test_frame.file if test_frame else "",
            line=test_frame.line if test_frame else 0,
            exception_type="panic",
            exception_message=panic,
            test_frame=test_frame,
            frame=frames[0] if frames else None,
            captured="\n".join(captured[-40:]),
        )
    if not messages:  # an example's got:/want: output, or a test that printed and failed
        said = "\n".join(captured[:20]) or None
        return TestCase(nodeid=nodeid, outcome=outcome, exception_message=said)
    file, number, message = messages[0]
    where = Frame(file=_in_dir(directory, file), line=number, function=name.split("/")[0])
    expected, actual = comparison(message)
    return TestCase(
        nodeid=nodeid,
        outcome=outcome,
        file=where.file,
        line=number,
        explanation="\n".join(m[2] for m in messages[:10]).strip(),
        exception_message=_headline(message),
        expected=expected,
        actual=actual,
        test_frame=where,
        captured="\n".join(captured[-40:]),
    )
