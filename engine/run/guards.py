"""The loop's guards (ARCHITECTURE.md, "Guards and endings"): when to stop, what the run's
ending is called, and `RunEnded`, the one way a run ends. Pure decisions; the loop only asks.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from engine.text.durations import said_duration

# The exit codes import RunStatus from here before the app's first frame: the packet (and the
# verifier's modules under it) is only named in annotations.
if TYPE_CHECKING:
    from engine.feedback.packet import RepairPacket


class RunStatus(StrEnum):
    OK = "ok"
    NO_TESTS = "no_tests"  # refused before the model was asked: no test could show a fix
    SUSPICIOUS_PASS = "suspicious_pass"
    ENV_FAILURE = "env_failure"
    STALLED = "stalled"
    NO_PROGRESS = "no_progress"
    EXHAUSTED = "exhausted"
    BUDGET_EXCEEDED = "budget_exceeded"
    ABORTED = "aborted"
    ERROR = "error"


class RunEnded(Exception):
    """Raised from any step to end the run with a status; the loop catches it once.
    `accepted_suspicious`: an ok the person allowed despite these doubts."""

    def __init__(
        self, status: RunStatus, reason: str, accepted_suspicious: Sequence[str] = ()
    ) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.accepted_suspicious = list(accepted_suspicious)


class RunInterrupted(Exception):
    """Raised (by a gate, or as a cancellation's message) when the person stops the run to
    resume it later: the loop records the `RunStopped` event and writes no ending."""

    def __init__(self, reason: str = "stopped by you") -> None:
        super().__init__(reason)
        self.reason = reason


class ModelUnreachable(RunInterrupted):
    """The model could not be reached after every retry (an outage, not an answer): the run
    stops resumable, as a stop by the person does, the cause in its trail; `resume` goes on
    once the server is back, or with another endpoint."""

    def __init__(self, cause: str) -> None:
        super().__init__(f"the model could not be reached: {cause}")
        self.cause = cause


IDLE_STALL = "answers in a row changed no code"  # a stall's reason: "2 answers in a row ..."
# A stall's reason when every one of those answers changed only pinned test files.
HELD_BACK_STALL = "answers in a row changed only test files, which are held back"
STOP = "fixloop:stop"  # the message of a task cancellation that means RunInterrupted
# The message of a cancellation by SIGTERM (a `kill`, `timeout`, a cancelled CI job), which a
# command takes as ctrl+c: the run records how it ended.
TERMINATED = "terminated (SIGTERM)"
# Why a run stopped whose terminal went away: the app (stdin hung up, or SIGHUP) and a headless
# run (SIGHUP) stop it resumable, this in its trail.
HUNG_UP = "the terminal closed"
SIGHUP_HUNG_UP = f"{HUNG_UP} (SIGHUP)"


def stop_message(reason: str) -> str:
    """The message of a task cancellation that means `RunInterrupted(reason)`."""
    return f"{STOP}:{reason}"


def stop_of(exc: BaseException) -> RunInterrupted | None:
    """The person's stop, whether a gate raised it or the run's task was cancelled with STOP
    (or with `stop_message`, which also says why)."""
    if isinstance(exc, RunInterrupted):
        return exc
    if isinstance(exc, asyncio.CancelledError):
        for arg in exc.args:
            if arg == STOP:
                return RunInterrupted()
            if isinstance(arg, str) and arg.startswith(f"{STOP}:"):
                return RunInterrupted(arg.removeprefix(f"{STOP}:"))
    return None


def abort_reason(exc: BaseException) -> str:
    """Why a run that was cut short ended, in words (never a bare exception class name)."""
    if isinstance(exc, asyncio.CancelledError):
        return TERMINATED if TERMINATED in exc.args else "aborted by you"
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted (ctrl+c)"
    return f"fixloop failed: {exc or type(exc).__name__}"


class Budget(BaseModel):
    """Caps on one run; None means no cap."""

    model_config = ConfigDict(frozen=True)

    max_tokens: int | None = None
    max_cost_usd: float | None = None
    wall_clock_s: float | None = None


@dataclass
class Spend:
    """What the run has used so far."""

    tokens: int = 0
    cost_usd: float = 0.0
    started: float = field(default_factory=time.monotonic)

    @property
    def elapsed_s(self) -> float:
        return time.monotonic() - self.started

    def over_budget(self, budget: Budget) -> Trip | None:
        """The budget guard: which cap was passed, as a trip, or None."""
        over = None
        if budget.max_tokens is not None and self.tokens > budget.max_tokens:
            over = f"used {self.tokens} tokens, over the cap of {budget.max_tokens}"
        elif budget.max_cost_usd is not None and self.cost_usd > budget.max_cost_usd:
            over = f"spent ${self.cost_usd:.4f}, over the cap of ${budget.max_cost_usd:.4f}"
        elif budget.wall_clock_s is not None and self.elapsed_s > budget.wall_clock_s:
            ran, cap = said_duration(self.elapsed_s), said_duration(budget.wall_clock_s)
            over = f"ran {ran}, over the cap of {cap}"
        return Trip("budget", RunStatus.BUDGET_EXCEEDED, over) if over else None


def ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


@dataclass
class StallDetector:
    """The same normalised error signature twice in a row stalls the run, with one grace
    iteration when the last edit touched different files than the one before it. So do
    `idle_limit` answers in a row that change no file: the model is re-sending the code it
    was shown, and asking again only spends the budget."""

    last_signature: str | None = None
    repeats: int = 1
    grace_used: bool = False
    touched_history: list[frozenset[str]] = field(default_factory=list)
    idle_limit: int = 2
    idle: int = 0
    idle_held_back: int = 0  # of the idle answers, those whose edits were all held back

    def unchanged(self, answers: int = 1, *, held_back: bool = False) -> bool:
        """Record answers that changed no code (`held_back`: they changed only pinned test
        files); True when the run has stalled."""
        self.idle += answers
        self.idle_held_back += answers if held_back else 0
        return self.idle >= self.idle_limit

    def idle_reason(self) -> str:
        """Why the idle answers stalled the run, naming held-back test edits as the cause."""
        idle, held = self.idle, self.idle_held_back
        if held >= idle:
            return f"{idle} {HELD_BACK_STALL}"
        if held:
            return f"{idle} {IDLE_STALL} ({held} of them changed only test files, held back)"
        return f"{idle} {IDLE_STALL}"

    def observe(self, signature: str, touched: Sequence[str]) -> bool:
        """Record one verification after an edit; True when the run has stalled."""
        self.idle = self.idle_held_back = 0
        files = frozenset(touched)
        previous = self.touched_history[-1] if self.touched_history else None
        self.touched_history.append(files)
        if signature != self.last_signature:
            self.last_signature = signature
            self.repeats = 1
            return False
        self.repeats += 1
        if previous is not None and previous != files and not self.grace_used:
            self.grace_used = True
            return False
        if previous is None and not self.grace_used:
            # The first edit did not change the error the run started with.
            self.grace_used = True
            return False
        return True

    def note(self) -> str | None:
        """What the model is told when it sees the same error again."""
        if self.repeats < 2:
            return None
        recent = [sorted(files) for files in self.touched_history[-2:] if files]
        touched = " and ".join(", ".join(files) for files in recent) or "the same files"
        return (
            f"This is the {ordinal(self.repeats)} time you see this exact error; your last "
            f"attempts touched {touched}. Try a different hypothesis."
        )


@dataclass(frozen=True)
class FailurePoint:
    """How far the first failing test got: its id, the line of the test it stopped at, and
    whether an assertion stopped it there (the call returned, its value was wrong) or an
    exception (the code did not get that far). A later line, or an assertion where an
    exception was, is a test that ran further: progress a one-test task can make while its
    passed count stays 0."""

    test: str
    line: int
    asserted: bool

    @property
    def depth(self) -> tuple[int, int]:
        return (self.line, int(self.asserted))

    @classmethod
    def of(cls, packet: RepairPacket | None) -> FailurePoint | None:
        """The packet's first failing test, where it stopped; None when the first failure is
        no test that ran (a collection error, a timeout, a failed command): breaking the
        code so that the tests cannot run is never a test that got further."""
        if packet is None or not packet.failures:
            return None
        first = packet.failures[0]
        if first.kind != "failed" or not first.line:
            return None
        exception = first.exception or ""
        asserted = not exception or exception.startswith("AssertionError")
        return cls(first.test, first.line, asserted)


@dataclass
class ProgressTracker:
    """No progress: for `limit` iterations in a row the passed-test count has not risen and
    the first failing test got no further (`FailurePoint`) than it, or its test, ever did.

    A test failing first that had not failed first before counts as moving on, while no
    test that passed at the best count is lost; one seen before counts only past the
    furthest point it reached, so two failures taking turns are not progress."""

    limit: int = 2
    best: int | None = None
    streak: int = 0
    furthest: dict[str, tuple[int, int]] = field(default_factory=dict)

    def start(self, passed: int | None, front: FailurePoint | None = None) -> None:
        self.best = passed
        self.furthest = {}
        self._moved_on(front)

    def observe(self, passed: int | None, front: FailurePoint | None = None) -> bool:
        """Record one verification after an edit; True when the run makes no progress."""
        kept = passed is None or self.best is None or passed >= self.best
        moved = self._moved_on(front) and kept
        if passed is not None and (self.best is None or passed > self.best):
            self.best = passed
            self.streak = 0
            return False
        if moved:
            self.streak = 0
            return False
        self.streak += 1
        return self.streak >= self.limit

    def _moved_on(self, front: FailurePoint | None) -> bool:
        """Record `front`; True when its test fails first for the first time, or further."""
        if front is None:
            return False
        reached = self.furthest.get(front.test)
        if reached is not None and front.depth <= reached:
            return False
        self.furthest[front.test] = front.depth
        return True


@dataclass(frozen=True)
class Trip:
    """A guard that ended the run: its name in the trail, the ending, and why."""

    guard: str
    status: RunStatus
    detail: str

    def ending(self) -> RunEnded:
        return RunEnded(self.status, self.detail)


class Guards:
    """The stall and progress guards together, as the loop asks them after each answer."""

    def __init__(
        self, no_progress_limit: int, restarts: int = 0, last_iteration: int | None = None
    ) -> None:
        self.stall = StallDetector()
        self.progress = ProgressTracker(limit=no_progress_limit)
        self.restarts = restarts  # stalls the run may answer by changing its approach
        self.last_iteration = last_iteration

    def changes_approach(self, trip: Trip | None, n: int) -> bool:
        """Whether the loop answers `trip` in iteration `n` by changing its approach instead
        of ending: a stall, a change of approach left, and an iteration left to use it in."""
        return (
            trip is not None
            and trip.guard == "stalled"
            and self.restarts > 0
            and (self.last_iteration is None or n < self.last_iteration)
        )

    def restarted(
        self,
        signature: str,
        passed: int | None,
        *,
        spent: bool = True,
        front: FailurePoint | None = None,
    ) -> None:
        """The run changed its approach after a stall: the guards start over from `signature`;
        `spent`: it used one of the run's changes of approach (`keep_asking` spends none)."""
        self.restarts -= int(spent)
        self.stall = StallDetector(last_signature=signature)
        self.progress = ProgressTracker(limit=self.progress.limit)
        self.progress.start(passed, front)

    def start(self, signature: str, passed: int | None, front: FailurePoint | None = None) -> None:
        """The run's first verification: what the model was asked to fix."""
        self.stall.last_signature = signature
        self.progress.start(passed, front)

    def after_edit(
        self,
        signature: str,
        touched: Sequence[str],
        passed: int | None,
        front: FailurePoint | None = None,
    ) -> Trip | None:
        """A verification after a committed edit (`front`: how far its first failing test
        got); a trip when the run should end."""
        if self.stall.observe(signature, touched):
            detail = f"the same error {self.stall.repeats} times in a row"
            return Trip("stalled", RunStatus.STALLED, detail)
        if self.progress.observe(passed, front):
            detail = (
                f"for {self.progress.limit} iterations the passed-test count has not risen "
                "and the first failing test got no further"
            )
            return Trip("no_progress", RunStatus.NO_PROGRESS, detail)
        return None

    def after_no_change(self, answers: int = 1, *, held_back: bool = False) -> Trip | None:
        """`answers` answers in a row that changed no code (an answer and its re-ask;
        `held_back`: an answer whose edits were all to pinned test files); a trip when there
        were too many in a row."""
        if self.stall.unchanged(answers, held_back=held_back):
            return Trip("stalled", RunStatus.STALLED, self.stall.idle_reason())
        return None

    def repeat_note(self) -> str | None:
        return self.stall.note()
