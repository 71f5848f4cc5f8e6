"""Deterministic mutants of a reference solution, for `--mode repair`.

Each operator changes one token (or one expression) of the solution's code, never the
prompt's: arithmetic swaps (`+`/`-`, `*`→`/`, `/`/`//`), boundary shifts (`<`/`<=`, `>`/`>=`),
flipped comparisons (`<`/`>`, `<=`/`>=`), negated comparisons (`==`/`!=`, `in`/`not in`,
`is`/`is not`), `and`/`or`, and off-by-one on integer constants and on `range` bounds. The
change is made in the source text, so the model sees the program as written, comments and
all. Which mutants fail the tests is for the sandbox to say (`bench.suite.runner`).
"""

from __future__ import annotations

import ast
import bisect
import functools
import io
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

from bench.suite.selection import rank
from bench.suite.tasks import BenchTask

OPERATORS = (
    "arith",
    "boundary",
    "flip",
    "negate",
    "bool",
    "const+1",
    "const-1",
    "range+1",
    "range-1",
)

_ARITH: dict[type[ast.operator], tuple[str, str]] = {
    ast.Add: ("+", "-"),
    ast.Sub: ("-", "+"),
    ast.Mult: ("*", "/"),
    ast.Div: ("/", "//"),
    ast.FloorDiv: ("//", "/"),
}
_BOUNDARY: dict[type[ast.cmpop], tuple[str, str]] = {
    ast.Lt: ("<", "<="),
    ast.LtE: ("<=", "<"),
    ast.Gt: (">", ">="),
    ast.GtE: (">=", ">"),
}
_FLIP: dict[type[ast.cmpop], tuple[str, str]] = {
    ast.Lt: ("<", ">"),
    ast.Gt: (">", "<"),
    ast.LtE: ("<=", ">="),
    ast.GtE: (">=", "<="),
}
_NEGATE: dict[type[ast.cmpop], tuple[str, str]] = {
    ast.Eq: ("==", "!="),
    ast.NotEq: ("!=", "=="),
    ast.In: ("in", "not in"),
    ast.NotIn: ("not in", "in"),
    ast.Is: ("is", "is not"),
    ast.IsNot: ("is not", "is"),
}
_BOOL: dict[type[ast.boolop], tuple[str, str]] = {ast.And: ("and", "or"), ast.Or: ("or", "and")}
# Operands that need no parentheses before "+ 1".
_ATOMS = (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.Constant)


class Mutant(BaseModel):
    """A reference solution with one deliberate bug."""

    model_config = ConfigDict(frozen=True)

    id: str  # "boundary@7:15": operator, then line:column in the program
    operator: str
    line: int
    before: str
    after: str
    program: str  # prompt + mutated solution

    def describe(self) -> str:
        return f"{self.operator}: `{self.before}` -> `{self.after}` at line {self.line}"


@dataclass(frozen=True)
class _Change:
    start: int  # character offsets into the program
    end: int
    after: str
    operator: str


def reference_program(task: BenchTask) -> str:
    return task.prompt + task.canonical_solution


def mutants_of(task: BenchTask) -> list[Mutant]:
    """Every valid single-change mutant of the task's solution, in source order."""
    program = reference_program(task)
    first = len(task.prompt)  # the prompt is the task, never mutated
    found: dict[str, Mutant] = {}
    for change in source_changes(program):
        if change.start < first:
            continue
        mutated = mutated_program(program, change)
        if mutated is None or any(m.program == mutated for m in found.values()):
            continue
        found[change.id] = Mutant(
            id=change.id,
            operator=change.operator,
            line=change.line,
            before=change.before,
            after=change.after,
            program=mutated,
        )
    return list(found.values())


class SourceChange(BaseModel):
    """One candidate change of a program's text, not yet checked to change its meaning."""

    model_config = ConfigDict(frozen=True)

    id: str  # "boundary@7:15": operator, then line:column in the program
    operator: str
    start: int  # character offsets into the program
    end: int
    line: int
    column: int
    before: str
    after: str


def source_changes(program: str) -> list[SourceChange]:
    """Every operator's candidate change of `program`, in source order, unchecked: cheap even
    for a module of thousands of lines (`mutated_program` checks one when it is wanted)."""
    try:
        tree = ast.parse(program)
        tokens = list(tokenize.generate_tokens(io.StringIO(program).readline))
    except (SyntaxError, tokenize.TokenError, ValueError):
        return []
    offsets = _Offsets(program)
    changes = sorted(
        _changes(tree, tokens, offsets), key=lambda c: (c.start, OPERATORS.index(c.operator))
    )
    found: dict[str, SourceChange] = {}
    for change in changes:
        line, column = offsets.line_col(change.start)
        change_id = f"{change.operator}@{line}:{column}"
        found.setdefault(
            change_id,
            SourceChange(
                id=change_id,
                operator=change.operator,
                start=change.start,
                end=change.end,
                line=line,
                column=column,
                before=program[change.start : change.end],
                after=change.after,
            ),
        )
    return list(found.values())


