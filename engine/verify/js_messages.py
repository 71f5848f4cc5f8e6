"""What a JavaScript test failure's text says: its error type and message, a matcher's expected
and received values (Jest's `Expected:`/`Received:`, Chai's `expected X to be Y` in Vitest), and
the stack frames inside the project. Pure; shared by `js_report` and `junit_report`.
"""

from __future__ import annotations

import re

from engine.verify.parsers import relative
from engine.verify.results import Frame

MAX_MESSAGE = 4000  # the packet shows far less; the rest only costs memory
_STACK = re.compile(
    r"^\s*at (?:(?P<func>.+?) \()?(?:file://)?(?P<file>[^()\s]+?):(?P<line>\d+):\d+\)?$"
)
ERROR_LINE = re.compile(r"^\s*(?:Error: )?(?P<type>[A-Z]\w*(?:Error|Exception)): (?P<msg>.*)$")
SYNTAX_AT = re.compile(r"^(?P<file>[^\s:]+): (?P<msg>.*?) \((?P<line>\d+):\d+\)$")
_EXPECTED = re.compile(r"^\s*Expected(?: [\w ]+)?: (?P<value>.*)$", re.MULTILINE)
_RECEIVED = re.compile(r"^\s*Received(?: [\w ]+)?: (?P<value>.*)$", re.MULTILINE)
_CHAI = re.compile(
    r"^expected (?P<actual>.+?) to (?:be|equal|deeply equal|strictly equal|have length|contain"
    r"|include|be close to|match) (?P<expected>.+?)(?: // .*)?$"
)


def unrooted(text: str, roots: list[str]) -> str:
    for root in roots:
        text = text.replace(root.rstrip("/") + "/", "")
    return text


def project_frames(text: str, roots: list[str]) -> list[Frame]:
    """Stack frames inside the project (relative, not in node_modules), innermost first."""
    frames = []
    for line in text.splitlines():
        if match := _STACK.match(line):
            path = relative(match["file"], roots)
            if path.startswith(("/", "<", "node:", "internal/")) or "node_modules/" in path:
                continue
            function = (match["func"] or "").removeprefix("Object.")
            frames.append(Frame(file=path, line=int(match["line"]), function=function))
    return frames


def without_stack(failure: str) -> str:
    """The failure without its stack."""
    lines = []
    for line in failure.splitlines():
        if _STACK.match(line):
            break
        lines.append(line)
    return "\n".join(lines).strip()


def comparison(message: str) -> tuple[str | None, str | None]:
    expected, received = _EXPECTED.search(message), _RECEIVED.search(message)
    if expected or received:
        return (
            expected["value"].strip() if expected else None,
            received["value"].strip() if received else None,
        )
    if match := _CHAI.match(message.split("\n", 1)[0].removeprefix("AssertionError: ")):
        return match["expected"], match["actual"]
    return None, None


def error_kind(message: str) -> tuple[str | None, str]:
    """(exception type, message): a matcher's failure is an AssertionError."""
    first = message.split("\n", 1)[0]
    if first.startswith(("expect(", "Error: expect(")) or first.startswith(
        ("expected ", "AssertionError: expected ")
    ):
        return "AssertionError", message.removeprefix("Error: ").removeprefix("AssertionError: ")
    if match := ERROR_LINE.match(first):
        rest = message.split("\n", 1)[1:] or [""]
        return match["type"], "\n".join([match["msg"], *rest]).strip()
    return None, message.removeprefix("Error: ")
