"""An answer to a file the prompt showed only in excerpts, made safe to apply: the excerpt's
line numbers and `...` gaps dropped, and a whole-file answer read as the functions and classes
it sends back, each put in place of the one of its name. Applied as sent, a whole file written
from an excerpt would delete everything the model never saw.

The answer is hostile input: it is only parsed (`ast`), never run; what it becomes is applied
by `engine/edits/apply.py` like any other edit.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from pathlib import Path

from engine.edits.proposal import Proposal
from engine.errors import EditFormatError
from engine.project.reading import project_text

GAP = "  ..."  # between two excerpts of a file (engine/feedback/context.py renders them)
_NUMBERED = re.compile(r"^\s{0,6}\d{1,6}  ")


def answer_for_excerpts(proposal: Proposal, root: Path, excerpted: Sequence[str]) -> Proposal:
    """`proposal` with each edit of a file the prompt showed only in excerpts made safe: line
    numbers copied from the excerpt dropped, and a whole-file answer (`content`) read as the
    functions and classes it sends back, each put in place of the one of that name (a new
    function is added at the end). A whole-file answer from an excerpt would delete all the
    model never saw; one that cannot be read so is an `EditFormatError`, nothing applied."""
    shown = set(excerpted)
    if not shown or not any(edit.path in shown for edit in proposal.edits):
        return proposal
    edits, problems = [], []
    for edit in proposal.edits:
        if edit.path not in shown:
            edits.append(edit)
        elif edit.content is None:
            edits.append(
                edit.model_copy(
                    update={
                        "search": _unnumbered(edit.search or ""),
                        "replace": _unnumbered(edit.replace or ""),
                    }
                )
            )
        else:
            try:
                original = project_text(root, edit.path)
            except (OSError, UnicodeDecodeError):
                edits.append(edit)  # a new or unreadable file: nothing to lose
                continue
            sent = "\n".join(line for line in edit.content.split("\n") if line != GAP)
            merged = merge_definitions(original, _unnumbered(sent))
            if isinstance(merged, str):
                edits.append(edit.model_copy(update={"content": merged}))
            else:
                problems.append(f"{edit.path}: {merged[0]}")
    if problems:
        raise EditFormatError(
            problems,
            "None of your edits were applied. That file was shown in excerpts: send only the "
            "functions you change, each complete, after its path.",
        )
    return proposal.model_copy(update={"edits": edits})


def _unnumbered(text: str) -> str:
    """`text` without the excerpt's line numbers, when every non-blank line starts with one."""
    lines = text.split("\n")
    body = [line for line in lines if line.strip()]
    if not body or not all(_NUMBERED.match(line) for line in body):
        return text
    return "\n".join(_NUMBERED.sub("", line, count=1) for line in lines)


_Def = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


def merge_definitions(original: str, answer: str) -> str | tuple[str]:
    """`original` with each definition of `answer` in place of the one of the same name (a
    class's methods one by one, so a class sent with only the method changed keeps the
    others); a top-level function it does not have is added at the end. An answer holding
    every definition and method of `original` is a whole file, kept as sent. A one-item
    tuple says why the answer cannot be read so."""
    try:
        old_tree, new_tree = ast.parse(original), ast.parse(answer)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return (f"your code does not parse ({type(exc).__name__})",)
    old_top = {n.name: n for n in old_tree.body if isinstance(n, _Def)}
    new_top = [n for n in new_tree.body if isinstance(n, _Def)]
    if old_top and _qualified(old_tree) <= _qualified(new_tree):
        return answer
    old_dumps = {ast.dump(n) for n in old_tree.body}
    stray = [n for n in new_tree.body if not isinstance(n, _Def) and ast.dump(n) not in old_dumps]
    if stray or not new_top:
        return ("it holds code outside the functions you sent; send only whole functions",)
    answer_lines = answer.splitlines()
    replacements: list[tuple[int, int, str]] = []  # (first line, last line, new text)
    added: list[str] = []
    for node in new_top:
        old = old_top.get(node.name)
        if isinstance(node, ast.ClassDef) and isinstance(old, ast.ClassDef):
            why = _merge_methods(old, node, answer_lines, original, replacements)
            if why:
                return (why,)
        elif old is not None:
            replacements.append((*_span(old), _source(answer_lines, node, _indent(original, old))))
        elif (method := _only_method(old_tree, node.name)) is not None:
            replacements.append(
                (*_span(method), _source(answer_lines, node, _indent(original, method)))
            )
        else:
            added.append(_source(answer_lines, node, ""))
    lines = original.splitlines()
    for start, end, text in sorted(replacements, reverse=True):
        lines[start - 1 : end] = text.splitlines()
    ending = "\n" if original.endswith("\n") or not original else ""
    result = "\n".join(lines) + ending
    for text in added:
        result = result.rstrip("\n") + "\n\n\n" + text + "\n"
    return result


def _qualified(tree: ast.Module) -> set[str]:
    """The names of the module's definitions and its classes' methods (`Class.method`)."""
    names = set()
    for node in tree.body:
        if isinstance(node, _Def):
            names.add(node.name)
        if isinstance(node, ast.ClassDef):
            names |= {f"{node.name}.{n.name}" for n in node.body if isinstance(n, _Def)}
    return names


def _merge_methods(
    old: ast.ClassDef,
    new: ast.ClassDef,
    answer_lines: list[str],
    original: str,
    replacements: list[tuple[int, int, str]],
) -> str | None:
    methods = {n.name: n for n in old.body if isinstance(n, _Def)}
    old_dumps = {ast.dump(n) for n in old.body}
    for node in new.body:
        if isinstance(node, _Def) and node.name in methods:
            method = methods[node.name]
            replacements.append(
                (*_span(method), _source(answer_lines, node, _indent(original, method)))
            )
        elif ast.dump(node) not in old_dumps and not _is_docstring(node):
            return f"class {new.name} holds code that is not a whole method it already has"
    return None


def _is_docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)


def _only_method(tree: ast.Module, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The one method named `name` in the module's classes (a method sent without its class)."""
    found = [
        node
        for klass in tree.body
        if isinstance(klass, ast.ClassDef)
        for node in klass.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name
    ]
    return found[0] if len(found) == 1 else None


def _span(node: _Def) -> tuple[int, int]:
    start = min([d.lineno for d in node.decorator_list] + [node.lineno])
    return start, node.end_lineno or node.lineno


def _indent(source: str, node: _Def) -> str:
    line = source.splitlines()[node.lineno - 1]
    return line[: len(line) - len(line.lstrip())]


def _source(lines: list[str], node: _Def, indent: str) -> str:
    """The node's lines from the answer, re-indented from its own indent to `indent`."""
    start, end = _span(node)
    block = lines[start - 1 : end]
    own = len(block[0]) - len(block[0].lstrip()) if block else 0
    return "\n".join(indent + line[own:] if line.strip() else "" for line in block)
