"""What a job changed in its workspace, as one bounded frame: taken where the job ran.

Standalone on purpose (stdlib only): the zygote loads it by path inside the sandbox
(never as an importable module a job could shadow or import), and the unsafe-local
backend imports it on the host. It runs only after every process of the job is gone,
so nothing changes under it; it still trusts nothing it finds: only regular files count
(never followed: a symlink, FIFO, socket or device is not a file of the project), names
the request excludes are skipped at any depth, and the frame stops at its byte cap
(then it says `truncated` and carries no file).

The frame is `<JSON><MAGIC><length, 12 digits>\\n` at the very end of the job's stdout;
the host (`sandbox/changes_frame.py`) cuts it off and reads it as untrusted data.
"""

from __future__ import annotations

import base64
import fnmatch
import hashlib
import json
import os
import stat
from collections.abc import Iterable, Iterator

MAGIC = b"\nFIXLOOP-CHANGES "
TRAILER_BYTES = len(MAGIC) + 12 + 1
# A file's read stops here past its stat size: a file that grows while read is not ours.
READ_SLACK = 1

Snapshot = dict[str, tuple[str, bool]]  # workspace-relative path -> (sha256, executable)


def regular_files(root: str, excludes: Iterable[str]) -> Iterator[tuple[str, int]]:
    """(relative posix path, open read-only fd) of each regular file under `root`,
    symlinks never followed; the caller closes each fd."""
    skip = frozenset(excludes)
    if os.path.islink(root):  # a job that swapped its workspace for a link has none
        return
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d not in skip)
        for name in sorted(f for f in filenames if f not in skip):
            path = os.path.join(dirpath, name)
            try:
                if not stat.S_ISREG(os.lstat(path).st_mode):
                    continue
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            except OSError:
                continue
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                os.close(fd)
                continue
            yield os.path.relpath(path, root).replace(os.sep, "/"), fd


def _read(fd: int, limit: int) -> bytes:
    chunks, size = [], 0
    while size < limit and (chunk := os.read(fd, min(1 << 20, limit - size))):
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _executable(fd: int) -> bool:
    return bool(os.fstat(fd).st_mode & stat.S_IXUSR)


def snapshot(root: str, excludes: Iterable[str]) -> Snapshot:
    """Each regular file's digest and executable bit, before the job runs."""
    taken: Snapshot = {}
    for relative, fd in regular_files(root, excludes):
        try:
            digest = hashlib.sha256()
            while chunk := os.read(fd, 1 << 20):
                digest.update(chunk)
            taken[relative] = (digest.hexdigest(), _executable(fd))
        finally:
            os.close(fd)
    return taken


def collect(
    root: str, before: Snapshot, excludes: Iterable[str], cap: int, only: Iterable[str] = ()
) -> bytes:
    """The JSON of what changed since `before`: new or changed regular files with their
    content (base64) and executable bit, and deleted ones (content null); with `only`
    (glob patterns of workspace-relative paths), just the files matching one. Past `cap`
    bytes of JSON it is `{"truncated": true, "changes": []}`: all or nothing; so is a
    workspace that cannot be read whole (a tree too deep to walk, say)."""
    try:
        return _collect(root, before, excludes, cap, tuple(only))
    except (OSError, RecursionError, MemoryError):
        return _truncated()


def _wanted(relative: str, only: tuple[str, ...]) -> bool:
    return not only or any(fnmatch.fnmatchcase(relative, pattern) for pattern in only)


def _collect(
    root: str, before: Snapshot, excludes: Iterable[str], cap: int, only: tuple[str, ...]
) -> bytes:
    changes: list[dict[str, object]] = []
    size = 0
    seen: set[str] = set()
    for relative, fd in regular_files(root, excludes):
        if not _wanted(relative, only):
            os.close(fd)
            continue
        try:
            seen.add(relative)
            room = cap - size
            length = os.fstat(fd).st_size
            if length * 4 // 3 > room:
                return _truncated()
            content = _read(fd, length + READ_SLACK)
            executable = _executable(fd)
        finally:
            os.close(fd)
        if before.get(relative) == (hashlib.sha256(content).hexdigest(), executable):
            continue
        entry = {
            "path": relative,
            "content": base64.b64encode(content).decode("ascii"),
            "executable": executable,
        }
        size += len(json.dumps(entry)) + 2
        if size > cap:
            return _truncated()
        changes.append(entry)
    for relative in sorted(before.keys() - seen):
        if not _wanted(relative, only):
            continue
        entry = {"path": relative, "content": None, "executable": False}
        size += len(json.dumps(entry)) + 2
        if size > cap:
            return _truncated()
        changes.append(entry)
    return json.dumps({"truncated": False, "changes": changes}).encode()


def _truncated() -> bytes:
    return json.dumps({"truncated": True, "changes": []}).encode()


def frame(payload: bytes) -> bytes:
    """`payload` with the trailer the host looks for at the end of stdout."""
    return payload + MAGIC + b"%012d\n" % len(payload)
