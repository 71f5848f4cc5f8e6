"""A unified diff as styled Content (theme variables, so it follows the theme): plain for the
diff pane, highlighted with its hunks' lines for the diff view; and the new-side line numbers
a diff adds per file (the code pane marks them)."""

from __future__ import annotations

from collections.abc import Iterator, Set
from dataclasses import dataclass

from textual.content import Content
from textual.highlight import highlight

from engine.edits.diff import Diff, Hunk, LineKind, parse_diff
from engine.text.untrusted import visible_controls
from tui.widgets.code.pane import language_of

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


# Highlighting runs on the UI thread as a diff is shown: a diff longer than this is shown
# with the plain line styles, so a huge (or hostile) answer cannot stall the screen.
HIGHLIGHT_LIMIT = 4000
_CODE_KINDS = ("context", "added", "removed")
_CODE_STYLES: dict[LineKind, str] = {"added": ADDED, "removed": REMOVED, "context": ""}


KEPT = "  ✓ kept"
DROPPED = "  ✗ dropped"


@dataclass(frozen=True)
class ReadableDiff:
    """A diff as the diff view shows it: its styled lines, the line each hunk starts on and
    the line after its last."""

    lines: tuple[Content, ...]
    hunks: tuple[int, ...]
    hunk_ends: tuple[int, ...] = ()

    @property
    def content(self) -> Content:
        return Content("\n").join(self.lines)

    def after(self, other: ReadableDiff) -> ReadableDiff:
        """`other`'s lines, then these (hunk lines renumbered)."""
        shift = len(other.lines)
        return ReadableDiff(
            lines=(*other.lines, *self.lines),
            hunks=(*other.hunks, *(line + shift for line in self.hunks)),
            hunk_ends=(*other.hunk_ends, *(line + shift for line in self.hunk_ends)),
        )

    def marked(self, dropped: Set[int]) -> Content:
        """The lines with each hunk's header marked kept or dropped (as `git add -p` takes
        them), a dropped hunk's lines dimmed to plain text."""
        lines = list(self.lines)
        for index, (start, end) in enumerate(zip(self.hunks, self.hunk_ends, strict=True)):
            if index in dropped:
                lines[start] = Content.assemble(
                    Content.styled(lines[start].plain, META), (DROPPED, "bold $text-error")
                )
                for line in range(start + 1, end):
                    lines[line] = Content.styled(lines[line].plain, "$text-disabled")
            else:
                lines[start] = Content.assemble(lines[start], (KEPT, "bold $text-success"))
        return Content("\n").join(lines)


def readable_diff(diff: str) -> ReadableDiff:
    """`diff` styled as `diff_content` styles it, the code of its hunks highlighted in its
    file's language (a removed line red, an added one green beneath the highlighting), with
    the line each hunk header is on (for hunk navigation)."""
    parsed = parse_diff(visible_controls(diff.rstrip("\n")))
    highlighted = diff.count("\n") <= HIGHLIGHT_LIMIT
    lines: list[Content] = [Content(line) for line in parsed.preamble]
    hunks: list[int] = []
    ends: list[int] = []
    for file in parsed.files:
        lines.extend(_styled(line, _header_style(line)) for line in file.header)
        language = language_of(file.path) if highlighted and file.path else "text"
        for hunk in file.hunks:
            hunks.append(len(lines))
            lines.append(Content.styled(hunk.header, HUNK))
            lines.extend(_hunk_lines(hunk, language))
            ends.append(len(lines))
    return ReadableDiff(lines=tuple(lines), hunks=tuple(hunks), hunk_ends=tuple(ends))


def _styled(line: str, style: str) -> Content:
    return Content.styled(line, style) if line and style else Content(line)


def _hunk_lines(hunk: Hunk, language: str) -> Iterator[Content]:
    """A hunk's lines; its code highlighted as one text, so a string or a comment that spans
    lines is read as one. A hunk whose code the highlighter splits differently (a line
    separator inside a line) is shown plain, line for line as in the diff."""
    code = [line.text for line in hunk.lines if line.kind in _CODE_KINDS]
    highlighted: list[Content] | None = None
    if language != "text" and code:
        highlighted = highlight("\n".join(code), language=language).split("\n")
        if len(highlighted) != len(code):
            highlighted = None
    shown = iter(highlighted or ())
    for line in hunk.lines:
        if line.kind not in _CODE_KINDS:
            yield _styled(line.line, _LINE_STYLES[line.kind])
            continue
        style = _CODE_STYLES[line.kind]
        text = next(shown, None) if highlighted is not None else None
        if text is None:
            yield _styled(line.line, style)
            continue
        marked = Content.assemble((line.line[:1], style), text)
        yield marked.stylize_before(style) if style else marked
