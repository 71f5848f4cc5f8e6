"""fixloop's pytest plugin, its source helpers: clipped text, traceback frames, and the
statement a failing line belongs to. Standalone like the plugin (stdlib only), on the same
PYTHONPATH mount inside the sandbox.
"""

from __future__ import annotations

import ast
import functools
import linecache
import os
import textwrap
import traceback
from dataclasses import dataclass
from pathlib import Path
from types import FrameType, TracebackType

REPR_CHARS = 500
SOURCE_CHARS = 500
INTERNAL_DIRS = frozenset({"site-packages", "dist-packages", "_pytest", "pluggy"})
HERE = os.path.dirname(os.path.abspath(__file__))


def clip(text: str, limit: int) -> str:
    """At most about `limit` characters: head and tail around a note of what was cut."""
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head
    return f"{text[:head]}\n[... {len(text) - limit} characters cut ...]\n{text[-tail:]}"


def safe_repr(value: object, limit: int = REPR_CHARS) -> str:
    try:
        text = repr(value)
    except Exception as exc:
        text = f"<{type(value).__name__} object; repr() failed: {describe_error(exc)}>"
    return clip(text, limit)


def describe_error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def strip_prefix(text: str, prefix: str) -> str:
    return text[len(prefix) :] if text.startswith(prefix) else text


@dataclass(frozen=True)
class RawFrame:
    """One traceback entry, with the absolute path of its file."""

    path: str
    line: int
    function: str


def raw_frames(tb: TracebackType | None) -> list[RawFrame]:
    return [
        RawFrame(frame.f_code.co_filename, lineno or 0, frame.f_code.co_name)
        for frame, lineno in traceback.walk_tb(tb)
    ]


@functools.lru_cache(maxsize=1024)
def is_internal(path: str) -> bool:
    """Installed packages, pytest and pluggy, this plugin, and frozen/generated code."""
    if path.startswith("<") or _is_plugin_file(path):
        return True
    return not INTERNAL_DIRS.isdisjoint(Path(path).parts)


def asserting_frame(frame: FrameType | None) -> FrameType | None:
    """The first caller outside pytest and pluggy: where the failing comparison is."""
    while frame is not None and is_internal(frame.f_code.co_filename):
        frame = frame.f_back
    return frame


@functools.lru_cache(maxsize=64)
def _statements(path: str) -> tuple[str, list[ast.stmt]] | None:
    """A file's source and its statements, parsed once per session."""
    try:
        source = "".join(linecache.getlines(path))
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return None
    return source, [node for node in ast.walk(tree) if isinstance(node, ast.stmt)]


def statement_source(path: str, line: int) -> str:
    """The statement starting or running through `line`, stripped (a header line for blocks)."""
    text = clip(linecache.getline(path, line).strip(), SOURCE_CHARS)
    parsed = _statements(path)
    if parsed is None:
        return text
    source, statements = parsed
    around = [node for node in statements if node.lineno <= line <= (node.end_lineno or 0)]
    if not around:
        return text
    innermost = max(around, key=lambda node: node.lineno)
    if hasattr(innermost, "body"):  # a block: its header line, not the whole block
        return text
    segment = ast.get_source_segment(source, innermost, padded=True)
    return clip(textwrap.dedent(segment).strip(), SOURCE_CHARS) if segment else text


def _is_plugin_file(path: str) -> bool:
    """fixloop's own plugin files (this one and its siblings)."""
    absolute = os.path.abspath(path)
    name = os.path.basename(absolute)
    return os.path.dirname(absolute) == HERE and name.startswith("fixloop_pytest")