def mutated_program(program: str, change: SourceChange) -> str | None:
    """`program` with the change made, or None when the change leaves its syntax tree as it
    was (or breaks it): such a mutant is no bug."""
    mutated = program[: change.start] + change.after + program[change.end :]
    if mutated == program:
        return None
    try:
        if ast.dump(ast.parse(mutated)) == _tree(program):
            return None
    except SyntaxError:
        return None
    return mutated


@functools.lru_cache(maxsize=8)
def _tree(program: str) -> str:
    """The program's syntax tree, dumped: parsed once per file however many changes of it are
    checked."""
    return ast.dump(ast.parse(program))


def seeded_mutants(task: BenchTask, seed: int) -> list[Mutant]:
    """The task's mutants in the order the seed gives them (tried in this order)."""
    return sorted(mutants_of(task), key=lambda m: (rank(seed, f"{task.task_id}:{m.id}"), m.id))


class _Offsets:
    """ast positions (line, UTF-8 byte column) and tokenize positions (line, character
    column) as character offsets into the program, and back."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = text.splitlines(keepends=True)
        self.starts = [0]
        for line in self.lines:
            self.starts.append(self.starts[-1] + len(line))

    def from_ast(self, line: int, byte_col: int) -> int:
        text = self.lines[line - 1] if line - 1 < len(self.lines) else ""
        return self.starts[line - 1] + len(text.encode("utf-8")[:byte_col].decode("utf-8"))

    def from_token(self, position: tuple[int, int]) -> int:
        return self.starts[position[0] - 1] + position[1]

    def line_col(self, offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(self.starts, offset) - 1
        return line + 1, offset - self.starts[line] + 1

    def span(self, node: ast.expr) -> tuple[int, int]:
        assert node.end_lineno is not None
        assert node.end_col_offset is not None
        return (
            self.from_ast(node.lineno, node.col_offset),
            self.from_ast(node.end_lineno, node.end_col_offset),
        )


def _changes(
    tree: ast.AST, tokens: list[tokenize.TokenInfo], offsets: _Offsets
) -> Iterator[_Change]:
    starts = [offsets.from_token(t.start) for t in tokens]  # in order: bisect, not scan

    def between(left: ast.expr, right: ast.expr, words: str) -> tuple[int, int] | None:
        """The span of the operator `words` (one or two tokens) between two operands."""
        low, high = offsets.span(left)[1], offsets.span(right)[0]
        wanted = words.split()
        found = [
            t
            for t in tokens[bisect.bisect_left(starts, low) : bisect.bisect_left(starts, high)]
            if t.type in (tokenize.OP, tokenize.NAME) and t.string in wanted
        ]
        for i in range(len(found) - len(wanted) + 1):
            window = found[i : i + len(wanted)]
            if [t.string for t in window] == wanted:
                return offsets.from_token(window[0].start), offsets.from_token(window[-1].end)
        return None

    # Positions inside f-strings are not reliable on every Python: leave them alone.
    in_fstrings = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.JoinedStr)
        for inner in ast.walk(node)
    }
    for node in ast.walk(tree):
        if id(node) in in_fstrings:
            continue
        if isinstance(node, ast.BinOp) and type(node.op) in _ARITH:
            before, after = _ARITH[type(node.op)]
            if (where := between(node.left, node.right, before)) is not None:
                yield _Change(*where, after, "arith")
        elif isinstance(node, ast.AugAssign) and type(node.op) in (ast.Add, ast.Sub):
            before, after = _ARITH[type(node.op)]
            target = node.target
            if (where := between(target, node.value, before + "=")) is not None:
                yield _Change(*where, after + "=", "arith")
        elif isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            for index, op in enumerate(node.ops):
                left, right = operands[index], operands[index + 1]
                for table, name in ((_BOUNDARY, "boundary"), (_FLIP, "flip"), (_NEGATE, "negate")):
                    if type(op) in table:
                        before, after = table[type(op)]
                        if (where := between(left, right, before)) is not None:
                            yield _Change(*where, after, name)
        elif isinstance(node, ast.BoolOp):
            before, after = _BOOL[type(node.op)]
            for left, right in zip(node.values, node.values[1:], strict=False):
                if (where := between(left, right, before)) is not None:
                    yield _Change(*where, after, "bool")
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, int)
            and not isinstance(node.value, bool)
        ):
            start, end = offsets.span(node)
            yield _Change(start, end, str(node.value + 1), "const+1")
            yield _Change(start, end, str(node.value - 1), "const-1")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "range"
            and 1 <= len(node.args) <= 3
            and not node.keywords
        ):
            stop = node.args[0] if len(node.args) == 1 else node.args[1]
            if isinstance(stop, ast.Constant):
                continue  # the constant operators cover it
            start, end = offsets.span(stop)
            text = offsets.text[start:end]
            operand = text if isinstance(stop, _ATOMS) else f"({text})"
            yield _Change(start, end, f"{operand} + 1", "range+1")
            yield _Change(start, end, f"{operand} - 1", "range-1")
