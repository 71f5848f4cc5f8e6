"""Part of a proposal, the way `git add -p` takes it: its diff's hunks (read by the one diff
reader, `engine/edits/diff.py`), some kept and the rest dropped, applied to the files as they
were before it. Pure: the kept files' texts come back as whole files, to be written by
`apply` like any edit (its path checks included); nothing here touches the disk."""

from __future__ import annotations

from collections.abc import Mapping, Set
from dataclasses import dataclass

from engine.edits.diff import FileDiff, Hunk, parse_diff
from engine.edits.safe_paths import clean_path
from engine.errors import EditFormatError


@dataclass(frozen=True)
class PartialEdit:
    """What keeping some hunks makes: each file a kept hunk changes, as its whole new text, and
    each dropped hunk named as the model is told of it."""

    texts: dict[str, str]
    dropped: list[str]


def hunk_count(diff: str) -> int:
    """How many hunks `diff` has, counted over its files in order (as the diff view counts)."""
    return sum(len(file.hunks) for file in parse_diff(diff).files)


def keep_hunks(
    diff: str,
    before: Mapping[str, str | None],
    after: Mapping[str, str | None],
    dropped: Set[int],
) -> PartialEdit:
    """The proposal's diff with the hunks numbered in `dropped` (0-based, over every file in
    the diff's order) left out, applied to `before` (each file's text before the proposal;
    None: absent). A kept hunk's lines are taken from `after` (the file as the proposal left
    it), so its line endings and a last line without a newline stay the proposal's; every
    hunk's old lines must be in `before` where its header says, else this refuses, as it does
    a path the proposal could not have edited (`clean_path`). A dropped hunk is named by its
    file and the lines it spans in the new text (a new file: not created)."""
    texts: dict[str, str] = {}
    named: list[str] = []
    first = 0
    for file in parse_diff(diff).files:
        path = clean_path(file.path)
        if path not in before or path not in after:
            raise EditFormatError([f"{path}: the diff names a file the proposal did not edit"])
        kept = [first + i not in dropped for i in range(len(file.hunks))]
        first += len(file.hunks)
        if not any(kept):
            named.extend(_whole_file_dropped(path, file, before[path]))
            continue
        text, lines = _partial(path, file, before[path], after[path], kept)
        texts[path] = text
        named.extend(f"{path} {said}" for said in lines)
    return PartialEdit(texts=texts, dropped=named)


def _whole_file_dropped(path: str, file: FileDiff, before: str | None) -> list[str]:
    if before is None:
        return [f"{path} (a new file: not created)"]
    return [
        f"{path} {_lines(_start(hunk.old_start, hunk.old_length), hunk.old_length)}"
        for hunk in file.hunks
    ]


def _partial(
    path: str, file: FileDiff, before: str | None, after: str | None, kept: list[bool]
) -> tuple[str, list[str]]:
    """The file with only its kept hunks, and the dropped ones' line ranges in that text."""
    old = (before or "").splitlines(keepends=True)
    new = (after or "").splitlines(keepends=True)
    out: list[str] = []
    read = 0  # how far `old` has been copied
    dropped: list[str] = []
    for hunk, keep in zip(file.hunks, kept, strict=True):
        start = _start(hunk.old_start, hunk.old_length)
        if start < read or start + hunk.old_length > len(old):
            raise _mismatch(path, hunk)
        taken = old[start : start + hunk.old_length]
        _same(path, hunk, taken, [ln.text for ln in hunk.lines if ln.kind in _OLD])
        out.extend(old[read:start])
        if keep:
            begin = _start(hunk.new_start, hunk.new_length)
            given = new[begin : begin + hunk.new_length]
            _same(path, hunk, given, [ln.text for ln in hunk.lines if ln.kind in _NEW])
            out.extend(given)
        else:
            dropped.append(_lines(len(out), hunk.old_length))
            out.extend(taken)
        read = start + hunk.old_length
    out.extend(old[read:])
    return "".join(out), dropped


_OLD = ("context", "removed")
_NEW = ("context", "added")


def _start(start: int, length: int) -> int:
    """A hunk side's first line as an index: `-0,0` (nothing) sits before line 1, and a side
    of no lines sits after the line its header names."""
    return start if length == 0 else start - 1


def _lines(index: int, length: int) -> str:
    if length <= 1:
        return f"line {index + 1}" if length else f"after line {index}"
    return f"lines {index + 1}-{index + length}"


def _same(path: str, hunk: Hunk, file_lines: list[str], diff_lines: list[str]) -> None:
    if len(file_lines) != len(diff_lines) or any(
        _bare(line) != text for line, text in zip(file_lines, diff_lines, strict=False)
    ):
        raise _mismatch(path, hunk)


def _bare(line: str) -> str:
    """A file's line as the diff has it: without its newline (\\r\\n or \\n)."""
    if line.endswith("\n"):
        line = line[:-1]
    return line.removesuffix("\r")


def _mismatch(path: str, hunk: Hunk) -> EditFormatError:
    return EditFormatError(
        [f"{path}: the hunk {hunk.header} does not match the file; review the proposal again"]
    )
