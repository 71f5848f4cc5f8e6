"""The per-test time limit of fixloop's pytest plugin: a test still running at its limit is
stopped where it is (a SIGALRM in the main thread raises `TestTimeout` at the line it runs),
so it fails with its stack and the rest of the session goes on.

A test can keep the signal from reaching it (it blocks or ignores SIGALRM, or catches the
exception and goes on), so a `Watchdog` thread that needs no signal stands behind the alarm:
a test still running `GRACE_S` after its limit is recorded as timed out, the report is written
and the session ends there (`os._exit`), so the stage ends in seconds, not at its own
timeout. Code that holds the interpreter's lock and never returns to it (a C loop) stops that
thread too; faulthandler's own thread, which needs no lock, then dumps where it was and ends
the process (`HARD_STOP_S` later). The stage's timeout stays the outer bound. A hostile test
gains nothing from any of this: each path ends the session as failed, never as a pass.

The limit comes from FIXLOOP_TEST_TIMEOUT (seconds); a test marked `@pytest.mark.timeout(N)`
(pytest-timeout's marker, registered here when that plugin is absent) gets N. A test the
baseline saw take long gets more: FIXLOOP_TEST_NEEDS (JSON, test id to seconds, the host's
multiple of its baseline time) raises its limit to that need and keeps any shortening above
it (`limit_for_test`). When pytest-timeout itself is loaded, its own limits apply and this
module stands aside.

Two things keep a session with several hanging tests inside the stage's time, so that it
still reports instead of being killed with nothing said: once a test has timed out, later
tests get a shorter limit (`after_a_timeout`: the same bug usually hangs them too; never
below a test's own need), and the
session keeps to a budget, FIXLOOP_STAGE_TIMEOUT less a reserve for writing the report
(`TimeBudget`): no test's limit runs past it, and when it is nearly spent the rest of the
tests are not run and the session fails, saying so (never a pass on fewer tests).
Stdlib and pytest only: it runs inside the sandbox.
"""

from __future__ import annotations

import ast
import contextlib
import faulthandler
import functools
import json
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from types import FrameType

import pytest

TIMEOUT_VARIABLE = "FIXLOOP_TEST_TIMEOUT"
STAGE_VARIABLE = "FIXLOOP_STAGE_TIMEOUT"
NEEDS_VARIABLE = "FIXLOOP_TEST_NEEDS"
RECORD_S = 0.5  # a test whose call took this long has its time in the report's `durations`
MAX_RECORDED = 300  # the slowest this many, at most
MIN_TEST_S = 1.0  # a test is not started with less time than this left in the budget
GRACE_S = 2.0  # how long past its limit a test may run before the watchdog ends the session
HARD_STOP_S = 3.0  # after that, how long before faulthandler ends the process without a report
_STARTED = time.monotonic()  # the plugin is imported as pytest starts: the budget's start
MARKER = "timeout(seconds): the longest this test may run (fixloop; pytest-timeout's marker)"


class TestTimeout(Exception):
    """A test ran past its limit; the message says where it was."""

    __test__ = False  # not a pytest test class


def configured_limit(variable: str = TIMEOUT_VARIABLE) -> float | None:
    """Seconds from the environment (the per-test limit by default); None: no limit."""
    try:
        seconds = float(os.environ.get(variable, ""))
    except ValueError:
        return None
    return seconds if seconds > 0 else None


def configured_needs(variable: str = NEEDS_VARIABLE) -> dict[str, float]:
    """Each listed test's time need, from the environment's JSON object; what is not a
    positive finite number of seconds for a string id is left out, and so is a value that is
    not an object: a need only ever widens a limit the stage's budget still bounds."""
    try:
        data = json.loads(os.environ.get(variable, "") or "{}")
    except ValueError:
        return {}
    if not isinstance(data, dict):
        return {}
    return {
        nodeid: float(seconds)
        for nodeid, seconds in data.items()
        if isinstance(nodeid, str)
        and isinstance(seconds, int | float)
        and not isinstance(seconds, bool)
        and math.isfinite(seconds)
        and seconds > 0
    }


def slowest(durations: dict[str, float], count: int = MAX_RECORDED) -> dict[str, float]:
    """The `count` longest of the recorded call times, rounded to 10 ms."""
    ranked = sorted(durations.items(), key=lambda item: item[1], reverse=True)[:count]
    return {nodeid: round(seconds, 2) for nodeid, seconds in ranked}


def after_a_timeout(limit: float) -> float:
    """A later test's limit once one test has timed out: a fifth, at least a second."""
    return min(limit, max(MIN_TEST_S, limit / 5))


