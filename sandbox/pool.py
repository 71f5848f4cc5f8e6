"""A warm pool: sandboxes started before the jobs that will use them.

Each pooled sandbox serves exactly one job (a reused one would keep the last
job's files and processes), so taking one schedules its replacement.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine, Hashable
from typing import Any, Generic, TypeVar

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")


class WarmPool(Generic[K, T]):
    """Keeps up to `size` ready items per key; `size=0` starts every item on demand."""

    def __init__(
        self,
        *,
        size: int,
        start: Callable[[K], Coroutine[Any, Any, T]],
        discard: Callable[[T], Awaitable[None]],
    ) -> None:
        self.size = size
        self._start = start
        self._discard = discard
        self._ready: dict[K, list[asyncio.Task[T]]] = {}
        self._closed = False

    def fill(self, key: K) -> None:
        """Start items in the background until `size` are ready or starting for `key`."""
        if self._closed:
            return
        slots = self._ready.setdefault(key, [])
        while len(slots) < self.size:
            slots.append(asyncio.create_task(self._start(key)))

    async def take(self, key: K) -> T:
        """A ready (or starting) item for `key` if there is one, else a new one."""
        slots = self._ready.get(key)
        if slots:
            task = slots.pop(0)
            self.fill(key)
            try:
                return await task
            except asyncio.CancelledError:
                if task.done() and not task.cancelled() and task.exception() is None:
                    await self._discard(task.result())
                raise
            except Exception:
                pass  # a warm start failed: fall through and try once on demand
        elif self.size > 0:
            self.fill(key)
        return await self._start(key)

    async def close(self) -> None:
        """Discard every pooled item; items still starting are cancelled (their start
        cleans up after itself)."""
        self._closed = True
        tasks = [task for slots in self._ready.values() for task in slots]
        self._ready.clear()
        for task in tasks:
            if not task.done():
                task.cancel()
        for task in tasks:
            try:
                item = await task
            except BaseException:  # cancelled or failed: nothing was left to discard
                continue
            await self._discard(item)

    @property
    def pending(self) -> int:
        return sum(len(slots) for slots in self._ready.values())
