"""A unified diff as styled Content (theme variables, so it follows the theme), and the
new-side line numbers a diff adds per file (the code pane marks them)."""

from __future__ import annotations

import re

from textual.content import Content

ADDED = "$diff-added on $diff-added-background"
REMOVED = "$diff-removed on $diff-removed-background"
HUNK = "$diff-hunk"
FILE = "bold $text"
META = "$text-muted"
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@")


def diff_content(diff: str) -> Content:
    """Each line of `diff` styled by what it is: file header, hunk, added, removed, context."""
    lines: list[Content] = []
    for line in diff.rstrip("\n").splitlines():
        lines.append(Content.styled(line, _style_of(line)) if line else Content(""))
    return Content("\n").join(lines)


def _style_of(line: str) -> str:
    if line.startswith(("+++ ", "--- ", "diff --git ")):
        return FILE
    if line.startswith(("index ", "new file mode", "deleted file mode", "similarity ", "rename ")):
        return META
    if line.startswith("@@"):
        return HUNK
    if line.startswith("+"):
        return ADDED
    if line.startswith("-"):
        return REMOVED
    if line.startswith("\\"):
        return META
    return ""


def added_lines(diff: str) -> dict[str, set[int]]:
    """For each file of a unified diff, the line numbers (new side) its `+` lines are at."""
    found: dict[str, set[int]] = {}
    path: str | None = None
    number = 0
    for line in diff.splitlines():
        if line.startswith("+++ "):
            target = line[4:].strip()
            path = target[2:] if target.startswith("b/") else None
            continue
        if line.startswith("--- ") or line.startswith("diff --git "):
            continue
        match = _HUNK.match(line)
        if match:
            number = int(match.group(1))
            continue
        if path is None or not number:
            continue
        if line.startswith("+"):
            found.setdefault(path, set()).add(number)
            number += 1
        elif line.startswith("-") or line.startswith("\\"):
            continue
        else:
            number += 1
    return found
