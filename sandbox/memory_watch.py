"""The memory limit of a rootless gVisor sandbox, which has no cgroup of its own.

Every page a sandboxed process uses lives in one file of gVisor's sentry (the memfd
`runsc-memory`); its allocated size is the sandbox's memory. The watch reads it from
outside every POLL_S and kills the sandbox once it passes the limit: that kill is the
sandbox's OOM kill, reported as such. Between two reads a job can grow by what it
allocates in POLL_S; RLIMIT_AS bounds each process in the meantime.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Awaitable, Callable
from pathlib import Path

POLL_S = 0.05
MEMORY_FILE = "/memfd:runsc-memory"


def memory_file(sentry_pid: int) -> Path | None:
    """The /proc path of the sentry's memory file, or None if it has none (yet)."""
    fds = Path(f"/proc/{sentry_pid}/fd")
    with contextlib.suppress(OSError):
        for fd in fds.iterdir():
            with contextlib.suppress(OSError):
                if os.readlink(fd).startswith(MEMORY_FILE):
                    return fd
    return None


def used_bytes(path: Path) -> int:
    """Bytes the memory file really holds (its allocated blocks, not its sparse size)."""
    try:
        return path.stat().st_blocks * 512
    except OSError:
        return 0


def sentry_memory_file(container_id: str) -> Path | None:
    """The memory file of the sentry (`runsc-sandbox ... <id>`) of one sandbox, if it runs."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv[0] == b"runsc-sandbox" and container_id.encode() in argv:
            return memory_file(int(entry.name))
    return None


class MemoryWatch:
    """Kills a sandbox whose memory passes `limit_bytes`; `fired` says it did."""

    def __init__(self, path: Path, limit_bytes: int, kill: Callable[[], Awaitable[None]]):
        self.path = path
        self.limit_bytes = limit_bytes
        self.kill = kill
        self.fired = False
        self.peak_bytes = 0

    async def watch(self) -> None:
        """Runs until cancelled, or until it killed the sandbox."""
        while True:
            used = used_bytes(self.path)
            self.peak_bytes = max(self.peak_bytes, used)
            if used > self.limit_bytes:
                self.fired = True
                await self.kill()
                return
            await asyncio.sleep(POLL_S)
