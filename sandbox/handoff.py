"""How a backend hands its one job to the zygote (`inside/zygote.py`), the same over
runsc's stdin and an engine's attach socket: wait for its READY line, then send one
JSON header line and, when the job has a work dir, the tar of it.
"""

from __future__ import annotations

import asyncio
import json

from sandbox.bundle import MIB, SANDBOX_WORKDIR, base_environment
from sandbox.contract import ExecRequest
from sandbox.interpreter import Interpreter
from sandbox.pack import pack_directory

# What the zygote prints when it waits for its job (inside/zygote.py says the same).
READY = b"FIXLOOP-READY\n"
START_TIMEOUT_S = 60.0
# How long the job's output may still arrive after it exited (or was killed).
DRAIN_GRACE_S = 2.0


def job_header(request: ExecRequest, interpreter: Interpreter, *, has_files: bool) -> bytes:
    """The job's first line to the zygote: argv, environment, cwd, whether a tar follows."""
    header = {
        "argv": request.argv,
        "env": {**base_environment(interpreter), **request.env},
        "cwd": SANDBOX_WORKDIR,
        "has_files": has_files,
        "links": request.links,
    }
    return json.dumps(header).encode() + b"\n"


async def job_files(request: ExecRequest) -> bytes | None:
    """The tar of the job's work dir (None: it has none), packed off the event loop."""
    if request.workdir is None:
        return None
    return await asyncio.to_thread(
        pack_directory, request.workdir, request.excludes, request.limits.tmpfs_mb * MIB
    )
