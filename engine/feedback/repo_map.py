"""A compact map of the project's Python modules: one line per definition (its signature), the
modules ranked by how much they touch the files the failure traced, cut to a token budget.

It is read with `ast` only, through `project_text` (a link out of the tree, `.git`, a file
over the size cap or not UTF-8 is left out), walking directories without following links and
looking at no more than `MAX_FILES` files: a hostile repository can make the map shorter,
never read elsewhere, run anything or make it unbounded.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from engine.project.pins import is_test_file
from engine.project.reading import project_text
from engine.text.tokens import approximate_tokens

MAX_FILES = 400  # modules looked at, in path order
MAX_FILE_BYTES = 512 * 1024  # a larger module is named, its definitions left out
SIGNATURE_CHARS = 120
HEADER = "Other modules of the project (their definitions, one a line):"
_SKIPPED_DIRS = {"node_modules", "site-packages", "__pycache__", "build", "dist", "venv"}


@dataclass(frozen=True)
class ModuleMap:
    """One module's definitions, and the names it uses (to rank it)."""

    path: str
    lines: tuple[str, ...]
    defined: frozenset[str]
    used: frozenset[str]


def python_files(root: Path) -> list[str]:
    """The project's .py files (not tests), sorted; hidden, virtualenv and build directories
    and symlinks are left out; at most `MAX_FILES`."""
    found: list[str] = []
    top = root.resolve()
    for directory, dirs, files in os.walk(top, followlinks=False):
        dirs[:] = sorted(
            d
            for d in dirs
            if not d.startswith(".") and d not in _SKIPPED_DIRS and not d.endswith(".egg-info")
        )
        here = Path(directory)
        for name in sorted(files):
            if not name.endswith(".py") or (here / name).is_symlink():
                continue
            relative = (here / name).relative_to(top).as_posix()
            if not is_test_file(relative):
                found.append(relative)
        if len(found) >= MAX_FILES:
            break
    return sorted(found)[:MAX_FILES]


def module_map(root: Path, path: str) -> ModuleMap | None:
    """The module's top-level definitions and its classes' methods, or None when it cannot
    be read or parsed."""
    try:
        text = project_text(root, path)
        if len(text) > MAX_FILE_BYTES:
            return None
        tree = ast.parse(text)
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError, RecursionError, MemoryError):
        return None
    lines: list[str] = []
    defined: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            lines.append(_signature(node, ""))
            defined.add(node.name)
        elif isinstance(node, ast.ClassDef):
            bases = ", ".join(_unparsed(b) for b in node.bases)
            lines.append(f"class {node.name}({bases}):" if bases else f"class {node.name}:")
            defined.add(node.name)
            for child in node.body:
                if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                    lines.append(_signature(child, "    "))
                    defined.add(child.name)
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)
    }
    return ModuleMap(path, tuple(lines), frozenset(defined), frozenset(used))


def _signature(node: ast.FunctionDef | ast.AsyncFunctionDef, indent: str) -> str:
    kind = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
    returns = f" -> {_unparsed(node.returns)}" if node.returns else ""
    text = f"{kind} {node.name}({_unparsed(node.args)}){returns}"
    if len(text) > SIGNATURE_CHARS:
        text = text[: SIGNATURE_CHARS - 4] + "...)"
    return f"{indent}{text}  # line {node.lineno}"


def _unparsed(node: ast.AST) -> str:
    try:
        return ast.unparse(node)
    except (ValueError, RecursionError):
        return "..."


def repo_map(
    root: Path, traced: Sequence[str], budget_tokens: int, *, shown: Sequence[str] = ()
) -> str:
    """The map of the project's modules other than those `shown` whole, most relevant first
    under `budget_tokens`: a module the traced files use names of ranks by how many, then
    one that uses theirs; ties by path. Empty when nothing fits. Deterministic: the same tree
    gives the same text."""
    maps = [m for path in python_files(root) if (m := module_map(root, path)) is not None]
    by_path = {m.path: m for m in maps}
    traced_used: set[str] = set()
    traced_defined: set[str] = set()
    for path in traced:
        known = by_path.get(path) or module_map(root, path)
        if known is not None:
            traced_used |= known.used
            traced_defined |= known.defined
    hidden = set(shown)

    def rank(m: ModuleMap) -> tuple[int, int, str]:
        uses_theirs = len(m.used & traced_defined)
        return (-len(m.defined & traced_used), -uses_theirs, m.path)

    chunks: list[str] = []
    left = budget_tokens - approximate_tokens(HEADER) - 1
    for module in sorted((m for m in maps if m.path not in hidden and m.lines), key=rank):
        chunk = module.path + ":\n" + "\n".join("  " + line for line in module.lines)
        cost = approximate_tokens(chunk) + 1
        if cost > left:
            continue  # a smaller, less relevant module may still fit
        chunks.append(chunk)
        left -= cost
    return HEADER + "\n" + "\n".join(chunks) if chunks else ""
