"""Reading a model's answer into a `Proposal`, in either edit format: "json" (search/replace
objects) or "whole" (each file's path, then its complete new text in a fenced block).

Pure: every way an answer can be unusable is an `EditFormatError` whose message goes to the model.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from engine.edits.instructions import shape_error
from engine.edits.proposal import Edit, EditFormat, Proposal
from engine.edits.safe_paths import clean_path
from engine.errors import EditFormatError
from engine.text.untrusted import valid_unicode_data

_EXPLANATION_CHARS = 200
_STRAY_BRACES = 32  # bounds the rescans of an answer full of unmatched braces


def parse(text: str, format: EditFormat, *, lone_block_path: str | None = None) -> Proposal:
    """Read the model's answer in `format`; an unusable answer is an `EditFormatError`.
    `lone_block_path`: the file a `whole` answer of one block and no path line is taken
    for, when the prompt asked for that one file back."""
    if not text.strip():
        raise shape_error(["your answer is empty"], format)
    if format == "json":
        return _parse_json_or_whole(text)
    return _parse_whole(text, lone_block_path)


def _parse_json_or_whole(text: str) -> Proposal:
    """A JSON answer; a model asked for JSON that sends whole files instead (path line, fenced
    file) still proposed something usable: it is read as such, rather than spend an iteration."""
    found: dict[str, Any] | None = None
    try:
        found = _find_json_object(text)
        return _json_proposal(_with_the_other_edit_objects(found, text))
    except EditFormatError:
        if _answers_in_json(text, found) or (whole := _whole_or_none(text)) is None:
            raise
        return whole


def _answers_in_json(text: str, found: dict[str, Any] | None) -> bool:
    """Whether the answer tried the JSON shape: a ```json fence, or an object with "edits"
    or "path" (`found`, the object read from it, if any), whole or cut off (its problems are
    then the ones to tell); braces in code (a dict, an f-string) are not that."""
    if re.search(r"```[ \t]*json", text, re.I) or re.search(r'\{\s*"(edits|path)"\s*:', text):
        return True  # a fence, or the start of an edit object (maybe cut off)
    return found is not None and ("edits" in found or "path" in found)


def _whole_or_none(text: str) -> Proposal | None:
    try:
        return _parse_whole(text)
    except EditFormatError:
        return None


def _with_the_other_edit_objects(found: dict[str, Any], text: str) -> dict[str, Any]:
    """`found` and the answer's other edit objects as one: strong models send several
    fences, an object each ("First change: ```json {...}``` Second change: ..."), and every
    one of them is meant. Their edits in order, each once (a repeated object is one object);
    the explanation the first that has one. Only when `found` is itself one of the answer's
    top-level objects: else it is the one answer there is."""
    others = [value for value in _json_values(text) if _is_edit_object(value)]
    if found not in others or len(others) < 2:
        return found
    edits: dict[str, Any] = {}
    for value in others:
        listed = value.get("edits", [value])
        for raw in listed if isinstance(listed, list) else [listed]:
            edits.setdefault(json.dumps(raw, sort_keys=True), raw)
    explanations = [v.get("explanation") for v in others if v.get("explanation")]
    return {"explanation": explanations[0] if explanations else "", "edits": list(edits.values())}


def _is_edit_object(value: Any) -> bool:
    return isinstance(value, dict) and ("edits" in value or "path" in value)


def _json_values(text: str) -> Iterator[Any]:
    """Each top-level {...} span of `text` that parses, as its value."""
    for candidate in _balanced_objects(text):
        try:
            yield valid_unicode_data(json.loads(candidate, strict=False))
        except json.JSONDecodeError:
            continue


def _json_proposal(answer: dict[str, Any]) -> Proposal:
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
        raise shape_error(problems, "json")
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
            return Edit(**{**raw, "path": clean_path(raw["path"])})
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
                # Raw newlines inside strings are ok; a "\ud800" escape becomes U+FFFD.
                value = valid_unicode_data(json.loads(candidate, strict=False))
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
        raise shape_error([first_error], "json")
    problem = (
        "your JSON object is never closed; send it complete (shorter, if it was cut off)"
        if "{" in text
        else "there is no JSON object in your answer"
    )
    raise shape_error([problem], "json")


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
# The prompt's own label after a test file's path (instructions.TEST_FILE_LABEL and the focused
# one), which small models copy back with the file, in its words or close ones.
_TEST_FILE_LABEL = re.compile(r"\s+\(test file[^()]*\)$")


@dataclass(frozen=True)
class _CodeBlock:
    """A fenced block of a `whole` answer and the line right above it (blank lines skipped)."""

    line: int  # 1-based line of the opening fence
    info: str  # the language tag
    body: list[str]
    above: str | None  # the prose line above, if any


def _parse_whole(text: str, lone_block_path: str | None = None) -> Proposal:
    blocks, prose, problems = _split_whole(text)
    if lone_block_path and len(blocks) == 1 and _path_on_line(blocks[0].above or "") is None:
        blocks = [replace(blocks[0], above=lone_block_path)]
    unfenced = _unfenced_file(text, lone_block_path) if lone_block_path and not blocks else None
    if unfenced is not None and lone_block_path and not problems:
        return Proposal(
            explanation="", edits=[Edit(path=lone_block_path, content=unfenced)], format="whole"
        )
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
        raise shape_error(problems, "whole")
    explanation = next((line for line in prose if line not in path_lines), "")
    return Proposal(explanation=explanation[:_EXPLANATION_CHARS], edits=edits, format="whole")


def _unfenced_file(text: str, path: str) -> str | None:
    """The one file asked for, sent without a fence (seen: "#solution.py" and the code): the
    answer after an optional line naming that file, when it is all Python that parses."""
    if not path.endswith(".py"):
        return None
    lines = text.strip("\n").splitlines()
    if lines and (named := _path_on_line(lines[0])) is not None:
        if named != path:
            return None  # another file's name: not the one asked for
        lines = lines[1:]
    content = _whole_content(lines).lstrip("\n")
    try:
        tree = ast.parse(content)
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # a model's nesting: no crash
        return None
    defines = any(
        isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        for node in tree.body
    )
    return content if defines else None  # a bare expression or a sentence is not a file


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
        if (fenced := _fenced_path(lines, index)) is not None:  # the path in a fence of its own
            above, index = fenced
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


def _fenced_path(lines: list[str], index: int) -> tuple[str, int] | None:
    """A path fenced on its own before the code block, as small models do: "```", the path,
    then either "```python" at once (one fence line closing and opening) or "```" and the code
    block. The path and the line of the code block's opening fence; None for anything else."""
    path = _path_on_line(lines[index + 1]) if index + 1 < len(lines) else None
    if path is None:
        return None
    after = index + 2
    if after < len(lines) and (inner := _FENCE_OPEN.match(lines[after])) and inner.group("info"):
        return path, after
    if after < len(lines) and _FENCE_OPEN.match(lines[after]):  # a bare fence closes the path
        following = next((i for i in range(after + 1, len(lines)) if lines[i].strip()), None)
        if following is not None and _FENCE_OPEN.match(lines[following]):
            return path, following
    return None


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
        return Edit(path=clean_path(path), content=_whole_content(block.body))
    except EditFormatError as error:
        problems.extend(error.problems)
        return None


def _path_on_line(line: str) -> str | None:
    """The path on a line like `pkg/mod.py`, **pkg/mod.py**, File: pkg/mod.py or ### pkg/mod.py."""
    candidate, previous = _TEST_FILE_LABEL.sub("", line.strip()), ""
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
