"""Which paths an edit may name: relative, inside the project (symlinks followed), never
into .git or .fixloop. A refused path is an `EditFormatError` for the model."""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

from engine.errors import EditFormatError
from engine.project.paths import FIXLOOP_DIR

_REFUSED_DIRS = frozenset({".git", FIXLOOP_DIR})
_PATH_HINT = "Use a path relative to the project root, like pkg/mod.py."
# A file name with one is never what the model meant, and would reach terminals and git.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def safe_path(root: Path, path: str) -> str:
    """`path` as a normalised posix path relative to `root`, or an `EditFormatError` saying why
    it is refused: absolute, `..`, empty, backslashes, into .git or .fixloop, or (through
    symlinks) outside the project."""
    return resolved(root.resolve(), path)[0]


def resolved(root: Path, path: str) -> tuple[str, Path]:
    """The normalised path and the real file it names (symlinks followed) under `root`, which
    must already be resolved."""
    clean = clean_path(path)
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


def clean_path(path: str) -> str:
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
    if _CONTROL.search(raw):
        return "it contains a control character"
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
