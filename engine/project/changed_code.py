"""What a change touched, in a few words for a commit's subject when the model gave no
explanation: `edit mean_word_length in textstats/core.py`. Pure: texts in, words out; the code
is parsed (`ast`), never run."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence

# (path, text before, text after); None: the file did not exist before, or is deleted
FileChange = tuple[str, str | None, str | None]


def change_subject(changes: Sequence[FileChange]) -> str:
    """`edit <first changed function or class> in <file>` (`edit <file>` when the change is
    outside any, or the file is not Python), `add <file>`, `delete <file>`; with the number of
    other files changed. "" when nothing changed."""
    changed = [(path, before, after) for path, before, after in changes if before != after]
    if not changed:
        return ""
    path, before, after = changed[0]
    if before is None:
        what = f"add {path}"
    elif after is None:
        what = f"delete {path}"
    else:
        name = first_changed_definition(path, before, after)
        what = f"edit {name} in {path}" if name else f"edit {path}"
    others = len(changed) - 1
    return what + (f" and {others} more file{'s' * (others > 1)}" if others else "")


def first_changed_definition(path: str, before: str, after: str) -> str | None:
    """The innermost function or class (`Class.method` inside a class) around the first line
    the change touches, in the new text (in the old one for a pure deletion, or when the new
    one does not parse); None outside any definition, for a file that is not Python, or for
    code that parses neither way. Linear in the texts' length: the model wrote them, and a
    hostile one may send a huge or absurdly nested file (ast.parse's RecursionError and
    MemoryError are no crash here, only no name)."""
    if not path.endswith(".py"):
        return None
    old, new = before.splitlines(), after.splitlines()
    common = 0  # lines the same from the top
    while common < min(len(old), len(new)) and old[common] == new[common]:
        common += 1
    tail = 0  # lines the same from the bottom, below the first change
    while tail < min(len(old), len(new)) - common and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    if common == len(old) == len(new):
        return None
    added, removed = len(new) - common - tail > 0, len(old) - common - tail > 0
    tries = [(after, common + 1)] if added else []
    tries.append((before, common + 1) if removed else (after, common + 1))
    for text, line in tries:
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        return _enclosing(tree, line)
    return None


def _enclosing(tree: ast.Module, line: int) -> str | None:
    """The qualified name of the innermost definition whose lines (decorators included)
    hold `line`."""
    names: list[str] = []
    scope: ast.AST = tree
    while True:
        inside = next((node for node in _definitions_in(scope) if _holds(node, line)), None)
        if inside is None:
            return ".".join(names) or None
        names.append(inside.name)
        scope = inside


Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


def _definitions_in(scope: ast.AST) -> Iterator[Definition]:
    """The definitions directly in `scope`: inside its if, for, with or try blocks too, not
    inside another definition."""
    for child in ast.iter_child_nodes(scope):
        if isinstance(child, Definition):
            yield child
        elif isinstance(child, ast.stmt):
            yield from _definitions_in(child)


def _holds(node: Definition, line: int) -> bool:
    start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    return start <= line <= (node.end_lineno or node.lineno)
