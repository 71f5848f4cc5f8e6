"""Unified diffs (git's, and difflib's as the review screen builds them) read into files, hunks
and lines numbered on both sides: the one reader of diffs, for the repair packet's anchor, the
test diff of a suspicious pass and the app's diff pane. Pure, and it keeps every line it reads.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

LineKind = Literal["context", "added", "removed", "no-newline", "other"]

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_C_ESCAPES = {"n": b"\n", "t": b"\t", '"': b'"', "\\": b"\\", "a": b"\a", "b": b"\b"}


@dataclass(frozen=True)
class DiffLine:
    """One line of a hunk, with its line numbers in the old and the new file (None where the
    line is not in that file). `other` is a line after the hunk's counted lines that starts
    nothing new: git writes none, a hand-made diff might."""

    kind: LineKind
    line: str  # as in the diff, marker included
    old: int | None = None
    new: int | None = None

    @property
    def text(self) -> str:
        """The line of the file, without the diff's marker."""
        return self.line[1:]


@dataclass(frozen=True)
class Hunk:
    """One `@@` section: where it sits in the old and the new file, and its lines."""

    header: str  # the "@@ -a,b +c,d @@" line as in the diff
    old_start: int
    old_length: int
    new_start: int
    new_length: int
    lines: tuple[DiffLine, ...]

    @property
    def new_range(self) -> tuple[int, int] | None:
        """First and last line of the new file this hunk covers; none if it only removes."""
        if not self.new_length:
            return None
        return self.new_start, self.new_start + self.new_length - 1


@dataclass(frozen=True)
class FileDiff:
    """One file's part of a diff: its header lines (`diff --git`, `index`, modes, renames,
    `---`, `+++`) and its hunks."""

    header: tuple[str, ...]
    old_path: str | None  # None: the file is new
    new_path: str | None  # None: the file is deleted
    hunks: tuple[Hunk, ...]

    @property
    def path(self) -> str:
        """The file's path: the new one, or the old one for a deleted file."""
        return self.new_path or self.old_path or ""

    @property
    def lines(self) -> list[str]:
        """Every line of this file's part, in the diff's order."""
        lines = list(self.header)
        for hunk in self.hunks:
            lines.append(hunk.header)
            lines.extend(line.line for line in hunk.lines)
        return lines

    @property
    def text(self) -> str:
        """This file's part of the diff, ending with a newline."""
        return "\n".join(self.lines) + "\n"

    def added(self) -> list[DiffLine]:
        return [line for hunk in self.hunks for line in hunk.lines if line.kind == "added"]


@dataclass(frozen=True)
class Diff:
    """A whole diff: what comes before its first file, then each file's part in order."""

    preamble: tuple[str, ...]  # lines before the first file (git diff-tree's commit id)
    files: tuple[FileDiff, ...]


def parse_diff(text: str) -> Diff:
    """Read a unified diff. Lines end at \\n (a CRLF file's \\r is dropped with it); a hunk's
    counts say which lines are its own, so an added line that looks like a header stays one."""
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    if lines and not lines[-1]:
        lines.pop()  # the final newline ends the last line, it does not start another
    reader = _Reader(lines)
    preamble: list[str] = []
    while not reader.done and not reader.at_file_start():
        preamble.append(reader.take())
    files: list[FileDiff] = []
    while not reader.done:
        files.append(_file(reader))
    return Diff(preamble=tuple(preamble), files=tuple(files))


@dataclass
class _Reader:
    """The diff's lines and how far they have been read."""

    lines: list[str]
    index: int = 0

    @property
    def done(self) -> bool:
        return self.index >= len(self.lines)

    def peek(self) -> str:
        return self.lines[self.index]

    def take(self) -> str:
        self.index += 1
        return self.lines[self.index - 1]

    def at_file_start(self, header: list[str] | None = None) -> bool:
        """Whether the next line starts a file: `diff --git`, or a `---` line with its `+++`
        (difflib's diffs have no `diff --git`). Given the `header` read so far of a file whose
        `---` has not come yet, that `---` is the file's own and starts nothing."""
        line = self.peek()
        if line.startswith("diff --git "):
            return True
        if not line.startswith("--- ") or self.index + 1 >= len(self.lines):
            return False
        if not self.lines[self.index + 1].startswith("+++ "):
            return False
        return header is None or any(h.startswith("--- ") for h in header)


