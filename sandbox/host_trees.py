"""Which host directories a sandbox may be given: the rules every read-only mount is held to,
whoever asks for it (a runner's tree, an interpreter's, an extra mount).

A mount is judged by where it resolves, never by the name it was asked under: a symlink a
repository commits (`node_modules -> /`) is followed here exactly as the kernel would follow
it when binding, so the name cannot smuggle in more than its target.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from sandbox.errors import MountRefused


def user_home() -> Path:
    """The home directory of the user fixloop runs as (from the password database, not $HOME:
    nothing in the environment may move it)."""
    try:
        import pwd

        return Path(pwd.getpwuid(os.getuid()).pw_dir).resolve()
    except (ImportError, KeyError):
        return Path.home().resolve()


def is_within(path: Path, root: Path) -> bool:
    """`path` is `root` or below it (both taken as they are: resolve them first)."""
    return path == root or root in path.parents


def too_broad(path: Path) -> str | None:
    """Why the resolved `path` may never be mounted, or None: the root of the host, or the
    user's home or a directory above it (keys, shell history, other projects live there)."""
    if path == Path("/"):
        return "is the root of the host"
    home = user_home()
    if is_within(home, path):
        return "is your home directory" if path == home else f"holds your home directory {home}"
    return None


def owned_by_user(path: Path) -> bool:
    """`path` (resolved) belongs to root or to the user fixloop runs as, and nobody else may
    write to it: no other account can have put it there or change it later."""
    try:
        info = path.stat()
    except OSError:
        return False
    return info.st_uid in (0, os.getuid()) and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def refuse_broad(path: Path, what: str) -> Path:
    """`path` resolved, or MountRefused naming `what` when it is too broad to mount."""
    resolved = path.resolve()
    reason = too_broad(resolved)
    if reason is not None:
        shown = f"{path} (resolves to {resolved})" if resolved != path else str(path)
        raise MountRefused(f"{what} {shown} {reason}: fixloop never mounts it into a sandbox")
    return resolved
