"""Reading a job's output without letting it exhaust fixloop's memory.

A stream keeps its head and its tail (test summaries live at the end) and
drains the rest, so a job printing 50 MB neither blocks nor bloats the host.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import Awaitable, Callable, Sequence

CHUNK = 64 * 1024
KILL_WAIT_S = 5.0


class CappedStream:
    """Keeps at most `cap` bytes of a stream: the first half and the last half."""

    def __init__(self, cap: int) -> None:
        self._head_cap = cap // 2
        self._tail_cap = cap - self._head_cap
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0

    @property
    def truncated(self) -> bool:
        return self.total > self._head_cap + self._tail_cap

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self._head_cap - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self._tail += chunk
            excess = len(self._tail) - self._tail_cap
            if excess > 0:
                del self._tail[:excess]

    def text(self) -> str:
        if not self.truncated:
            return (self._head + self._tail).decode("utf-8", errors="replace")
        dropped = self.total - len(self._head) - len(self._tail)
        marker = f"\n[... fixloop dropped {dropped} bytes of output here ...]\n"
        return (
            self._head.decode("utf-8", errors="replace")
            + marker
            + self._tail.decode("utf-8", errors="replace")
        )

    async def drain(self, reader: asyncio.StreamReader) -> None:
        while chunk := await reader.read(CHUNK):
            self.feed(chunk)


async def await_job(
    wait: Callable[[], Awaitable[object]],
    kill: Callable[[], Awaitable[None]],
    readers: Sequence[asyncio.Task[None]],
    *,
    timeout_s: float,
    grace_s: float,
    send: Callable[[], Awaitable[None]] | None = None,
) -> tuple[bool, int]:
    """Hand the job its input (`send`, while the readers already drain its output), wait
    for it at most `timeout_s`, then kill whatever is left of it (also when the wait is
    cancelled: a daemonized grandchild may still hold the pipes) and give its output
    readers `grace_s` to finish. Returns (timed out, duration in ms)."""
    started = time.monotonic()
    timed_out = False
    try:
        if send is not None:
            await send()
        try:
            await asyncio.wait_for(wait(), timeout=timeout_s)
        except TimeoutError:
            timed_out = True
        finally:
            duration_ms = int((time.monotonic() - started) * 1000)
            await kill()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(wait(), timeout=KILL_WAIT_S)
        await asyncio.wait(readers, timeout=grace_s)
    finally:
        for task in readers:
            task.cancel()
    return timed_out, duration_ms


def exit_status(returncode: int | None, timed_out: bool) -> int:
    """A shell-style exit code: 128 + N for a signal, 124 for a job killed at its timeout."""
    code = returncode if returncode is not None else -signal.SIGKILL
    status = 128 - code if code < 0 else code
    if timed_out and status in (0, 128 + signal.SIGKILL):
        return 124
    return status
