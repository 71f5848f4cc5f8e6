"""How the docker backend knows a container runs under gVisor: the kernel report each
container makes before its job, the refusal of any other runtime, and the verdict on an
engine (`EngineCheck`). Imports no docker-py: `--sandbox auto` and `doctor` read these.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from sandbox.errors import SandboxUnavailable

ALLOW_RUNC_VARIABLE = "FIXLOOP_ALLOW_RUNC"
# gVisor's sentry reports this fixed build line for its emulated kernel.
GVISOR_BANNER = re.compile(r"^Linux version \S+ #1 SMP Sun Jan 10 15:06:54 PST 2016$")


@dataclass(frozen=True)
class KernelReport:
    """What a container said about its kernel before it got a job."""

    version: str
    root: str  # the root mount's "type options" from /proc/self/mounts

    @property
    def gvisor(self) -> bool:
        # A host kernel's overlay root names host paths (lowerdir=); gVisor's never does.
        return bool(GVISOR_BANNER.match(self.version)) and "lowerdir=" not in self.root

    @property
    def described(self) -> str:
        return (
            f"kernel {self.version or 'unknown'!r}, root {self.root.split(' ')[0] or 'unknown'!r}"
        )

    @classmethod
    def parse(cls, text: str) -> KernelReport:
        version = root = ""
        for line in text.splitlines():
            if line.startswith("FIXLOOP-KERNEL "):
                version = line.removeprefix("FIXLOOP-KERNEL ").strip()
            elif line.startswith("FIXLOOP-ROOT "):
                root = line.removeprefix("FIXLOOP-ROOT ").strip()
        return cls(version=version, root=root)


def runc_allowed() -> bool:
    """FIXLOOP_ALLOW_RUNC=1 (the command line's --allow-runc is passed explicitly)."""
    return os.environ.get(ALLOW_RUNC_VARIABLE, "").lower() in ("1", "true", "yes", "on")


def require_gvisor(report: KernelReport, engine: str, *, allow_runc: bool | None = None) -> bool:
    """Whether the container runs under gVisor; refuses it if not, unless runc is allowed.

    Warns nothing itself: the backend warns once per job that runs outside gVisor.
    """
    if report.gvisor:
        return True
    if runc_allowed() if allow_runc is None else allow_runc:
        return False
    raise SandboxUnavailable(
        f"the container engine at {engine} does not run containers under gVisor "
        f"(the container saw {report.described}); make runsc the engine's default "
        "runtime (see docs/docker.md), or use --sandbox gvisor"
    )


@dataclass(frozen=True)
class Runtime:
    """One runtime an engine knows, as its /info says: the name containers ask for, the
    binary and the arguments the engine adds."""

    name: str
    path: str
    args: tuple[str, ...] = ()


@dataclass(frozen=True)
class EngineCheck:
    """What `--sandbox auto` and `doctor` need to know about the engine at `url`."""

    url: str
    missing: bool = False  # True: no socket there, so nothing was asked
    engine: str | None = None  # None: nothing answers there
    kernel: KernelReport | None = None  # None: no container ran
    error: str | None = None  # why the docker backend cannot use it; None if it can
    rootless: bool = False  # runs as a normal user: no cgroup, limits are the backend's own
    # Asked only of an engine whose containers are not under gVisor (for doctor's fix):
    default_runtime: str | None = None
    runtimes: tuple[Runtime, ...] = ()

    @property
    def gvisor(self) -> bool:
        return self.kernel is not None and self.kernel.gvisor
