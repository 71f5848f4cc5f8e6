"""Turning a host directory into the tar stream a sandbox unpacks.

Symlinks are stored as links, never followed, so a workspace link to a host
file carries only its target's *name* into the sandbox, not its content. A link that
leaves the workspace (absolute, or `..` past its root) or makes a loop (it points at a
directory holding itself, or links lead back to one another) is refused before anything
runs: inside the sandbox it would name the sandbox's own files, or make every tool that
walks the tree (pytest's collection) run until the stage's timeout. Links that stay inside
and do not loop (`docs/latest -> v2`) are kept.
"""

from __future__ import annotations

import io
import os
import tarfile
from collections.abc import Iterable
from pathlib import Path

from sandbox.errors import SandboxError, WorkspaceRefused

REFUSED_LINK = "workspace link "  # how a refused link's message starts, for the engine to tell


def pack_directory(
    root: Path, excludes: Iterable[str], max_bytes: int, *, skip_paths: Iterable[str] = ()
) -> bytes:
    """A tar of `root` without excluded names (at any depth) nor the directories at
    `skip_paths` (root-relative, posix: what the sandbox mounts there), refused past
    `max_bytes`."""
    if not root.is_dir():
        raise SandboxError(f"workspace {root} is not a directory")
    skip = frozenset(excludes)
    skipped = frozenset(skip_paths)
    buffer = io.BytesIO()
    size = 0
    links: list[Path] = []
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
            base = Path(dirpath)
            dirnames[:] = sorted(
                d
                for d in dirnames
                if d not in skip and (base / d).relative_to(root).as_posix() not in skipped
            )
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
                    if info.issym():
                        links.append(path)
                    archive.addfile(info)
                # sockets, fifos and devices are not part of a project
    check_links(root, links)
    return buffer.getvalue()


def check_links(root: Path, links: Iterable[Path]) -> None:
    """Refuse the first link of `links` (under `root`) that leaves the workspace or loops,
    with one line naming it and its target. Resolution follows the host's links, which are
    the same as the copy's once none of them leaves `root`."""
    top = root.resolve()
    into: dict[Path, tuple[Path, Path]] = {}  # link -> (the directory it is in, where it leads)
    for link in links:
        target = os.readlink(link)
        name = f"{link.relative_to(root).as_posix()} -> {target}"
        try:
            resolved = (link.parent / target).resolve()
            parent = link.parent.resolve()
        except (OSError, RuntimeError):  # RuntimeError: a loop, on Python 3.11
            raise _refused(name, "loops back on itself") from None
        # Lexically too: `../<root's name>/x` is inside on the host, but in the sandbox the
        # workspace has another name and the link would name whatever is beside it.
        lexical = os.path.normpath(os.path.join(link.parent.relative_to(root), target))
        leaves = os.path.isabs(target) or lexical == ".." or lexical.startswith("../")
        if leaves or not resolved.is_relative_to(top):
            raise _refused(name, "points outside the workspace")
        if resolved.is_dir():
            into[link] = (parent, resolved)
    for link, (parent, leads) in into.items():
        if _leads_back(link, parent, leads, into):
            name = f"{link.relative_to(root).as_posix()} -> {os.readlink(link)}"
            raise _refused(name, "leads back to a directory holding it (a loop)")


def _leads_back(
    start: Path, parent: Path, target: Path, into: dict[Path, tuple[Path, Path]]
) -> bool:
    """Whether following directory links from `target` comes back above `start`."""
    seen: set[Path] = set()
    reached = [target]
    while reached:
        here = reached.pop()
        if parent.is_relative_to(here):
            return True
        for link, (inside, leads) in into.items():
            if link not in seen and inside.is_relative_to(here):
                seen.add(link)
                reached.append(leads)
    return False


def _refused(name: str, why: str) -> WorkspaceRefused:
    return WorkspaceRefused(
        f"{REFUSED_LINK}{name} {why}: fixloop will not copy it into the sandbox; "
        "remove the link or point it at a file inside the project"
    )
