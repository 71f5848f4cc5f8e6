"""The per-test time limit of fixloop's pytest plugin: a test still running at its limit is
stopped where it is (a SIGALRM in the main thread raises `TestTimeout` at the line it runs),
so it fails with its stack and the rest of the session goes on. The stage's own timeout
stays the outer bound (a hang in C code the signal cannot interrupt).

The limit comes from FIXLOOP_TEST_TIMEOUT (seconds); a test marked `@pytest.mark.timeout(N)`
(pytest-timeout's marker, registered here when that plugin is absent) gets N. When
pytest-timeout itself is loaded, its own limits apply and this module stands aside.
Stdlib and pytest only: it runs inside the sandbox.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import os
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType

import pytest

TIMEOUT_VARIABLE = "FIXLOOP_TEST_TIMEOUT"
MARKER = "timeout(seconds): the longest this test may run (fixloop; pytest-timeout's marker)"


class TestTimeout(Exception):
    """A test ran past its limit; the message says where it was."""

    __test__ = False  # not a pytest test class


def configured_limit() -> float | None:
    """The session's default per-test limit, from the environment; None: no limit."""
    try:
        seconds = float(os.environ.get(TIMEOUT_VARIABLE, ""))
    except ValueError:
        return None
    return seconds if seconds > 0 else None


def limit_of(item: pytest.Item, default: float | None) -> float | None:
    """The item's own `timeout` marker (its first argument or `seconds=`), else `default`."""
    marker = item.get_closest_marker("timeout")
    if marker is None:
        return default
    value = (
        marker.args[0]
        if marker.args
        else marker.kwargs.get("seconds", marker.kwargs.get("timeout"))
    )
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        return default
    return seconds if seconds > 0 else None


@contextlib.contextmanager
def time_limit(seconds: float | None, where: Callable[[FrameType | None], str]) -> Iterator[None]:
    """Raise TestTimeout in the running code after `seconds`; `where` describes the frame
    the signal interrupted. Does nothing off the main thread or without SIGALRM."""
    usable = (
        seconds is not None
        and hasattr(signal, "SIGALRM")
        and threading.current_thread() is threading.main_thread()
    )
    if not usable:
        yield
        return
    assert seconds is not None

    def expire(signum: int, frame: FrameType | None) -> None:
        raise TestTimeout(f"did not finish in {seconds:g} s; {where(frame)}")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def describe_hang(frame: FrameType | None, relative: Callable[[str], str | None]) -> str:
    """ "it was at line 5 in src/bits.py (loop at lines 3-6)": the deepest frame inside the
    project (`relative` gives its path, None outside the project) and the loop around it."""
    while frame is not None:
        path = relative(frame.f_code.co_filename)
        if path is not None:
            line = frame.f_lineno
            span = loop_around(frame.f_code.co_filename, line)
            loop = f" (loop at lines {span[0]}-{span[1]})" if span else ""
            return f"it was at line {line} in {path}, in {frame.f_code.co_name}{loop}"
        frame = frame.f_back
    return "it was outside the project's code"


@functools.lru_cache(maxsize=32)
def _loops(path: str) -> tuple[tuple[int, int], ...]:
    try:
        with open(path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read())
    except (OSError, SyntaxError, ValueError):
        return ()
    return tuple(
        (node.lineno, node.end_lineno or node.lineno)
        for node in ast.walk(tree)
        if isinstance(node, ast.For | ast.While | ast.AsyncFor)
    )


def loop_around(path: str, line: int) -> tuple[int, int] | None:
    """The innermost `for`/`while` of `path` whose lines hold `line`."""
    holding = [span for span in _loops(path) if span[0] <= line <= span[1]]
    return min(holding, key=lambda span: span[1] - span[0]) if holding else None
