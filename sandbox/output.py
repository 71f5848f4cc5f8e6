"""Reading a job's output without letting it exhaust fixloop's memory.

A stream keeps its head and its tail (test summaries live at the end) and
drains the rest, so a job printing 50 MB neither blocks nor bloats the host.
"""

from __future__ import annotations

import asyncio

CHUNK = 64 * 1024


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
