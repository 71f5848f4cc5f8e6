"""The edit protocol (DESIGN §4.1): what the model must answer, how it is read, how it is applied.

`parse` and the matching are pure; `apply` is the one step that writes files, all or nothing.
Every way an answer can be unusable is an `EditFormatError` whose message goes to the model.
"""

from __future__ import annotations

import ast
import difflib
import json
import os
import re
import secrets
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from sandbox.errors import FixloopError

EditFormat = Literal["json", "whole"]

_REFUSED_DIRS = frozenset({".git", ".fixloop"})
_EXPLANATION_CHARS = 200
_CLOSEST_LINES_SHOWN = 8
_CLOSEST_MIN_RATIO = 0.5
_STRAY_BRACES = 32  # bounds the rescans of an answer full of unmatched braces

_JSON_SHAPE = """\
{"explanation": "one line: what you changed and why",
 "edits": [
  {"path": "pkg/mod.py", "search": "exact lines from the file now", "replace": "their new text"},
  {"path": "pkg/new_module.py", "content": "the whole text of a new file"}
 ]}"""

_WHOLE_SHAPE = """\
One line: what you changed and why.

pkg/mod.py
```python
<the complete new content of pkg/mod.py>
```"""

_WHOLE_AGAIN = (
    "Answer again: one line saying what you changed and why; then, for each file you change, "
    "its path alone on a line and right after it a fenced python code block with the whole "
    "corrected file, every line of it."
)
_SHAPES: dict[EditFormat, str] = {"json": _JSON_SHAPE, "whole": _WHOLE_SHAPE}
_PATH_HINT = "Use a path relative to the project root, like pkg/mod.py."
_APPLY_HINT = "None of your edits were applied. Fix these and send all your edits again."


class EditFormatError(FixloopError):
    """The model's answer cannot be used. `str()` is written for the model's next prompt."""

    def __init__(self, problems: list[str], hint: str = "") -> None:
        self.problems = problems
        listed = "\n".join(f"- {problem}" for problem in problems)
        message = f"Your answer could not be used:\n{listed}"
        super().__init__(f"{message}\n\n{hint}" if hint else message)


class EditWriteError(FixloopError):
    """The edits were valid but the files could not be written (permissions, disk full)."""


class Edit(BaseModel):
    """One change to one file: either `search` → `replace`, or the whole new `content`."""

    model_config = ConfigDict(frozen=True)

    path: str
    search: str | None = None
    replace: str | None = None
    content: str | None = None


class Proposal(BaseModel):
    """What the model proposed in one answer."""

    model_config = ConfigDict(frozen=True)

    explanation: str
    edits: list[Edit]
    format: EditFormat


class AppliedEdits(BaseModel):
    """What `apply` did: files written, and files whose new content equals what was there."""

    model_config = ConfigDict(frozen=True)

    files: list[str]
    unchanged: list[str]


def instructions(format: EditFormat, example_path: str | None = None) -> str:
    """The system-prompt paragraph that tells the model how to answer, with a tiny example.

    Small models copy the example's path literally: give them a real one when known.
    """
    text = _instructions(format)
    return text.replace("pkg/mod.py", example_path) if example_path else text


def _instructions(format: EditFormat) -> str:
    if format == "json":
        return (
            "Answer with one JSON object (a ```json fence around it is fine):\n"
            f"{_JSON_SHAPE}\n"
            'Paths are relative to the project root. "search" must be copied exactly from the '
            "current file, with enough lines to occur exactly once; for several places, give "
            'several edits. Use "content" only for a new file or to rewrite a whole file. '
            "Write newlines inside strings as \\n."
        )
    # Terse, and no placeholder block: the small models this format is for copy an example
    # block verbatim, and an invitation to explain makes them answer in prose only.
    return (
        "Reply with the path of the file you fix alone on the first line (for example: "
        "pkg/mod.py), then a fenced python code block holding the whole corrected file, every "
        "line of it. If you fix several files, repeat this for each. No explanations."
    )


# --- parsing ---------------------------------------------------------------------------------


def parse(text: str, format: EditFormat) -> Proposal:
    """Read the model's answer in `format`; an unusable answer is an `EditFormatError`."""
    if not text.strip():
        raise _shape_error(["your answer is empty"], format)
    if format == "json":
        return _parse_json(text)
    return _parse_whole(text)


