"""Finding a search text in a file, and replacing it: exactly if it occurs once, else line by
line ignoring trailing whitespace and a constant shift of indentation. Pure.

A search that is missing or ambiguous is an `EditFormatError` that shows the model where to look.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from engine.errors import EditFormatError

_CLOSEST_LINES_SHOWN = 8
_CLOSEST_MIN_RATIO = 0.5


@dataclass(frozen=True)
class _Shift:
    """How much deeper (`add`) or shallower (`remove` characters) the file's block is indented
    than the model's search text; the replacement is re-indented the same way."""

    add: str = ""
    remove: int = 0

    def apply(self, line: str) -> str:
        if not line.strip():
            return ""
        indent = len(line) - len(line.lstrip())
        return self.add + line[min(self.remove, indent) :]


def replace_once(path: str, text: str, search: str, replace: str, newline: str) -> str:
    """`text` with the one occurrence of `search` replaced: exactly, else whitespace-tolerant."""
    if not search.strip():
        raise EditFormatError(
            [
                f'{path}: "search" is empty; quote the lines to change, or send the whole file as '
                '"content"'
            ]
        )
    starts = _exact_starts(text, search)
    if len(starts) == 1:
        return text[: starts[0]] + replace + text[starts[0] + len(search) :]
    if starts:
        raise _ambiguous(path, [text.count("\n", 0, start) + 1 for start in starts])
    lines = _lines(text)
    search_lines, replace_lines = _trim_blank_edges(_bare_lines(search), _bare_lines(replace))
    matches = _tolerant_matches(lines, search_lines)
    if len(matches) > 1:
        raise _ambiguous(path, [start + 1 for start, _ in matches])
    if not matches:
        raise EditFormatError([_not_found(path, lines, search_lines)])
    start, shift = matches[0]
    end = start + len(search_lines)
    block = [shift.apply(line) + newline for line in replace_lines]
    if block and not lines[end - 1].endswith("\n"):
        block[-1] = block[-1].removesuffix(newline)  # the file ended without a newline
    return "".join(lines[:start] + block + lines[end:])


def _lines(text: str) -> list[str]:
    """The lines of `text` with their endings. Only \\n ends a line, as in an editor (str.splitlines
    would also split at form feeds and other separators a source file may hold)."""
    return re.findall(r"[^\n]*\n|[^\n]+\Z", text)


def _bare_lines(text: str) -> list[str]:
    """The lines of `text` without their endings (\\n or \\r\\n)."""
    return [line.rstrip("\r\n") for line in _lines(text)]


def _exact_starts(text: str, search: str) -> list[int]:
    starts: list[int] = []
    start = text.find(search)
    while start != -1:
        starts.append(start)
        start = text.find(search, start + 1)
    return starts


def _trim_blank_edges(search: list[str], replace: list[str]) -> tuple[list[str], list[str]]:
    """Drop blank lines at both ends of the search, and as many at each end of the replacement."""
    while search and not search[0].strip():
        search = search[1:]
        replace = replace[1:] if replace and not replace[0].strip() else replace
    while search and not search[-1].strip():
        search = search[:-1]
        replace = replace[:-1] if replace and not replace[-1].strip() else replace
    return search, replace


def _tolerant_matches(lines: list[str], search: list[str]) -> list[tuple[int, _Shift]]:
    """Where `search` matches whole lines, ignoring trailing whitespace and a constant shift
    of indentation: (0-based first line, the shift)."""
    if not search:
        return []
    found: list[tuple[int, _Shift]] = []
    for start in range(len(lines) - len(search) + 1):
        shift = _match_at(lines[start : start + len(search)], search)
        if shift is not None:
            found.append((start, shift))
    return found


def _match_at(window: list[str], search: list[str]) -> _Shift | None:
    shift: _Shift | None = None
    for actual, wanted in zip(window, search, strict=True):
        if not actual.strip() or not wanted.strip():
            if actual.strip() or wanted.strip():
                return None
            continue
        shift = shift or _shift_between(actual, wanted)
        if shift is None or shift.apply(wanted).rstrip() != actual.rstrip():
            return None
    return shift


def _shift_between(actual: str, wanted: str) -> _Shift | None:
    have = actual[: len(actual) - len(actual.lstrip())]
    want = wanted[: len(wanted) - len(wanted.lstrip())]
    if have.startswith(want):
        return _Shift(add=have[len(want) :])
    if want.startswith(have):
        return _Shift(remove=len(want) - len(have))
    return None  # tabs against spaces: not the same block


def _ambiguous(path: str, line_numbers: list[int]) -> EditFormatError:
    where = ", ".join(str(n) for n in line_numbers)
    return EditFormatError(
        [
            f'{path}: "search" occurs {len(line_numbers)} times (at lines {where}); include more '
            "of the surrounding lines so it occurs exactly once"
        ]
    )


def _not_found(path: str, lines: list[str], search: list[str]) -> str:
    """The miss, with the file's lines most like the search (Aider's "did you mean")."""
    closest = _closest_lines([line.rstrip("\r\n") for line in lines], search)
    if closest is None:
        return (
            f'{path}: "search" was not found, and nothing in the file looks like it; quote '
            'lines that are in the file now, or send the whole file as "content"'
        )
    return (
        f'{path}: "search" was not found. The closest lines in the file are (line numbers are '
        f"not part of the file):\n{closest}\nCopy the lines exactly as they are now into "
        '"search".'
    )


def _closest_lines(lines: list[str], search: list[str]) -> str | None:
    size = max(1, len(search))
    matcher = difflib.SequenceMatcher(autojunk=False)
    matcher.set_seq2("\n".join(line.strip() for line in search))  # analysed once, reused
    best_ratio, best_start = 0.0, 0
    for start in range(max(1, len(lines) - size + 1)):
        matcher.set_seq1("\n".join(line.strip() for line in lines[start : start + size]))
        if matcher.real_quick_ratio() <= best_ratio or matcher.quick_ratio() <= best_ratio:
            continue
        ratio = matcher.ratio()
        if ratio > best_ratio:
            best_ratio, best_start = ratio, start
    if best_ratio < _CLOSEST_MIN_RATIO:
        return None
    window = lines[best_start : best_start + size]
    shown = [
        f"{best_start + offset + 1:>5} | {line}"
        for offset, line in enumerate(window[:_CLOSEST_LINES_SHOWN])
    ]
    if len(window) > _CLOSEST_LINES_SHOWN:
        shown.append(f"      ... ({len(window) - _CLOSEST_LINES_SHOWN} more lines)")
    return "\n".join(shown)
