"""A unified diff as styled Content (theme variables, so it follows the theme), and the
new-side line numbers a diff adds per file (the code pane marks them)."""

from __future__ import annotations

from collections.abc import Iterator

from textual.content import Content

from engine.edits.diff import Diff, LineKind, parse_diff
from engine.untrusted_text import visible_controls

ADDED = "$diff-added on $diff-added-background"
REMOVED = "$diff-removed on $diff-removed-background"
HUNK = "$diff-hunk"
FILE = "bold $text"
META = "$text-muted"
_LINE_STYLES: dict[LineKind, str] = {
    "added": ADDED,
    "removed": REMOVED,
    "no-newline": META,
    "context": "",
    "other": "",
}
_FILE_LINES = ("diff --git ", "--- ", "+++ ")
# Other header lines ("old mode", "Binary files ... differ") are left unstyled, as they always were.
_META_LINES = ("index ", "new file mode", "deleted file mode", "similarity ", "rename ")


def diff_content(diff: str) -> Content:
    """Each line of `diff` styled by what it is: file header, hunk, added, removed, context."""
    lines: list[Content] = []
    for line, style in _styled_lines(parse_diff(visible_controls(diff.rstrip("\n")))):
        lines.append(Content.styled(line, style) if line else Content(""))
    return Content("\n").join(lines)


def _styled_lines(diff: Diff) -> Iterator[tuple[str, str]]:
    for line in diff.preamble:
        yield line, ""
    for file in diff.files:
        for line in file.header:
            yield line, _header_style(line)
        for hunk in file.hunks:
            yield hunk.header, HUNK
            for diff_line in hunk.lines:
                yield diff_line.line, _LINE_STYLES[diff_line.kind]


def _header_style(line: str) -> str:
    if line.startswith(_FILE_LINES):
        return FILE
    return META if line.startswith(_META_LINES) else ""


def added_lines(diff: str) -> dict[str, set[int]]:
    """For each file of a unified diff, the line numbers (new side) its `+` lines are at."""
    found: dict[str, set[int]] = {}
    for file in parse_diff(diff).files:
        numbers = {line.new for line in file.added() if line.new is not None}
        if file.new_path is not None and numbers:
            found.setdefault(file.new_path, set()).update(numbers)
    return found
