"""Cgroups that fixloop creates for each sandbox, so it can read the OOM counter.

runsc enforces limits in a cgroup it creates itself, but deletes that cgroup on
exit and with it the evidence of an OOM kill. We pre-create the cgroup, write
the limits, point the OCI bundle at it, read the counters afterwards, and
remove it ourselves. cgroup v1 (hybrid) and v2 are both handled.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from sandbox.errors import SandboxError

CGROUP_ROOT = Path("/sys/fs/cgroup")
PARENT = "fixloop"
V1_CONTROLLERS = ("memory", "pids", "cpu", "cpuacct", "cpuset")


def is_v2(root: Path = CGROUP_ROOT) -> bool:
    return (root / "cgroup.controllers").exists()


def writable(root: Path = CGROUP_ROOT) -> bool:
    base = root if is_v2(root) else root / "memory"
    return base.is_dir() and os.access(base, os.W_OK)


@dataclass
class SandboxCgroup:
    """The cgroup(s) of one sandbox, named `fixloop/<name>` under each controller."""

    name: str
    memory_bytes: int
    cpus: float
    pids: int
    root: Path = CGROUP_ROOT
    created: list[Path] = field(default_factory=list)

    @property
    def oci_path(self) -> str:
        return f"/{PARENT}/{self.name}"

    def create(self) -> None:
        try:
            if is_v2(self.root):
                self._create_v2()
            else:
                self._create_v1()
        except OSError as exc:
            self.remove()
            raise SandboxError(
                f"cannot create the sandbox cgroup under {self.root}: {exc.strerror}; "
                "fixloop needs root and a writable /sys/fs/cgroup"
            ) from exc

    def _create_v1(self) -> None:
        period = 100_000
        for controller in V1_CONTROLLERS:
            base = self.root / controller
            if not base.is_dir():
                continue
            parent = base / PARENT
            parent.mkdir(exist_ok=True)
            if controller == "cpuset":
                # A v1 cpuset cgroup is unusable until cpus and mems are set.
                for knob in ("cpuset.cpus", "cpuset.mems"):
                    if not (parent / knob).read_text().strip():
                        (parent / knob).write_text((base / knob).read_text())
            path = parent / self.name
            path.mkdir()
            self.created.append(path)
            if controller == "cpuset":
                for knob in ("cpuset.cpus", "cpuset.mems"):
                    (path / knob).write_text((parent / knob).read_text())
            elif controller == "memory":
                (path / "memory.limit_in_bytes").write_text(str(self.memory_bytes))
            elif controller == "pids":
                (path / "pids.max").write_text(str(self.pids))
            elif controller == "cpu":
                (path / "cpu.cfs_period_us").write_text(str(period))
                (path / "cpu.cfs_quota_us").write_text(str(int(self.cpus * period)))

    def _create_v2(self) -> None:
        parent = self.root / PARENT
        parent.mkdir(exist_ok=True)
        wanted = {"memory", "pids", "cpu"}
        available = set((self.root / "cgroup.subtree_control").read_text().split())
        missing = wanted - available
        if missing:
            (self.root / "cgroup.subtree_control").write_text(
                " ".join(f"+{c}" for c in sorted(missing))
            )
        (parent / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in sorted(wanted)))
        path = parent / self.name
        path.mkdir()
        self.created.append(path)
        (path / "memory.max").write_text(str(self.memory_bytes))
        (path / "memory.swap.max").write_text("0")
        (path / "pids.max").write_text(str(self.pids))
        (path / "cpu.max").write_text(f"{int(self.cpus * 100_000)} 100000")

    def oom_killed(self) -> bool:
        """Whether the kernel's OOM killer fired in this cgroup."""
        for path in self.created:
            for knob in ("memory.oom_control", "memory.events"):
                counters = _read_counters(path / knob)
                if counters.get("oom_kill", 0) > 0:
                    return True
        return False

    def remove(self, wait_s: float = 3.0) -> list[Path]:
        """Remove every created cgroup; returns those that would not go."""
        deadline = time.monotonic() + wait_s
        left: list[Path] = []
        for path in reversed(self.created):
            while True:
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    # Busy: processes are still leaving. Kill what is left, then retry.
                    _kill_members(path)
                    if time.monotonic() > deadline:
                        left.append(path)
                        break
                    time.sleep(0.05)
        self.created = [p for p in self.created if p in left]
        return left


def _read_counters(path: Path) -> dict[str, int]:
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return {}
    counters: dict[str, int] = {}
    for line in lines:
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            counters[parts[0]] = int(parts[1])
    return counters


def _kill_members(path: Path) -> None:
    try:
        pids = (path / "cgroup.procs").read_text().split()
    except OSError:
        return
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError, ValueError):
            os.kill(int(pid), signal.SIGKILL)


def leftovers(root: Path = CGROUP_ROOT) -> list[Path]:
    """Sandbox cgroups that still exist (for doctor and tests)."""
    bases = [root / PARENT] if is_v2(root) else [root / c / PARENT for c in V1_CONTROLLERS]
    found: list[Path] = []
    for base in bases:
        if base.is_dir():
            found.extend(p for p in base.iterdir() if p.is_dir())
    return sorted(found)
