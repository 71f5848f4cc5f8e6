"""The runsc binary itself: finding it, whether it can run here (as root, or as this
user with `--rootless`), its command lines, and fixloop's containers in its state dir
(listed, and reaped when the process that made them died).
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
from pathlib import Path

from sandbox import cgroups
from sandbox.errors import SandboxUnavailable
from sandbox.owners import ID_PREFIX, left_by_dead_process, rootless, runtime_dir


def find_runsc() -> str:
    found = shutil.which("runsc") or ("/usr/bin/runsc" if Path("/usr/bin/runsc").exists() else None)
    if found is None:
        raise SandboxUnavailable(
            "runsc (gVisor) is not installed; install it with: apt-get install -y runsc"
        )
    return found


def check_can_run() -> str:
    """The runsc path, or SandboxUnavailable saying what to fix."""
    runsc = find_runsc()
    if rootless():
        problem = user_namespace_problem()
        if problem is not None:
            raise SandboxUnavailable(problem)
        return runsc
    if not cgroups.writable():
        raise SandboxUnavailable(
            "/sys/fs/cgroup is not writable, so sandbox memory limits cannot be enforced; "
            "run on a host (or a privileged container) with writable cgroups"
        )
    return runsc


def user_namespace_problem(proc_sys: Path = Path("/proc/sys")) -> str | None:
    """Why `runsc --rootless` cannot make its user namespace here (with the fix), or None."""
    knobs = {
        "user/max_user_namespaces": ("0", "sysctl -w user.max_user_namespaces=15000"),
        "kernel/unprivileged_userns_clone": ("0", "sysctl -w kernel.unprivileged_userns_clone=1"),
        "kernel/apparmor_restrict_unprivileged_userns": (
            "1",
            "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0",
        ),
    }
    for knob, (blocking, fix) in knobs.items():
        try:
            value = (proc_sys / knob).read_text().strip()
        except OSError:
            continue  # this kernel has no such knob: it does not block
        if value == blocking:
            return (
                f"user namespaces are off for normal users ({knob.replace('/', '.')} = {value}), "
                f"so runsc --rootless cannot start; as root: {fix}; or run fixloop as root"
            )
    return None


def runsc_command(runsc: str, state: Path, *args: str, rootless: bool) -> list[str]:
    """A runsc command line. Rootless: `--rootless`, and `--ignore-cgroups` since a user
    cannot write the cgroups runsc would make (limits then come from the bundle's rlimits
    and the memory watch)."""
    flags = ["--rootless", "--ignore-cgroups"] if rootless else []
    return [runsc, *flags, "--root", str(state), "--network=none", *args]


def list_containers(runsc: str) -> list[str]:
    """fixloop's runsc containers that exist right now (any process's)."""
    state = runtime_dir() / "runsc"
    if not state.is_dir():
        return []
    try:
        done = subprocess.run(
            runsc_command(runsc, state, "list", "-quiet", rootless=rootless()),
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [name for name in done.stdout.split() if name.startswith(ID_PREFIX)]


def reap_stale(runsc: str) -> list[str]:
    """Remove sandboxes, cgroups and bundles left by fixloop processes that died."""
    reaped: list[str] = []
    for name in list_containers(runsc):
        if not left_by_dead_process(name):
            continue
        state = runtime_dir() / "runsc"
        for args in (("kill", "--all", name, "KILL"), ("delete", "--force", name)):
            with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                subprocess.run(
                    runsc_command(runsc, state, *args, rootless=rootless()),
                    capture_output=True,
                    timeout=10,
                    check=False,
                )
        reaped.append(name)
    # A user can remove no cgroup of root's, and makes none of its own.
    for path in [] if rootless() else cgroups.leftovers():
        if left_by_dead_process(path.name):
            cgroups.SandboxCgroup(
                name=path.name, memory_bytes=0, cpus=1, pids=1, created=[path]
            ).remove(wait_s=1)
    bundles = runtime_dir() / "bundles"
    if bundles.is_dir():
        for path in bundles.iterdir():
            if left_by_dead_process(path.name):
                shutil.rmtree(path, ignore_errors=True)
    return reaped
