"""Applying a proposal: every edit under the project root, or none. The one step that writes
files (each through a temporary file beside it, fsynced, then swapped in); the file's newline
style and permission bits are kept. Also the check for whole files that drop definitions.
"""

from __future__ import annotations

import ast
import os
import secrets
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from engine.edits.match import replace_once
from engine.edits.proposal import AppliedEdits, Edit, Proposal
from engine.edits.safe_paths import resolved
from engine.errors import EditFormatError, EditWriteError

_APPLY_HINT = "None of your edits were applied. Fix these and send all your edits again."


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


def planned_texts(proposal: Proposal, root: Path) -> list[tuple[str, str | None, str | None]]:
    """Each file the proposal edits as (path, its text now (None: no such file), its text
    after), nothing written; `EditFormatError` where `apply` would raise it."""
    return [(f.path, f.original, f.text) for f in _plan(proposal, root.resolve())]


def _plan(proposal: Proposal, root: Path) -> list[_PlannedFile]:
    files: dict[Path, _PlannedFile] = {}
    problems: list[str] = []
    for number, edit in enumerate(proposal.edits, start=1):
        try:
            path, target = resolved(root, edit.path)
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
    return replace_once(file.path, file.text, search, replace, file.newline)


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
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # a model's nesting: no crash
        return None
    return {
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    }