def _shape_error(problems: list[str], format: EditFormat) -> EditFormatError:
    if format == "whole":  # no example block: small models copy it verbatim
        return EditFormatError(problems, _WHOLE_AGAIN)
    return EditFormatError(problems, f"Answer again in this shape:\n{_SHAPES[format]}")


def _parse_json(text: str) -> Proposal:
    answer = _find_json_object(text)
    problems: list[str] = []
    explanation = answer.get("explanation", "")
    if not isinstance(explanation, str):
        problems.append('"explanation" must be a string of one line')
        explanation = ""
    edits = [
        edit
        for number, raw in enumerate(_raw_edits(answer, problems), start=1)
        if (edit := _json_edit(number, raw, problems)) is not None
    ]
    if problems:
        raise _shape_error(problems, "json")
    return Proposal(explanation=explanation.strip(), edits=edits, format="json")


def _raw_edits(answer: dict[str, Any], problems: list[str]) -> list[Any]:
    """The answer's list of edit objects; a lone edit object counts as a list of one."""
    if "edits" not in answer:
        if "path" in answer:
            return [answer]
        problems.append('"edits" is missing: give a list of edit objects')
        return []
    edits = answer["edits"]
    if isinstance(edits, dict):
        return [edits]
    if not isinstance(edits, list):
        problems.append('"edits" must be a list of edit objects')
        return []
    if not edits:
        problems.append('"edits" is empty: give at least one edit')
    return edits


def _json_edit(number: int, raw: Any, problems: list[str]) -> Edit | None:
    """One edit object checked field by field; its problems are added to `problems`."""
    if not isinstance(raw, dict):
        problems.append(f"edit {number} is not an object with a path")
        return None
    path = raw.get("path")
    where = f"edit {number} ({path})" if isinstance(path, str) else f"edit {number}"
    found: list[str] = []
    for field in ("path", "search", "replace", "content"):
        if field in raw and not isinstance(raw[field], str):
            found.append(f'{where}: "{field}" must be a string')
    if "path" not in raw:
        found.append(f'{where}: "path" is missing')
    if "content" in raw and ("search" in raw or "replace" in raw):
        found.append(f'{where}: give either "content" or "search" and "replace", not both')
    elif "search" in raw and "replace" not in raw:
        found.append(f'{where}: has "search" but no "replace"')
    elif "replace" in raw and "search" not in raw:
        found.append(f'{where}: has "replace" but no "search"')
    elif "content" not in raw and "search" not in raw:
        found.append(f'{where}: needs "search" and "replace", or the whole file as "content"')
    if not found:
        try:
            return Edit(**{**raw, "path": _clean_path(raw["path"])})
        except EditFormatError as error:
            found.extend(error.problems)
    problems.extend(found)
    return None


def _find_json_object(text: str) -> dict[str, Any]:
    """The answer's JSON object: in a ```json fence if there is one, else the first that parses.

    An object with "edits" (or a lone edit with "path") wins over stray objects in the prose.
    """
    fenced = [m.group(1) for m in re.finditer(r"```[ \t]*json[^\n]*\n(.*?)```", text, re.I | re.S)]
    others: list[dict[str, Any]] = []
    first_error: str | None = None
    for source in [*fenced, text]:
        for candidate in _balanced_objects(source):
            try:
                value = json.loads(candidate, strict=False)  # raw newlines inside strings are ok
            except json.JSONDecodeError as error:
                first_error = first_error or _json_error(candidate, error)
                continue
            if isinstance(value, dict):
                if "edits" in value or "path" in value:
                    return value
                others.append(value)
    if others:
        return others[0]
    if first_error is not None:
        raise _shape_error([first_error], "json")
    problem = (
        "your JSON object is never closed; send it complete (shorter, if it was cut off)"
        if "{" in text
        else "there is no JSON object in your answer"
    )
    raise _shape_error([problem], "json")


def _json_error(candidate: str, error: json.JSONDecodeError) -> str:
    lines = candidate.splitlines() or [""]
    shown = lines[min(error.lineno, len(lines)) - 1].strip()[:120]
    trailing_comma = candidate[: error.pos].rstrip().endswith(",")
    why = "a trailing comma, which JSON does not allow" if trailing_comma else error.msg
    return (
        f"your JSON does not parse: {why} at line {error.lineno}, column {error.colno} "
        f"(that line is: {shown})"
    )


