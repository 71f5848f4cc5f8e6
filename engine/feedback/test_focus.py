"""A Python test file cut to what the failure needs: its imports, the failing tests, and the
file's own definitions they use (helpers, fixtures by parameter name, constants).

The passing tests tell the model little the packet does not, and in a repair prompt the
test file was the largest part: on the bench's HumanEval tasks half the prompt's characters
(the token diet). A file whose failing tests are not found is shown whole.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence

from engine.feedback.packet import RepairPacket

MAX_TESTS = 5  # the packet's first failures; the rest are a line each in the packet anyway
WHOLE_FRACTION = 0.8  # an excerpt this close to the whole file is not worth the cut
USED_DEPTH = 3  # a helper's helper and its constants are shown


def failing_tests(packet: RepairPacket | None) -> dict[str, list[list[str]]]:
    """Per test file, the failing tests' names (`[Class, ..., test]`, parameters dropped)."""
    found: dict[str, list[list[str]]] = {}
    if packet is None:
        return found
    for failure in packet.failures[:MAX_TESTS]:
        path, _, inner = failure.test.partition("::")
        if inner and path.endswith(".py") and failure.kind in ("failed", "error", "timeout"):
            found.setdefault(path, []).append(inner.split("[")[0].split("::"))
    return found


def focus(source: str, tests: Sequence[Sequence[str]]) -> str | None:
    """The file's text cut to the failing `tests` and what they use, chunks in file order
    and `...` between them; None when it cannot be cut or the cut saves little."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    spans: dict[int, int] = {}  # first line -> last line, 1-based

    def keep(node: ast.stmt) -> None:
        decorators = getattr(node, "decorator_list", [])
        start = min([d.lineno for d in decorators] + [node.lineno])
        spans[start] = max(spans.get(start, 0), node.end_lineno or node.lineno)

    wanted: list[ast.stmt] = []
    for names in tests:
        found = find_test(tree, names)
        if found is None:
            return None
        classes, function = found
        for cls in classes:  # the class line, and its set-up methods
            spans.setdefault(cls.lineno, cls.lineno)
            wanted += [n for n in cls.body if _name(n) in SETUP_NAMES]
        wanted.append(function)
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            keep(node)
    definitions = {name: node for node in tree.body for name in _defines(node)}
    frontier = wanted
    seen: set[int] = set()
    for _ in range(USED_DEPTH + 1):
        following: list[ast.stmt] = []
        for node in frontier:
            if id(node) in seen:
                continue
            seen.add(id(node))
            keep(node)
            following += [definitions[n] for n in _uses(node) if n in definitions]
        frontier = following
    lines = source.splitlines()
    chunks: list[tuple[int, int]] = []
    for start, end in sorted(spans.items()):
        if chunks and start <= chunks[-1][1] + 1:
            chunks[-1] = (chunks[-1][0], max(end, chunks[-1][1]))
        else:
            chunks.append((start, end))
    cut = "\n...\n".join("\n".join(lines[a - 1 : b]) for a, b in chunks)
    return cut if len(cut) < WHOLE_FRACTION * len(source) else None


SETUP_NAMES = frozenset({"setUp", "setup_method", "setup_class", "setUpClass"})


def find_test(
    tree: ast.Module, names: Sequence[str]
) -> tuple[list[ast.ClassDef], ast.FunctionDef | ast.AsyncFunctionDef] | None:
    """The test a test id names (`[test_x]`, or `[TestCase, test_x]` down its classes):
    the classes it sits in, and its function."""
    scope: Sequence[ast.stmt] = tree.body
    classes: list[ast.ClassDef] = []
    for name in names[:-1]:
        matching = [n for n in scope if isinstance(n, ast.ClassDef) and n.name == name]
        if not matching:
            return None
        classes.append(matching[-1])
        scope = matching[-1].body
    functions = [
        n
        for n in scope
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == names[-1]
    ]
    return (classes, functions[-1]) if functions else None


def _name(node: ast.stmt) -> str | None:
    return node.name if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) else None


def _defines(node: ast.stmt) -> Iterable[str]:
    """The module-level names a statement binds (imports are always shown)."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        yield node.name
    elif isinstance(node, ast.Assign | ast.AnnAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            yield from (n.id for n in ast.walk(target) if isinstance(n, ast.Name))


def _uses(node: ast.stmt) -> set[str]:
    """Names a definition reads, and its parameters (pytest fixtures are named by them)."""
    used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    for function in ast.walk(node):
        if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            arguments = function.args
            used |= {a.arg for a in [*arguments.posonlyargs, *arguments.args]}
            used |= {a.arg for a in arguments.kwonlyargs}
    return used
