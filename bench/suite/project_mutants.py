"""Seeded bugs in a whole project: the bench's mutant operators (`bench.suite.mutants`) applied
inside the functions of a project's own source files, one change at a time.

Which files: the project's Python files that are not tests, set-up or tooling (no directory
that is hidden, a venv, a build or a test tree; no `test_*.py`, `*_test.py`, `conftest.py`,
`setup.py`), read as data and never followed through a symlink. Which changes: inside a
function's body, a change that alters the syntax tree. The seed orders every candidate (its
rank is SHA-256 of the seed and the candidate's id). Whether a candidate is a bug the suite
sees, and how many a function may give, is for the screening to say (`bench.suite.screening`).
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from bench.suite.mutants import SourceChange, mutated_program, source_changes
from bench.suite.selection import rank

SKIPPED_DIRS = frozenset(
    {
        "venv",
        "env",
        "build",
        "dist",
        "node_modules",
        "__pycache__",
        "site-packages",
        "tests",
        "test",
        "testing",
        "docs",
        "doc",
        "examples",
        "benchmarks",
    }
)
SKIPPED_FILES = frozenset({"conftest.py", "setup.py", "noxfile.py", "fabfile.py"})
MAX_FILE_BYTES = 1_000_000


class ProjectMutant(BaseModel):
    """One seeded bug: where it is (the file, its function and that function's lines) and the
    change, made by offsets into the file's text as it was read."""

    model_config = ConfigDict(frozen=True)

    id: str  # "src/pkg/mod.py:boundary@7:15"
    path: str  # posix, relative to the project's root
    function: str  # qualified name: "Cache.__getitem__"
    function_lines: tuple[int, int]  # first and last line of the function (1-based)
    change: SourceChange
    failing: list[str] = []  # the tests it fails, as the screening saw them (twice)

    def describe(self) -> str:
        c = self.change
        return f"{self.path}:{c.line} in {self.function}: {c.operator} `{c.before}` -> `{c.after}`"

    def applied(self, text: str) -> str | None:
        """`text` (the file now) with the bug in it; None when the file is not the one the
        mutant was made from, or the change would not alter it."""
        c = self.change
        if text[c.start : c.end] != c.before:
            return None
        return mutated_program(text, c)


def source_files(root: Path) -> list[str]:
    """The project's source files, as posix paths relative to `root`, sorted."""
    found: list[str] = []
    for directory, dirs, files in os.walk(root):  # never into a symlinked directory
        here = Path(directory)
        dirs[:] = sorted(
            d
            for d in dirs
            if not d.startswith(".")
            and d not in SKIPPED_DIRS
            and not d.endswith(".egg-info")
            and not (here / d).is_symlink()
        )
        for name in files:
            if (
                not name.endswith(".py")
                or name in SKIPPED_FILES
                or name.startswith("test_")
                or name.endswith("_test.py")
            ):
                continue
            path = here / name
            if path.is_symlink() or not path.is_file():
                continue
            found.append(path.relative_to(root).as_posix())
    return sorted(found)


def read_source(root: Path, relative: str) -> str | None:
    """A source file's text, without following a link at its last component; None when it is
    not a regular UTF-8 file under the size cap."""
    try:
        fd = os.open(root / relative, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _functions(tree: ast.AST) -> Iterator[tuple[str, int, int, int]]:
    """(qualified name, first line of the body, first line, last line) of every function."""

    def walk(node: ast.AST, prefix: str) -> Iterator[tuple[str, int, int, int]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{prefix}{child.name}"
                assert child.end_lineno is not None
                yield name, child.body[0].lineno, child.lineno, child.end_lineno
                yield from walk(child, f"{name}.")
            elif isinstance(child, ast.ClassDef):
                yield from walk(child, f"{prefix}{child.name}.")
            else:
                yield from walk(child, prefix)

    yield from walk(tree, "")


def file_candidates(relative: str, text: str) -> list[ProjectMutant]:
    """Every candidate change inside a function's body of one file (the innermost function
    holding it), unchecked."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    functions = sorted(_functions(tree), key=lambda f: f[3] - f[2])  # innermost first
    candidates = []
    for change in source_changes(text):
        holder = next((f for f in functions if f[1] <= change.line <= f[3]), None)
        if holder is None:
            continue
        name, _, first, last = holder
        candidates.append(
            ProjectMutant(
                id=f"{relative}:{change.id}",
                path=relative,
                function=name,
                function_lines=(first, last),
                change=change,
            )
        )
    return candidates


def seeded_candidates(root: Path, seed: int) -> Iterator[ProjectMutant]:
    """The project's candidates in the seed's order, each checked (when it comes up) to change
    its file's meaning: the order the screening tries them in."""
    texts = {relative: read_source(root, relative) for relative in source_files(root)}
    every = [
        candidate
        for relative, text in texts.items()
        if text is not None
        for candidate in file_candidates(relative, text)
    ]
    every.sort(key=lambda m: (rank(seed, m.id), m.id))
    for candidate in every:
        text = texts[candidate.path]
        if text is not None and candidate.applied(text) is not None:
            yield candidate
