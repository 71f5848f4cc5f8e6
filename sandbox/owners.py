"""Whose a sandbox is: every container, cgroup and bundle fixloop makes is named
`fixloop-<pid>-<random>` after the process that made it, so what a dead process left
behind (on the host, in runtime_dir(), or in an engine) can be told from a live one's.
Also where a user's sandboxes live: root's under /run/fixloop, anyone else's in a
private directory of their own.
"""

from __future__ import annotations

import os
import secrets
import stat
import tempfile
from pathlib import Path

from sandbox.errors import SandboxUnavailable

ID_PREFIX = "fixloop-"


def rootless() -> bool:
    """fixloop runs as a normal user: sandboxes run `runsc --rootless`, in the user's dirs."""
    return os.geteuid() != 0


def runtime_dir() -> Path:
    """Where bundles, skeleton roots (root) and runsc state live: FIXLOOP_RUNTIME_DIR, else
    /run/fixloop for root, else $XDG_RUNTIME_DIR/fixloop or /tmp/fixloop-<uid> for a user."""
    if "FIXLOOP_RUNTIME_DIR" in os.environ:
        return Path(os.environ["FIXLOOP_RUNTIME_DIR"])
    if not rootless():
        return Path("/run/fixloop")
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if runtime and Path(runtime).is_absolute() and _owned_by_me(Path(runtime)):
        return Path(runtime) / "fixloop"
    return Path(tempfile.gettempdir()) / f"fixloop-{os.geteuid()}"


def skeleton_dir() -> Path:
    """Where the read-only skeleton roots are kept: the runtime dir for root, the user's
    cache ($XDG_CACHE_HOME/fixloop or ~/.cache/fixloop) for anyone else, so a /tmp
    cleaner never removes one a sandbox is using."""
    if not rootless() or "FIXLOOP_RUNTIME_DIR" in os.environ:
        return runtime_dir()
    cache = os.environ.get("XDG_CACHE_HOME", "")
    base = Path(cache) if cache and Path(cache).is_absolute() else Path.home() / ".cache"
    return base / "fixloop" / "sandbox"


def private_dir(path: Path) -> Path:
    """`path` made (0700) if missing, and proven ours and private: a directory under a
    shared /tmp that another user made first is refused, never used."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = path.lstat()
    except OSError as exc:
        raise SandboxUnavailable(
            f"cannot make {path} for the sandbox: {exc.strerror}; set XDG_CACHE_HOME and "
            "XDG_RUNTIME_DIR (or FIXLOOP_RUNTIME_DIR) to directories of this user's"
        ) from exc
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
        raise SandboxUnavailable(
            f"{path} is not a directory of this user's; remove it or set FIXLOOP_RUNTIME_DIR "
            "to a private directory"
        )
    if info.st_mode & 0o077:
        path.chmod(0o700)
    return path


def _owned_by_me(path: Path) -> bool:
    try:
        info = path.stat()
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid()


def new_name() -> str:
    """A fresh sandbox name owned by this process."""
    return f"{ID_PREFIX}{os.getpid()}-{secrets.token_hex(4)}"


def owner_pid(name: str) -> int | None:
    """The pid of the process that made the sandbox `name`; None if not one of fixloop's."""
    parts = name.removeprefix(ID_PREFIX).split("-")
    if not name.startswith(ID_PREFIX) or not parts[0].isdigit():
        return None
    return int(parts[0])


def left_by_dead_process(name: str) -> bool:
    """One of fixloop's sandboxes whose process has died: nobody will clean it up but us."""
    owner = owner_pid(name)
    return owner is not None and not _alive(owner)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
