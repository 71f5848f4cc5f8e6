"""SIGTERM taken as ctrl+c: a `kill`, `timeout 600 fixloop-tui ...` or a cancelled CI job ends a
headless run or a bench the way ctrl+c does (the run records `aborted: terminated (SIGTERM)`
in its trail, the bench's ledger keeps every finished run), not mid-step with no word in the
trail. (`bench --ray`: Ray installs its own SIGTERM handler, which exits at once.)

A headless run also takes SIGHUP (its terminal closed: a dropped SSH connection, a closed
window) as the app does: the run is stopped, resumable, the reason in its trail."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Coroutine
from typing import Any, TypeVar

from engine.run.guards import STOP, TERMINATED

T = TypeVar("T")


class Terminated(KeyboardInterrupt):
    """What `run_stoppable` raises after SIGTERM (or SIGHUP), where ctrl+c raises
    KeyboardInterrupt (so every handler of ctrl+c handles it); `str()` says which signal."""

    def __init__(self, why: str = TERMINATED) -> None:
        super().__init__(why)


def run_stoppable(work: Coroutine[Any, Any, T], *, hang_up: str | None = None) -> T:
    """`asyncio.run(work)`, with SIGTERM cancelling `work` as asyncio cancels it on ctrl+c
    (the cancellation's message is `TERMINATED`), then raising `Terminated`. With `hang_up`,
    SIGHUP cancels `work` with that message (a run's `stop_message`, so the run stops
    resumable); a cancellation it does not turn into its own ending raises `Terminated`."""

    async def main() -> T:
        task = asyncio.current_task()
        assert task is not None
        loop = asyncio.get_running_loop()
        said: str | None = None  # the message of the first signal's cancellation

        def end(message: str) -> None:
            nonlocal said
            if said is not None:
                return  # once: a second signal must not cut the cleanup the first started
            said = message
            task.cancel(message)

        signals = {signal.SIGTERM: TERMINATED}
        if hang_up is not None:
            signals[signal.SIGHUP] = hang_up
        previous = {signum: signal.getsignal(signum) for signum in signals}
        try:
            for signum, message in signals.items():
                loop.add_signal_handler(signum, end, message)
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread
            return await work
        try:
            return await work
        except asyncio.CancelledError:
            if said is not None:
                raise Terminated(said.removeprefix(f"{STOP}:")) from None
            raise
        finally:
            for signum, handler in previous.items():
                loop.remove_signal_handler(signum)  # which sets SIG_DFL: put back ours
                signal.signal(signum, handler)

    return asyncio.run(main())
