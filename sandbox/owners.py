"""Whose a sandbox is: every container, cgroup and bundle fixloop makes is named
`fixloop-<pid>-<random>` after the process that made it, so what a dead process left
behind (on the host, in runtime_dir(), or in an engine) can be told from a live one's.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

ID_PREFIX = "fixloop-"


def runtime_dir() -> Path:
    """Where bundles, skeleton roots and runsc state live (root-only)."""
    return Path(os.environ.get("FIXLOOP_RUNTIME_DIR", "/run/fixloop"))


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