def _balanced_objects(text: str) -> Iterator[str]:
    """Each balanced {...} span of `text`, in order, with braces inside JSON strings ignored.

    A span that is yielded is never searched inside: an edit object nested in an outer object
    that does not parse must not pass for the whole answer.
    """
    position, stray = 0, 0
    while (start := text.find("{", position)) != -1 and stray <= _STRAY_BRACES:
        end = _object_end(text, start)
        if end is None:  # a stray "{" in the prose: look again just after it
            position, stray = start + 1, stray + 1
            continue
        yield text[start:end]
        position = end


def _object_end(text: str, start: int) -> int | None:
    """The index just past the "}" that closes the "{" at `start`; none if it never closes."""
    depth, in_string, escaped = 0, False, False
    for index in range(start, len(text)):
        char = text[index]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return index + 1
    return None


_FENCE_OPEN = re.compile(r"^\s*(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`\s]*)[^`]*$")
_PATH_DECORATION = re.compile(r"^(?:#+\s*|[-*]\s+|(?:file(?:name)?|path)\s*:\s*)", re.I)
_PATH_CHARS = re.compile(r"[\w.\-/\\~@+:]+")
_NAMES_WITHOUT_DOT = frozenset({"Makefile", "Dockerfile", "LICENSE", "Procfile", "Justfile"})


@dataclass(frozen=True)
class _CodeBlock:
    """A fenced block of a `whole` answer and the line right above it (blank lines skipped)."""

    line: int  # 1-based line of the opening fence
    info: str  # the language tag
    body: list[str]
    above: str | None  # the prose line above, if any


def _parse_whole(text: str) -> Proposal:
    blocks, prose, problems = _split_whole(text)
    edits: list[Edit] = []
    path_lines: set[str] = set()
    for block in blocks:
        edit = _whole_edit(block, problems)
        if edit is not None:
            edits.append(edit)
            path_lines.add(block.above or "")
    if not blocks and not problems:
        problems.append("there is no fenced code block with a file's complete content")
    if problems:
        raise _shape_error(problems, "whole")
    explanation = next((line for line in prose if line not in path_lines), "")
    return Proposal(explanation=explanation[:_EXPLANATION_CHARS], edits=edits, format="whole")


def _split_whole(text: str) -> tuple[list[_CodeBlock], list[str], list[str]]:
    """The fenced blocks, the non-empty prose lines (stripped), and problems (an unclosed fence)."""
    lines = text.splitlines()
    blocks: list[_CodeBlock] = []
    prose: list[str] = []
    problems: list[str] = []
    above: str | None = None
    index = 0
    while index < len(lines):
        opening = _FENCE_OPEN.match(lines[index])
        if opening is None:
            if lines[index].strip():
                above = lines[index].strip()
                prose.append(above)
            index += 1
            continue
        end = _closing_fence(lines, index + 1, opening.group("fence"))
        if end is None:
            problems.append(
                f"the code block at line {index + 1} of your answer is never closed with "
                f"{opening.group('fence')}; send every file complete"
            )
            break
        blocks.append(_CodeBlock(index + 1, opening.group("info"), lines[index + 1 : end], above))
        above = None
        index = end + 1
    return blocks, prose, problems


def _closing_fence(lines: list[str], start: int, fence: str) -> int | None:
    closing = re.compile(rf"\s*{re.escape(fence[0])}{{{len(fence)},}}\s*")
    return next((i for i in range(start, len(lines)) if closing.fullmatch(lines[i])), None)


def _whole_edit(block: _CodeBlock, problems: list[str]) -> Edit | None:
    path = _path_on_line(block.above) if block.above is not None else None
    if path is None:
        above = f' (the line above it is "{block.above[:80]}")' if block.above else ""
        problems.append(
            f"a code block without its file path on the line above it, at line {block.line} "
            f"of your answer{above}"
        )
        return None
    if block.info.lower() in {"diff", "patch"}:
        problems.append(f"{path}: send the complete new file, not a diff")
        return None
    try:
        return Edit(path=_clean_path(path), content=_whole_content(block.body))
    except EditFormatError as error:
        problems.extend(error.problems)
        return None


def _path_on_line(line: str) -> str | None:
    """The path on a line like `pkg/mod.py`, **pkg/mod.py**, File: pkg/mod.py or ### pkg/mod.py."""
    candidate, previous = line.strip(), ""
    while candidate != previous:
        previous = candidate
        candidate = _PATH_DECORATION.sub("", candidate).strip("*`'\" \t").removesuffix(":")
    if not _PATH_CHARS.fullmatch(candidate) or candidate.endswith("."):
        return None
    looks_like_path = "/" in candidate or "\\" in candidate or re.search(r"\.\w", candidate)
    return candidate if looks_like_path or candidate in _NAMES_WITHOUT_DOT else None


