"""SIGTERM taken as ctrl+c by the commands that run the loop (tui/signals.py)."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from engine.run.guards import TERMINATED, abort_reason
from tui.signals import Terminated, run_stoppable


def test_sigterm_cancels_the_work_which_hears_why_then_terminated_is_raised() -> None:
    heard: list[BaseException] = []

    async def work() -> str:
        asyncio.get_running_loop().call_later(0.05, os.kill, os.getpid(), signal.SIGTERM)
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError as exc:
            heard.append(exc)
            raise
        return "never"

    with pytest.raises(Terminated) as raised:
        run_stoppable(work())
    assert isinstance(raised.value, KeyboardInterrupt)  # every ctrl+c handler takes it
    assert str(raised.value) == TERMINATED
    assert abort_reason(heard[0]) == TERMINATED
    assert abort_reason(asyncio.CancelledError()) == "aborted by you"
    # Afterwards SIGTERM is the process's own again.
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


def test_work_that_ends_returns_its_result() -> None:
    async def work() -> int:
        return 7

    assert run_stoppable(work()) == 7
