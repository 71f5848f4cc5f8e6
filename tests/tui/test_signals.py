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


def test_work_that_ends_returns_its_result() -> None:
    async def work() -> int:
        return 7

    assert run_stoppable(work()) == 7


def test_the_handler_before_is_put_back_and_a_second_sigterm_is_one() -> None:
    def sentinel(signum: int, frame: object) -> None:
        raise AssertionError("the sentinel handler ran")

    before = signal.signal(signal.SIGTERM, sentinel)
    cancelled: list[BaseException] = []

    async def work() -> None:
        loop = asyncio.get_running_loop()
        loop.call_later(0.05, os.kill, os.getpid(), signal.SIGTERM)
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError as exc:
            cancelled.append(exc)
            os.kill(os.getpid(), signal.SIGTERM)  # a second one, while it cleans up
            await asyncio.sleep(0.1)  # the cleanup is not cut short
            cancelled.append(exc)
            raise

    try:
        with pytest.raises(Terminated):
            run_stoppable(work())
        assert len(cancelled) == 2
        assert signal.getsignal(signal.SIGTERM) is sentinel
    finally:
        signal.signal(signal.SIGTERM, before)


def test_ctrl_c_stays_a_plain_keyboard_interrupt() -> None:
    async def work() -> None:
        asyncio.get_running_loop().call_later(0.05, os.kill, os.getpid(), signal.SIGINT)
        await asyncio.sleep(30)

    before = signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal
    try:
        with pytest.raises(KeyboardInterrupt) as raised:
            run_stoppable(work())
    finally:
        signal.signal(signal.SIGINT, before)
    assert not isinstance(raised.value, Terminated)
