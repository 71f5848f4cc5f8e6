"""How a backend hands its one job to the zygote (`inside/zygote.py`), the same over
runsc's stdin and an engine's attach socket: wait for its READY line, then send one
JSON header line and, when the job has a work dir, the tar of it.
"""

from __future__ import annotations

import asyncio
import functools
import json

from sandbox.bundle import MIB, SANDBOX_WORKDIR, Profile, base_environment, mounted_in_workspace
from sandbox.changes_frame import StdoutWithChanges, read_changes
from sandbox.contract import ExecRequest, FileChange
from sandbox.interpreter import Interpreter
from sandbox.output import CappedStream
from sandbox.pack import pack_directory

# What the zygote prints when it waits for its job (inside/zygote.py says the same).
READY = b"FIXLOOP-READY\n"
START_TIMEOUT_S = 60.0
# How long the job's output may still arrive after it exited (or was killed).
DRAIN_GRACE_S = 2.0


def workspace_of(request: ExecRequest) -> str:
    """Where the job's workspace is inside its sandbox."""
    return str(request.workspace_path or SANDBOX_WORKDIR)


def job_header(request: ExecRequest, interpreter: Interpreter, *, has_files: bool) -> bytes:
    """The job's first line to the zygote: argv, environment, cwd, whether a tar follows."""
    header = {
        "argv": request.argv,
        "env": {**base_environment(interpreter, workspace_of(request)), **request.env},
        "cwd": workspace_of(request),
        "has_files": has_files,
        "links": request.links,
        "unpack": request.unpack,
        "return_changes": request.return_changes,
        "excludes": sorted(request.excludes),
        "changes_bytes": request.limits.changes_bytes,
        "changes_only": list(request.changes_only),
    }
    return json.dumps(header).encode() + b"\n"


async def job_files(request: ExecRequest, profile: Profile) -> bytes | None:
    """The tar of the job's work dir (None: it has none), packed off the event loop, without
    what the sandbox mounts inside the workspace (the project's own venv, read-only)."""
    if request.workdir is None:
        return None
    return await asyncio.to_thread(
        functools.partial(
            pack_directory,
            request.workdir,
            request.excludes,
            request.limits.tmpfs_mb * MIB,
            skip_paths=mounted_in_workspace(profile),
        )
    )


def job_stdout(request: ExecRequest) -> CappedStream:
    """Where the job's stdout goes: a capped stream, holding back the changes frame when
    the job asked for its changes."""
    if request.return_changes:
        return StdoutWithChanges(request.limits.output_bytes, request.limits.changes_bytes)
    return CappedStream(request.limits.output_bytes)


def job_changes(
    request: ExecRequest, stdout: CappedStream, *, killed: bool
) -> tuple[list[FileChange] | None, bool]:
    """(changes, truncated) for the result, once the stream ended; (None, False) when not
    asked for, or when the job was killed (whatever ends its stdout then is the job's)."""
    if not isinstance(stdout, StdoutWithChanges):
        return None, False
    frame = stdout.take_frame()
    if killed:
        return None, False
    return read_changes(frame, request.excludes)