def _whole_content(body: list[str]) -> str:
    content = "\n".join(body).rstrip("\n")
    return content + "\n" if content else ""


# --- paths -----------------------------------------------------------------------------------


def safe_path(root: Path, path: str) -> str:
    """`path` as a normalised posix path relative to `root`, or an `EditFormatError` saying why
    it is refused: absolute, `..`, empty, backslashes, into .git or .fixloop, or (through
    symlinks) outside the project."""
    return _resolved(root.resolve(), path)[0]


def _resolved(root: Path, path: str) -> tuple[str, Path]:
    """The normalised path and the real file it names (symlinks followed) under `root`."""
    clean = _clean_path(path)
    try:
        target = (root / clean).resolve()
    except (OSError, RuntimeError):  # RuntimeError: a symlink loop, on Python 3.11
        raise _refused(path, "it goes through a symlink loop") from None
    if not target.is_relative_to(root):
        raise _refused(path, "it resolves through a symlink to outside the project")
    inside = target.relative_to(root).parts
    if not inside:
        raise _refused(path, "it names the project directory itself, not a file")
    if any(part.casefold() in _REFUSED_DIRS for part in inside):
        raise _refused(path, "it resolves through a symlink into .git or .fixloop")
    return clean, target


def _clean_path(path: str) -> str:
    """The lexical checks of `safe_path` (no file system): the normalised path or a refusal."""
    raw = path.strip()
    why = _why_refused(raw)
    if why is not None:
        raise _refused(path, why)
    return PurePosixPath(raw).as_posix()


def _why_refused(raw: str) -> str | None:
    parts = PurePosixPath(raw).parts
    if not raw or not parts or parts == (".",):
        return "it is empty"
    if "\\" in raw:
        return "it contains a backslash; separate directories with /"
    if "\x00" in raw:
        return "it contains a NUL character"
    if raw.startswith("/") or re.match(r"[A-Za-z]:", raw):
        return "it is absolute"
    if raw.startswith("~"):
        return "it points into a home directory"
    if ".." in parts:
        return "it contains '..'"
    refused = next((part for part in parts if part.casefold() in _REFUSED_DIRS), None)
    if refused is not None:
        return f"{refused} is not part of the project's code and is never edited"
    if raw.endswith("/"):
        return "it names a directory, not a file"
    return None


def _refused(path: str, why: str) -> EditFormatError:
    return EditFormatError([f"refused path {path!r}: {why}"], _PATH_HINT)


# --- applying --------------------------------------------------------------------------------


@dataclass
class _PlannedFile:
    """A file's content as the edits change it, in memory until every edit has succeeded."""

    path: str  # as the model names it (normalised)
    target: Path  # the real file written (symlinks followed)
    original: str | None  # None: the file does not exist yet
    text: str | None
    newline: str  # the file's newline style, which every edit to it keeps
    mode: int | None  # permission bits to keep; None for a new file


def apply(proposal: Proposal, root: Path) -> AppliedEdits:
    """Apply every edit under `root`, or none: a failing edit is an `EditFormatError` listing
    every failure, and then nothing is written. A file whose new text equals its current text
    is reported as unchanged and left alone."""
    planned = _plan(proposal, root.resolve())
    changed = [f for f in planned if f.text != f.original]
    _write(changed)
    return AppliedEdits(
        files=[f.path for f in changed],
        unchanged=[f.path for f in planned if f.text == f.original],
    )


def _plan(proposal: Proposal, root: Path) -> list[_PlannedFile]:
    files: dict[Path, _PlannedFile] = {}
    problems: list[str] = []
    for number, edit in enumerate(proposal.edits, start=1):
        try:
            path, target = _resolved(root, edit.path)
            planned = files.get(target) or _read(path, target, root)
            planned.text = _edited(planned, edit)
            files.setdefault(target, planned)
        except EditFormatError as error:
            problems.extend(f"edit {number}: {problem}" for problem in error.problems)
    problems.extend(_unencodable(files.values()))
    if problems:
        raise EditFormatError(problems, _APPLY_HINT)
    return list(files.values())


