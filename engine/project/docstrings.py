"""Docstrings in Python source: which statement is one, and a module's code without them. A
docstring is text for people; with no doctests run it changes nothing the tests see."""

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


def code_shape(source: str) -> str | None:
    """The module's syntax tree without its docstrings, as text (no comments, no positions);
    None when it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, DOCUMENTED) and docstring_of(node) is not None:
            node.body = node.body[1:] or [ast.Pass()]
    return ast.dump(tree)
