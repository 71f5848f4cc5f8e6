"""Finding a search text in a file, and replacing it: exactly if it occurs once, else line by
line ignoring trailing whitespace and a constant shift of indentation, else also reading a tab
as 4 (then 8) spaces. Pure.

A search that is missing or ambiguous is an `EditFormatError` that shows the model where to look.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from engine.errors import EditFormatError

_CLOSEST_LINES_SHOWN = 8
_CLOSEST_MIN_RATIO = 0.5
_FIRST_LINE_CHARS = 60
# How wide a tab is read when the file and the search indent differently (one with tabs, the
# other with spaces, as models re-indent the code they quote): an editor's 4, then Python's 8.
_TAB_WIDTHS = (4, 8)


@dataclass(frozen=True)
class _Shift:
    """How much deeper (`add`) or shallower (`remove` characters) the file's block is indented
    than the model's search text; the replacement is re-indented the same way. With a
    `tab_width`, indentation is compared with tabs read as that many spaces, and `retab`
    writes the replacement's indentation back as tabs, the file's style."""

    add: str = ""
    remove: int = 0
    tab_width: int = 0
    retab: bool = False

    def apply(self, line: str) -> str:
        if not line.strip():
            return ""
        if self.tab_width:
            line = _expand_indent(line, self.tab_width)
        indent = len(line) - len(line.lstrip())
        shifted = self.add + line[min(self.remove, indent) :]
        return _tab_indent(shifted, self.tab_width) if self.retab else shifted


def _indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _expand_indent(line: str, width: int) -> str:
    """`line` with the tabs of its indentation read as `width` columns."""
    indent = _indent_of(line)
    return indent.expandtabs(width) + line[len(indent) :]


def _tab_indent(line: str, width: int) -> str:
    """`line` (indented with spaces) indented with a tab per `width` spaces, as the file is."""
    columns = len(_indent_of(line))
    return "\t" * (columns // width) + " " * (columns % width) + line[columns:]


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
    block = _replacement(lines[start:end], search_lines, replace_lines, shift, newline)
    if block and not lines[end - 1].endswith("\n"):
        block[-1] = block[-1].removesuffix(newline)  # the file ended without a newline
    return "".join(lines[:start] + block + lines[end:])


def _replacement(
    window: list[str], search: list[str], replace: list[str], shift: _Shift, newline: str
) -> list[str]:
    """The lines that take the matched `window`'s place: where the replacement repeats a line
    of the search unchanged (context a model quotes around its change), the file's own line,
    its trailing spaces and tabs kept; the rest re-indented by `shift`. The commit then
    holds the change the model made, not a rewrite of what it quoted."""
    matcher = difflib.SequenceMatcher(a=search, b=replace, autojunk=False)
    block: list[str] = []
    for tag, first, last, start, end in matcher.get_opcodes():
        if tag == "equal":
            block += window[first:last]
        else:
            block += [shift.apply(line) + newline for line in replace[start:end]]
    return block


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
    of indentation: (0-based first line, the shift). Only when nothing matches so, tabs
    against spaces: a tab read as 4 columns, and only if that finds nothing, as 8."""
    if not search:
        return []
    for tab_width in (0, *_TAB_WIDTHS):
        if tab_width and not _mixes_tabs_and_spaces(lines, search):
            break
        found: list[tuple[int, _Shift]] = []
        for start in range(len(lines) - len(search) + 1):
            shift = _match_at(lines[start : start + len(search)], search, tab_width)
            if shift is not None:
                found.append((start, shift))
        if found:
            return found
    return []


def _mixes_tabs_and_spaces(lines: list[str], search: list[str]) -> bool:
    """Whether one side indents with tabs where the other does not: else reading a tab as
    spaces cannot find what the exact comparison missed."""
    file_tabs = any("\t" in _indent_of(line) for line in lines)
    search_tabs = any("\t" in _indent_of(line) for line in search)
    search_spaces = any(" " in _indent_of(line) for line in search)
    return (file_tabs and search_spaces) or search_tabs


def _match_at(window: list[str], search: list[str], tab_width: int = 0) -> _Shift | None:
    shift: _Shift | None = None
    for actual, wanted in zip(window, search, strict=True):
        if not actual.strip() or not wanted.strip():
            if actual.strip() or wanted.strip():
                return None
            continue
        shift = shift or _shift_between(actual, wanted, tab_width)
        if shift is None or shift.apply(wanted).rstrip() != actual.rstrip():
            return None
    return shift


def _shift_between(actual: str, wanted: str, tab_width: int = 0) -> _Shift | None:
    retab = bool(tab_width) and "\t" in _indent_of(actual)
    if tab_width:
        actual, wanted = _expand_indent(actual, tab_width), _expand_indent(wanted, tab_width)
    have, want = _indent_of(actual), _indent_of(wanted)
    if have.startswith(want):
        return _Shift(add=have[len(want) :], tab_width=tab_width, retab=retab)
    if want.startswith(have):
        return _Shift(remove=len(want) - len(have), tab_width=tab_width, retab=retab)
    return None  # tabs against spaces: not the same block unless a tab is read as spaces


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
    which = f'the "search" that begins {_first_line(search)}'
    if closest is None:
        return (
            f"{path}: {which} was not found, and nothing in the file looks like it; quote "
            'lines that are in the file now, or send the whole file as "content"'
        )
    return (
        f"{path}: {which} was not found. The closest lines in the file are (line numbers are "
        f"not part of the file):\n{closest}\nCopy the lines exactly as they are now into "
        '"search".'
    )


def _first_line(search: list[str]) -> str:
    """The search's first line, quoted and cut short: which of several edits to one file
    missed, in the model's own words."""
    line = next((line.strip() for line in search if line.strip()), "")
    return repr(line if len(line) <= _FIRST_LINE_CHARS else line[:_FIRST_LINE_CHARS] + "...")


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
