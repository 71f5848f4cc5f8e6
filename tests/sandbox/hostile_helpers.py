"""What the hostile-program suite inspects on the host: this process's sandbox
leftovers (containers, cgroups, bundles, host processes), the host process
count, the memory charged to our sandboxes, and snapshots of host files.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import subprocess
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

from sandbox import cgroups
from sandbox.contract import ExecRequest, Limits
from sandbox.docker import backend as docker_backend
from sandbox.docker.backend import DockerSandbox
from sandbox.gvisor import GvisorSandbox, list_containers
from sandbox.memory_watch import SENTRY, memory_file, stats_bytes, stats_command, used_bytes
from sandbox.owners import ID_PREFIX, runtime_dir
from sandbox.runsc import find_runsc

# Every container, cgroup and bundle this test process creates starts with this.
OURS = f"{ID_PREFIX}{os.getpid()}-"
ANY_OWNER = re.compile(rf"{re.escape(ID_PREFIX)}(\d+)-")


def python_job(code: str, *args: str, workdir: Path | None = None, **limits: float) -> ExecRequest:
    """`python -c CODE ARGS...` in a fresh sandbox; the job reads ARGS from sys.argv[1:]."""
    return ExecRequest(
        argv=["python", "-c", textwrap.dedent(code), *args],
        workdir=workdir,
        limits=Limits(**{"timeout_s": 20, "memory_mb": 256, **limits}),
    )


@dataclass(frozen=True)
class Leftovers:
    """Traces of this process's sandboxes that still exist on the host."""

    containers: list[str]
    cgroups: list[str]
    bundles: list[str]
    processes: list[int]

    @property
    def empty(self) -> bool:
        return not (self.containers or self.cgroups or self.bundles or self.processes)


def containers(backend: GvisorSandbox | DockerSandbox) -> list[str]:
    """The backend's containers that exist right now: runsc's, or the engine's."""
    if isinstance(backend, GvisorSandbox):
        return list_containers(backend.runsc)
    return docker_backend.list_containers(backend.client)


def leftovers(backend: GvisorSandbox | DockerSandbox) -> Leftovers:
    """What of this process's sandboxes exists on the host right now.

    Processes are found by the cgroup they run in, which the engine's (conmon,
    runsc's gofer and sandbox, the guest's stubs) share with the gvisor backend's.
    """
    bundles = runtime_dir() / "bundles"
    return Leftovers(
        containers=[name for name in containers(backend) if name.startswith(OURS)],
        cgroups=[str(p) for p in cgroups.leftovers() if p.name.startswith(OURS)],
        bundles=sorted(p.name for p in bundles.iterdir() if p.name.startswith(OURS))
        if bundles.is_dir()
        else [],
        processes=[pid for pid, owner in _sandbox_processes() if owner == os.getpid()],
    )


async def assert_host_clean(backend: GvisorSandbox | DockerSandbox) -> None:
    """No container, cgroup, bundle or host process of this process's sandboxes is left.

    Containers, cgroups and bundles must be gone when `run` returns; killed host
    processes get a moment to be reaped by the kernel.
    """
    found = await asyncio.to_thread(leftovers, backend)
    deadline = time.monotonic() + 3
    while found.processes and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
        found = await asyncio.to_thread(leftovers, backend)
    assert found.empty, f"sandbox leftovers on the host: {found}"


def sandbox_memory_bytes() -> int:
    """Memory the kernel charges to this process's sandboxes right now (rootless, with
    no cgroup: what their sentries' memory files hold)."""
    total = 0
    for path in cgroups.leftovers():
        if path.name.startswith(OURS):
            for knob in ("memory.usage_in_bytes", "memory.current"):  # cgroup v1, v2
                with contextlib.suppress(OSError, ValueError):
                    total += int((path / knob).read_text())
    if os.geteuid() != 0:
        ours = {pid for pid, owner in _sandbox_processes() if owner == os.getpid()}
        for pid in ours:
            found = memory_file(pid)
            total += used_bytes(found) if found is not None else 0
        total += sum(_engine_sentry_bytes(ours))
    return total


def _engine_sentry_bytes(ours: set[int]) -> list[int]:
    """What the sentries a rootless engine started for our containers hold: children of our
    conmons, named by the engine's container id only, in a user namespace whose memory
    files this user may not open, so each is asked (`runsc events --stats`)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if argv[0] != SENTRY or parent not in ours:
            continue
        sentry = [arg.decode() for arg in argv if arg]
        command = stats_command(find_runsc(), sentry, sentry[-1])
        done = subprocess.run(command, capture_output=True, timeout=30, check=False)
        found.append(stats_bytes(done.stdout))
    return found


def host_process_count() -> int:
    """Entries in /proc/[0-9]*, minus the sandboxes of *other* fixloop processes.

    Other sessions on this machine may run sandboxes at the same time; their
    processes are not ours to count.
    """
    others = sum(1 for _, owner in _sandbox_processes() if owner != os.getpid())
    return sum(1 for p in Path("/proc").iterdir() if p.name.isdigit()) - others


async def settled_process_count(at_most: int, within_s: float = 10.0) -> int:
    """The host process count once it is at most `at_most`, or when `within_s` ran out."""
    deadline = time.monotonic() + within_s
    count = host_process_count()
    while count > at_most and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
        count = host_process_count()
    return count


def _sandbox_processes() -> list[tuple[int, int]]:
    """(host pid, owning fixloop pid) of every process of a fixloop sandbox.

    runsc's own processes name the container on their command line; the ptrace
    stubs that carry guest processes have no command line but sit in its cgroup.
    """
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            text = (entry / "cmdline").read_bytes().decode(errors="replace")
            text += (entry / "cgroup").read_text()
        except OSError:
            continue  # exited while we looked
        match = ANY_OWNER.search(text)
        if match:
            found.append((int(entry.name), int(match.group(1))))
    return found


def snapshot(*paths: Path) -> dict[str, str]:
    """Every path under `paths` with what it holds (file text, link target, or a
    directory marker), absent paths included, to compare before and after a job."""
    state: dict[str, str] = {}
    for root in paths:
        if not root.exists() and not root.is_symlink():
            state[str(root)] = "<absent>"
            continue
        for path in [root, *(sorted(root.rglob("*")) if root.is_dir() else [])]:
            if path.is_symlink():
                state[str(path)] = f"-> {os.readlink(path)}"
            elif path.is_dir():
                state[str(path)] = "<dir>"
            else:
                state[str(path)] = path.read_bytes().decode(errors="replace")
    return state


def rss_bytes() -> int:
    """This process's resident memory right now."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS in /proc/self/status")