@dataclass
class _Paths:
    """A file's header lines as they are read, and the paths they name."""

    old: str | None = None
    new: str | None = None
    headers: list[str] = field(default_factory=list)

    def read(self, line: str) -> None:
        """What a header line says of the paths; `---`/`+++` say it best, so they come last."""
        if line.startswith("diff --git "):
            self.old, self.new = _git_line_paths(line.removeprefix("diff --git "))
        elif line.startswith("new file mode"):
            self.old = None
        elif line.startswith("deleted file mode"):
            self.new = None
        elif line.startswith("rename from "):
            self.old = _unquoted(line.removeprefix("rename from "))
        elif line.startswith("rename to "):
            self.new = _unquoted(line.removeprefix("rename to "))
        elif line.startswith("--- "):
            self.old = _header_path(line[4:], "a/")
        elif line.startswith("+++ "):
            self.new = _header_path(line[4:], "b/")
        self.headers.append(line)


def _file(reader: _Reader) -> FileDiff:
    paths = _Paths()
    paths.read(reader.take())
    while not reader.done and not _HUNK.match(reader.peek()):
        if reader.at_file_start(paths.headers):
            break
        paths.read(reader.take())
    hunks: list[Hunk] = []
    while not reader.done and (match := _HUNK.match(reader.peek())):
        hunks.append(_hunk(reader, reader.take(), match))
    return FileDiff(
        header=tuple(paths.headers), old_path=paths.old, new_path=paths.new, hunks=tuple(hunks)
    )


def _hunk(reader: _Reader, header: str, match: re.Match[str]) -> Hunk:
    old_start, new_start = int(match[1]), int(match[3])
    old_length = int(match[2]) if match[2] is not None else 1
    new_length = int(match[4]) if match[4] is not None else 1
    old, new = old_start, new_start
    old_left, new_left = old_length, new_length
    lines: list[DiffLine] = []
    while not reader.done:
        line = reader.peek()
        counted = old_left > 0 or new_left > 0
        if line.startswith("\\"):  # "\ No newline at end of file", after the line it is about
            lines.append(DiffLine("no-newline", reader.take()))
        elif counted and line.startswith("+"):
            lines.append(DiffLine("added", reader.take(), new=new))
            new, new_left = new + 1, new_left - 1
        elif counted and line.startswith("-"):
            lines.append(DiffLine("removed", reader.take(), old=old))
            old, old_left = old + 1, old_left - 1
        elif counted and line[:1] in {" ", ""}:  # an empty line: context whose space was lost
            lines.append(DiffLine("context", reader.take(), old=old, new=new))
            old, new, old_left, new_left = old + 1, new + 1, old_left - 1, new_left - 1
        elif _HUNK.match(line) or reader.at_file_start():
            break
        else:
            lines.append(DiffLine("other", reader.take()))
            old_left = new_left = 0  # the counts were wrong: trust them no further
    return Hunk(header, old_start, old_length, new_start, new_length, tuple(lines))


def _header_path(header: str, prefix: str) -> str | None:
    """The path of a `---`/`+++` line: `b/pkg/a.py` is `pkg/a.py`; `/dev/null` is none."""
    path = _unquoted(header.split("\t", 1)[0])
    if path == "/dev/null":
        return None
    return path.removeprefix(prefix)


def _git_line_paths(names: str) -> tuple[str, str]:
    """The two paths of a `diff --git a/x b/x` line, either of them maybe quoted."""
    if names.startswith('"'):
        end = _closing_quote(names)
        old, new = names[: end + 1], names[end + 2 :]
    elif names.endswith('"') and (cut := names.rfind(' "')) != -1:
        old, new = names[:cut], names[cut + 1 :]
    else:
        old, found, new = names.partition(" b/")
        new = "b/" + new if found else names[len(names) // 2 + 1 :]
        old = old if found else names[: len(names) // 2]
    return _unquoted(old).removeprefix("a/"), _unquoted(new).removeprefix("b/")


def _closing_quote(names: str) -> int:
    """The index of the quote that closes the quoted path `names` starts with."""
    index = 1
    while index < len(names) and names[index] != '"':
        index += 2 if names[index] == "\\" else 1
    return index


def _unquoted(path: str) -> str:
    if len(path) >= 2 and path.startswith('"') and path.endswith('"'):
        return _c_unquote(path[1:-1])
    return path


def _c_unquote(quoted: str) -> str:
    """Undo git's C-style quoting of unusual paths (octal bytes, \\", \\\\, \\t, \\n)."""
    raw = bytearray()
    i = 0
    while i < len(quoted):
        char = quoted[i]
        if char == "\\" and i + 1 < len(quoted):
            following = quoted[i + 1]
            if following in "01234567":
                raw.append(int(quoted[i + 1 : i + 4], 8))
                i += 4
                continue
            raw += _C_ESCAPES.get(following, following.encode())
            i += 2
            continue
        raw += char.encode()
        i += 1
    return raw.decode("utf-8", "replace")
