"""The memory limit of a rootless gVisor sandbox, which has no cgroup of its own.

Every page a sandboxed process uses lives in one file of gVisor's sentry (the memfd
`runsc-memory`); its allocated size is the sandbox's memory. The watch measures it from
outside every POLL_S and kills the sandbox once it passes the limit: that kill is the
sandbox's OOM kill, reported as such. Between two measurements a job can grow by what it
allocates meanwhile; RLIMIT_AS bounds each process in the meantime.

Two ways to measure: the gvisor backend's own sentry runs as this user, so its memory
file is read directly (a stat); a rootless engine's sentry runs as another uid of the
engine's user namespace, whose /proc/<pid>/fd this user may not open, so the sentry is
asked instead (`runsc events --stats`, about 50 ms; it counts the same pages).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Awaitable, Callable
from pathlib import Path

POLL_S = 0.05
MEMORY_FILE = "/memfd:runsc-memory"
SENTRY = b"runsc-sandbox"

# Bytes a sandbox uses right now, however that is found out.
Measure = Callable[[], Awaitable[int]]


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


def sentry_argv(container_id: str) -> tuple[int, list[str]] | None:
    """(pid, command line) of the sentry (`runsc-sandbox ... <id>`) of one sandbox, if it runs."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv[0] == SENTRY and container_id.encode() in argv:
            return int(entry.name), [arg.decode(errors="replace") for arg in argv if arg]
    return None


def sentry_memory_file(container_id: str) -> Path | None:
    """The memory file of the sentry of one sandbox, if it runs and this user may read it."""
    found = sentry_argv(container_id)
    return memory_file(found[0]) if found is not None else None


def file_measure(path: Path) -> Measure:
    """Measures a sentry's memory file (the gvisor backend's own sandboxes)."""

    async def measure() -> int:
        return used_bytes(path)

    return measure


def stats_command(runsc: str, sentry: list[str], container_id: str) -> list[str]:
    """`runsc events --stats` for one sandbox, with the global flags (`--root=`, ...) its
    engine started the sentry with (its command line, `sentry`)."""
    flags = sentry[1 : sentry.index("boot")] if "boot" in sentry else []
    return [runsc, *flags, "events", "--stats", container_id]


def stats_bytes(output: bytes) -> int:
    """The memory in use that `runsc events --stats` printed; 0 if it printed none."""
    with contextlib.suppress(ValueError, KeyError, TypeError):
        return int(json.loads(output)["data"]["memory"]["usage"]["usage"])
    return 0


def stats_measure(runsc: str, sentry: list[str], container_id: str) -> Measure:
    """Asks a sentry for its memory (a rootless engine's sandboxes)."""
    argv = stats_command(runsc, sentry, container_id)

    async def measure() -> int:
        process = await asyncio.create_subprocess_exec(
            *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL
        )
        try:
            out, _ = await process.communicate()
        finally:
            if process.returncode is None:  # the watch was cancelled meanwhile
                process.kill()
                await asyncio.shield(process.wait())
        return stats_bytes(out)

    return measure


class MemoryWatch:
    """Kills a sandbox whose memory passes `limit_bytes`; `fired` says it did."""

    def __init__(self, measure: Measure, limit_bytes: int, kill: Callable[[], Awaitable[None]]):
        self.measure = measure
        self.limit_bytes = limit_bytes
        self.kill = kill
        self.fired = False
        self.peak_bytes = 0

    async def watch(self) -> None:
        """Runs until cancelled, or until it killed the sandbox."""
        while True:
            used = await self.measure()
            self.peak_bytes = max(self.peak_bytes, used)
            if used > self.limit_bytes:
                self.fired = True
                await self.kill()
                return
            await asyncio.sleep(POLL_S)