class TimeBudget:
    """The stage's time as the session sees it: its timeout, from the plugin's import, less a
    reserve (15%, at least 2 s) for the interpreter's start and the report's writing."""

    def __init__(self, stage_s: float | None, started: float = _STARTED) -> None:
        self.stage_s = stage_s
        self.deadline = started + stage_s - max(2.0, stage_s * 0.15) if stage_s else None

    @classmethod
    def from_env(cls) -> TimeBudget:
        return cls(configured_limit(STAGE_VARIABLE))

    def remaining(self) -> float | None:
        """Seconds left; None: no budget."""
        return None if self.deadline is None else self.deadline - time.monotonic()

    def spent(self) -> bool:
        """Too little left to start another test."""
        left = self.remaining()
        return left is not None and left < MIN_TEST_S


def limit_for_test(
    own: float | None,
    budget: TimeBudget,
    timeouts: int,
    *,
    marked: bool = False,
    need: float | None = None,
) -> tuple[float | None, str]:
    """One test's limit and why it is less than its own: `own` (its marker or the default),
    raised to `need` (what the baseline saw it take, with a margin) unless a marker set it,
    shortened after a timeout but never below that need, and never past the budget."""
    limit, why = own, ""
    if limit is not None and not marked:
        floor = need or 0.0
        shortened = max(after_a_timeout(limit), floor)
        limit = max(limit, floor)
        if timeouts and shortened < limit:
            limit, why = shortened, "shortened after an earlier test timed out"
    left = budget.remaining()
    if left is not None and (limit is None or left < limit):
        limit, why = max(left, MIN_TEST_S), "the stage's time was nearly up"
    return limit, why


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
def time_limit(
    seconds: float | None, where: Callable[[FrameType | None], str], why: str = ""
) -> Iterator[None]:
    """Raise TestTimeout in the running code after `seconds`; `where` describes the frame
    the signal interrupted, `why` a limit shorter than the test's own. Does nothing off the
    main thread or without SIGALRM."""
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
        shown = f"{seconds:.1f}".rstrip("0").rstrip(".")
        because = f" ({why})" if why else ""
        raise TestTimeout(f"did not finish in {shown} s{because}; {where(frame)}")

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


Overrun = Callable[[pytest.Item, str], None]


class Watchdog:
    """Ends the session when a test outlives its limit by `grace` seconds: a daemon thread
    that relies on no signal. `watch` arms it around one test's call; `on_overrun(item,
    message)` records the test, writes the report and ends the process (it never returns
    normally, or the watchdog would stand by for the rest of a hung test).

    As a last resort against code that holds the interpreter's lock (this thread cannot
    run then), faulthandler ends the process `hard_stop` seconds later, dumping the stack to
    `dump_fd` (the real stderr), where the host reads which test hung."""

    def __init__(
        self,
        on_overrun: Overrun,
        where: Callable[[FrameType | None], str],
        *,
        grace: float = GRACE_S,
        hard_stop: float = HARD_STOP_S,
        dump_fd: int | None = None,
    ) -> None:
        self.on_overrun = on_overrun
        self.where = where
        self.grace = grace
        self.hard_stop = hard_stop
        self.dump_fd = dump_fd
        self._changed = threading.Condition()
        self._armed: tuple[float, pytest.Item, float, str] | None = None
        self._thread: threading.Thread | None = None
        self._main = threading.main_thread().ident

    @contextlib.contextmanager
    def watch(self, item: pytest.Item, seconds: float | None, why: str = "") -> Iterator[None]:
        """Stand behind the alarm for one call of `item` limited to `seconds`."""
        if seconds is None:
            yield
            return
        deadline = time.monotonic() + seconds + self.grace
        with self._changed:
            self._armed = (deadline, item, seconds, why)
            self._changed.notify()
        self._start()
        hard = self.dump_fd is not None and _dump_later(
            seconds + self.grace + self.hard_stop, self.dump_fd
        )
        try:
            yield
        finally:
            if hard:
                faulthandler.cancel_dump_traceback_later()
            with self._changed:
                self._armed = None
                self._changed.notify()

    def _start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name="fixloop-test-watchdog", daemon=True
            )
            self._thread.start()

    def _run(self) -> None:
        while True:
            with self._changed:
                while self._armed is None:
                    self._changed.wait()
                deadline, item, seconds, why = self._armed
                left = deadline - time.monotonic()
                if left > 0:
                    self._changed.wait(left)
                    continue
                self._armed = None
            frame = sys._current_frames().get(self._main) if self._main is not None else None
            self.on_overrun(item, overrun_message(seconds, why, self.where(frame)))


def overrun_message(seconds: float, why: str, where: str) -> str:
    """What the packet says of a test the watchdog stopped."""
    shown = f"{seconds:.1f}".rstrip("0").rstrip(".")
    because = f" ({why})" if why else ""
    return (
        f"did not finish in {shown} s{because} and did not stop at its limit (the code blocked, "
        f"ignored or caught the alarm), so the session was ended there; {where}"
    )


def _dump_later(seconds: float, fd: int) -> bool:
    try:
        faulthandler.dump_traceback_later(seconds, exit=True, file=fd)
    except (OSError, ValueError, RuntimeError):
        return False
    return True
