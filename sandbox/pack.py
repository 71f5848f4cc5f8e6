"""Turning a host directory into the tar stream a sandbox unpacks.

Symlinks are stored as links, never followed, so a workspace link to a host
file carries only its target's *name* into the sandbox, not its content.
"""

from __future__ import annotations

import io
import os
import tarfile
from collections.abc import Iterable
from pathlib import Path

from sandbox.errors import SandboxError


def pack_directory(root: Path, excludes: Iterable[str], max_bytes: int) -> bytes:
    """A tar of `root` without excluded names (at any depth), refused past `max_bytes`."""
    if not root.is_dir():
        raise SandboxError(f"workspace {root} is not a directory")
    skip = frozenset(excludes)
    buffer = io.BytesIO()
    size = 0
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
            dirnames[:] = sorted(d for d in dirnames if d not in skip)
            base = Path(dirpath)
            for name in [*dirnames, *sorted(f for f in filenames if f not in skip)]:
                path = base / name
                info = archive.gettarinfo(str(path), arcname=str(path.relative_to(root)))
                info.uid = info.gid = 65534
                info.uname = info.gname = ""
                if info.isreg():
                    size += info.size
                    if size > max_bytes:
                        raise SandboxError(
                            f"workspace {root} holds more than {max_bytes // 2**20} MiB; "
                            "raise the sandbox tmpfs limit or exclude large files"
                        )
                    with path.open("rb") as handle:
                        archive.addfile(info, handle)
                elif info.isdir() or info.issym():
                    archive.addfile(info)
                # sockets, fifos and devices are not part of a project
    return buffer.getvalue()
