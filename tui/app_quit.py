"""The person ends a run early, a part of FixloopApp: stop (resumable), abort, and quit,
which mid-run first asks which of the two; the terminal going away (SIGHUP, or stdin hung up
with no signal, as after `runuser` or a dropped SSH connection) and SIGTERM, which stop the run
(resumable) and quit; and cancelling a task on another thread's loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import select
import signal
import sys
from pathlib import Path
from typing import Any

from textual.app import App

from engine.run.guards import HUNG_UP, SIGHUP_HUNG_UP, TERMINATED, stop_message
from tui.interactive_gate import InteractiveGate
from tui.screens.confirm import ConfirmScreen, abort_question
from tui.screens.end import RunOutcome
from tui.screens.main import MainScreen
from tui.screens.quit import QuitChoice, QuitScreen
from tui.screens.task import TaskScreen

QUIT_GRACE_S = 30.0  # how long quitting waits for the engine to stop and close its sandbox
TERMINAL_CHECK_S = 1.0  # how often the app looks whether its terminal is still there

TaskOnLoop = tuple[asyncio.AbstractEventLoop, asyncio.Task[Any]]
"""A task running on another thread's asyncio loop (the engine's, the check's), and that loop."""


class StopAndQuit(App[int]):
    """FixloopApp's stop, abort and quit. An App subclass like FixloopApp's other parts: `self`
    is the App, for Textual and for mypy."""

    # Set by FixloopApp.__init__.
    project: Path
    main: MainScreen
    gate: InteractiveGate
    running: bool
    outcome: RunOutcome | None  # the run's ending, once it has one
    exit_status: int
    _quitting: bool  # the app exits once the run's thread is done (the person quit, or hung up)
    _cancelled: bool  # the engine's task was cancelled (only once)
    _engine: TaskOnLoop | None
    _checking: TaskOnLoop | None

    def action_abort_run(self) -> None:
        """`x` and the palette: asks first; the confirm's default answer keeps the run."""
        if not self.running or isinstance(self.screen, ConfirmScreen):
            return
        self.push_screen(abort_question(), self._abort_confirmed)

    def _abort_confirmed(self, yes: bool | None) -> None:
        if yes:
            self.abort_now()

    def abort_now(self) -> None:
        """End the run as aborted (the person said so): a waiting review ends it there, else
        the engine's task is cancelled."""
        if not self.running:
            return
        at_gate = self.gate.waiting
        self.gate.close("aborted by you")  # a waiting review ends the run cleanly as aborted
        if not at_gate and not self._cancelled:
            self._cancelled = True  # once: a second cancel would cut the sandbox's clean-up
            cancel(self._engine)  # mid-model or mid-verification: stop it there
        self.notify("stopping the run…", title="abort")

    def action_stop_run(self, why: str = "stopped by you") -> None:
        """Stop the run so that `fixloop-tui resume` continues it: at the gate, the waiting
        review raises RunInterrupted; elsewhere the engine's task is cancelled with STOP. `why`
        is what the trail records."""
        if not self.running:
            return
        at_gate = self.gate.waiting
        self.gate.stop(why)
        if not at_gate and not self._cancelled:
            self._cancelled = True  # once: a second cancel would cut the sandbox's clean-up
            cancel(self._engine, stop_message(why))
        self.notify("stopping the run; it stays resumable…", title="stop")

    def watch_terminal(self) -> None:
        """From now on SIGHUP, SIGTERM and a hung-up stdin end the app through `hang_up`
        (without this, SIGHUP and SIGTERM kill it on the spot, the trail left without a
        word, and a stdin hung up with no signal leaves it spinning on a core for ever,
        Textual's input thread reading nothing in a loop)."""
        loop = asyncio.get_running_loop()
        for signum, why in ((signal.SIGHUP, SIGHUP_HUNG_UP), (signal.SIGTERM, TERMINATED)):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(signum, self.hang_up, why)
        stdin = sys.__stdin__
        if stdin is None or not stdin.isatty():
            return
        fd = stdin.fileno()

        def look() -> None:
            if hung_up(fd):
                self.hang_up(HUNG_UP)

        self.set_interval(TERMINAL_CHECK_S, look)

    def hang_up(self, why: str) -> None:
        """Nobody can watch or answer the app any more (its terminal went away, or it was told
        to end): a run is stopped as the person's stop would stop it (resumable, `why` in its
        trail), its sandbox closed, and the app exits."""
        if self._quitting:
            return
        self._quitting = True  # the app exits when the run's thread is done (RunOver)
        if not self.running:
            cancel(self._checking)
            self.exit(self.exit_status)
            return
        if self.outcome is None:  # an ended run's thread is only closing its sandbox
            self.action_stop_run(f"stopped: {why}")
        self.set_timer(QUIT_GRACE_S, lambda: self.exit(self.exit_status))

    async def action_quit(self) -> None:
        """Out of the app; mid-run it first asks: stop (resumable), abort, or stay."""
        if not self.running:
            if isinstance(self.screen, TaskScreen) and self.screen.asks_before_quitting():
                return  # the typed task first: its question quits again on yes
            cancel(self._checking)  # the check of the checkout: its sandbox closes as it stops
            self.exit(self.exit_status)
            return
        if self._quitting or isinstance(self.screen, QuitScreen):
            return
        if self.outcome is not None:  # the run has ended: its thread still closes the sandbox
            self._quitting = True  # the app exits when the thread is done (RunOver)
            self.notify("closing the run's sandbox, then quitting…", title="quit")
            self.set_timer(QUIT_GRACE_S, lambda: self.exit(self.exit_status))
            return
        self.push_screen(QuitScreen(self.main.view.run_id, str(self.project)), self._quit_chosen)

    def _quit_chosen(self, choice: QuitChoice | None) -> None:
        if choice is None or self._quitting:
            return
        if not self.running:  # the run ended while the dialog was up
            self.exit(self.exit_status)
            return
        self._quitting = True
        if choice == "stop":
            self.action_stop_run()
        else:
            self.abort_now()
        self.set_timer(QUIT_GRACE_S, lambda: self.exit(self.exit_status))


def hung_up(fd: int) -> bool:
    """Whether the terminal on `fd` has gone (its other end closed): poll says so at once,
    without reading what the app's input thread is there to read."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    gone = select.POLLHUP | select.POLLERR | select.POLLNVAL
    return any(events & gone for _, events in poller.poll(0))


def cancel(running: TaskOnLoop | None, message: str | None = None) -> None:
    """Cancel a task running on another thread's loop (if it still runs); `message` (a
    `stop_message`) tells the engine what the cancellation means."""
    if running is None:
        return
    loop, task = running
    with contextlib.suppress(RuntimeError):  # that loop has already closed
        loop.call_soon_threadsafe(task.cancel, message)