def _read(path: str, target: Path, root: Path) -> _PlannedFile:
    """The file as it is now, or a new file; a file fixloop must not edit is a format error."""
    blocker = next((p for p in target.parents if p.is_relative_to(root) and p.is_file()), None)
    if blocker is not None:
        where = blocker.relative_to(root).as_posix()
        raise EditFormatError([f"{path}: {where} is a file, not a directory"])
    if not target.exists():
        return _PlannedFile(path, target, None, None, "\n", None)
    if not target.is_file():
        raise EditFormatError([f"{path} is a directory, not a file"])
    try:
        data = target.read_bytes()
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise EditFormatError([f"{path} is not UTF-8 text; fixloop does not edit it"]) from None
    except OSError as error:
        raise EditFormatError([f"{path} cannot be read ({error.strerror})"]) from None
    mode = stat.S_IMODE(target.stat().st_mode)
    return _PlannedFile(path, target, text, text, _newline_of(text), mode)


def _newline_of(text: str) -> str:
    crlf = text.count("\r\n")
    return "\r\n" if crlf and crlf * 2 >= text.count("\n") else "\n"


def _with_newline(text: str, newline: str) -> str:
    text = text.replace("\r\n", "\n")
    return text.replace("\n", newline) if newline != "\n" else text


def _edited(file: _PlannedFile, edit: Edit) -> str:
    """The file's text after one edit (on top of the edits before it)."""
    if edit.content is not None:
        if edit.search is not None or edit.replace is not None:
            raise EditFormatError([f'{file.path}: give either "content" or "search", not both'])
        if file.original is None:
            return edit.content
        return _with_newline(edit.content, file.newline)
    if edit.search is None or edit.replace is None:
        raise EditFormatError([f'{file.path}: needs "search" and "replace", or "content"'])
    if file.text is None:
        raise EditFormatError(
            [
                f"{file.path} does not exist; to create a new file, send its whole text as "
                '"content" instead of "search" and "replace"'
            ]
        )
    search = _with_newline(edit.search, file.newline)
    replace = _with_newline(edit.replace, file.newline)
    return _replace_once(file.path, file.text, search, replace, file.newline)


def _unencodable(files: Iterable[_PlannedFile]) -> list[str]:
    problems: list[str] = []
    for file in files:
        try:
            (file.text or "").encode("utf-8")
        except UnicodeEncodeError:
            problems.append(f"{file.path}: the new text has characters that are not valid UTF-8")
    return problems


def _write(files: list[_PlannedFile]) -> None:
    """Write every file through a temporary file beside it, then swap them all in."""
    staged: list[tuple[Path, Path]] = []
    for file in files:
        try:
            staged.append((_stage(file), file.target))
        except OSError as error:
            for temporary, _ in staged:
                temporary.unlink(missing_ok=True)
            raise EditWriteError(
                f"could not write {file.path}: {error.strerror or error}; no file was changed. "
                "Check the permissions and free space of the project directory."
            ) from error
    for temporary, target in staged:
        os.replace(temporary, target)


def _stage(file: _PlannedFile) -> Path:
    file.target.parent.mkdir(parents=True, exist_ok=True)
    temporary = file.target.with_name(f".{file.target.name}.{secrets.token_hex(4)}.fixloop-tmp")
    # 0o666 lets the umask decide a new file's mode, as an editor would.
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(descriptor, "wb") as out:
            out.write((file.text or "").encode("utf-8"))
            out.flush()
            os.fsync(out.fileno())
        if file.mode is not None:
            os.chmod(temporary, file.mode)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return temporary


# --- matching --------------------------------------------------------------------------------


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


def _replace_once(path: str, text: str, search: str, replace: str, newline: str) -> str:
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


def dropped_definitions(proposal: Proposal, root: Path) -> list[str]:
    """Whole-file edits that lose top-level functions or classes the file had.

    A small model asked for a whole file often sends only the part it changed; applied,
    that deletes the rest of the module. One problem line per file, for the model.
    """
    problems = []
    for edit in proposal.edits:
        if edit.content is None or not edit.path.endswith(".py"):
            continue
        try:
            before = (root / edit.path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        old, new = _top_level_names(before), _top_level_names(edit.content)
        if old is None or new is None:
            continue  # a file that does not parse is the verifier's to report
        lost = sorted(old - new)
        if lost:
            names = ", ".join(lost)
            problems.append(
                f"your {edit.path} leaves out {names}, which the file defines: send the whole "
                "file, every line of it, not only the part you changed"
            )
    return problems


def _top_level_names(source: str) -> set[str] | None:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    return {
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    }
