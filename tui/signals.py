"""SIGTERM taken as ctrl+c: a `kill`, `timeout 600 fixloop-tui ...` or a cancelled CI job ends a
headless run or a bench the way ctrl+c does (the run records `aborted: terminated (SIGTERM)`
in its trail, the bench's ledger keeps every finished run), not mid-step with no word in the
trail. (`bench --ray`: Ray installs its own SIGTERM handler, which exits at once.)"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Coroutine
from typing import Any, TypeVar

from engine.run.guards import TERMINATED

T = TypeVar("T")


class Terminated(KeyboardInterrupt):
    """What `run_stoppable` raises after SIGTERM, where ctrl+c raises KeyboardInterrupt (so
    every handler of ctrl+c handles it); `str()` says which signal."""

    def __init__(self) -> None:
        super().__init__(TERMINATED)


def run_stoppable(work: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(work)`, with SIGTERM cancelling `work` as asyncio cancels it on ctrl+c
    (the cancellation's message is `TERMINATED`), then raising `Terminated`."""

    async def main() -> T:
        task = asyncio.current_task()
        assert task is not None
        loop = asyncio.get_running_loop()
        signalled = False

        def terminate() -> None:
            nonlocal signalled
            if signalled:
                return  # once: a second signal must not cut the cleanup the first started
            signalled = True
            task.cancel(TERMINATED)

        previous = signal.getsignal(signal.SIGTERM)
        try:
            loop.add_signal_handler(signal.SIGTERM, terminate)
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread
            return await work
        try:
            return await work
        except asyncio.CancelledError:
            if signalled:
                raise Terminated from None
            raise
        finally:
            loop.remove_signal_handler(signal.SIGTERM)  # which sets SIG_DFL: put back ours
            signal.signal(signal.SIGTERM, previous)

    return asyncio.run(main())
