"""Docstrings in Python source: which statement is one, and a module's code without them. A
docstring is text for people; with no doctests run it changes nothing the tests see. A string
statement that is no docstring (QuixBugs' programs end with one) runs as nothing at all."""

from __future__ import annotations

import ast

DOCUMENTED = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def docstring_of(node: ast.AST) -> ast.Expr | None:
    """The docstring statement of a module, class or function, if it has one."""
    if not isinstance(node, DOCUMENTED) or not node.body:
        return None
    first = node.body[0]
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        return first
    return None


def code_shape(source: str, *, docstrings: bool = True) -> str | None:
    """The module's syntax tree as text (no comments, no positions), without its string
    statements that are no docstring, and with `docstrings` False without its docstrings too;
    None when it does not parse, or is nested too deep to parse or dump (a model's answer may
    be: the interpreter's RecursionError or MemoryError is no crash here)."""
    try:
        return _shape(ast.parse(source), docstrings=docstrings)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _shape(tree: ast.Module, *, docstrings: bool) -> str:
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list) or not body:
            continue
        doc = docstring_of(node)
        kept = [
            statement
            for statement in body
            if not _bare_string(statement) or (statement is doc and docstrings)
        ]
        node.body = kept or [ast.Pass()]  # type: ignore[attr-defined]
    return ast.dump(tree)


def _bare_string(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, str)
    )
