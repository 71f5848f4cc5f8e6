"""The unsafe-local backend: a plain subprocess with rlimits and a clean environment.

No isolation from the host's files or network. It exists for machines where no
sandbox works and is used only when chosen by name, with a warning every time.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
import shutil
import signal
import tempfile
import warnings
from pathlib import Path
from typing import Literal

from sandbox.changes_frame import read_changes
from sandbox.contract import BASE_ENV, ExecRequest, ExecResult, FileChange, Limits
from sandbox.inside import changes as workspace_changes
from sandbox.interpreter import default_python
from sandbox.output import CappedStream, await_job, exit_status
from sandbox.pack import pack_directory

DRAIN_GRACE_S = 2.0

WARNING = (
    "unsafe-local runs model-written code on this machine with your user's rights: "
    "no file, network or process isolation"
)


class UnsafeLocalWarning(UserWarning):
    pass


def _limit(limits: Limits) -> None:
    """Runs in the child between fork and exec."""
    mib = 2**20
    for kind, value in (
        (resource.RLIMIT_AS, (limits.address_space_mb or max(limits.memory_mb, 256)) * mib),
        (resource.RLIMIT_FSIZE, limits.tmpfs_mb * mib),
        (resource.RLIMIT_NOFILE, 1024),
        (resource.RLIMIT_CORE, 0),
    ):
        resource.setrlimit(kind, (value, value))


class UnsafeLocalSandbox:
    name: Literal["unsafe-local"] = "unsafe-local"

    async def run(self, request: ExecRequest) -> ExecResult:
        warnings.warn(WARNING, UnsafeLocalWarning, stacklevel=2)
        limits = request.limits
        python = request.python or default_python()
        with tempfile.TemporaryDirectory(prefix="fixloop-local-") as scratch:
            work = Path(scratch) / "work"
            work.mkdir()
            if request.workdir is not None:
                payload = await asyncio.to_thread(
                    pack_directory, request.workdir, request.excludes, limits.tmpfs_mb * 2**20
                )
                await asyncio.to_thread(_unpack, payload, work)
            for name, target in request.links.items():
                if not (work / name).is_symlink() and not (work / name).exists():
                    (work / name).symlink_to(request.mounts[target])
            before = (
                await asyncio.to_thread(workspace_changes.snapshot, str(work), request.excludes)
                if request.return_changes
                else None
            )
            env = {
                **BASE_ENV,
                "PATH": f"{Path(python).parent}:/usr/local/bin:/usr/bin:/bin",
                "HOME": str(work),
                "TMPDIR": scratch,
                **request.env,
            }
            env = {k: _host_paths(v, request.mounts) for k, v in env.items()}
            argv = [_host_paths(arg, request.mounts) for arg in request.argv]
            if shutil.which(argv[0], path=env["PATH"]) is None:
                return _result(127, b"", f"{argv[0]}: command not found\n".encode(), 0, str(work))
            process = await asyncio.create_subprocess_exec(
                *argv,
                cwd=work,
                env=env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
                preexec_fn=lambda: _limit(limits),
            )
            assert process.stdout is not None
            assert process.stderr is not None
            out, err = CappedStream(limits.output_bytes), CappedStream(limits.output_bytes)
            readers = [
                asyncio.create_task(out.drain(process.stdout)),
                asyncio.create_task(err.drain(process.stderr)),
            ]

            async def kill() -> None:  # the whole session: children that outlived the command
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(process.pid, signal.SIGKILL)

            timed_out, duration_ms = await await_job(
                process.wait, kill, readers, timeout_s=limits.timeout_s, grace_s=DRAIN_GRACE_S
            )
            exit_code = exit_status(process.returncode, timed_out)
            changes: tuple[list[FileChange] | None, bool] = (None, False)
            if before is not None and not timed_out:
                frame = await asyncio.to_thread(
                    workspace_changes.collect,
                    str(work),
                    before,
                    request.excludes,
                    limits.changes_bytes,
                    request.changes_only,
                )
                changes = read_changes(frame, request.excludes)
            result = ExecResult(
                exit_code=exit_code,
                stdout=out.text(),
                stderr=err.text(),
                duration_ms=duration_ms,
                timed_out=timed_out,
                truncated=out.truncated or err.truncated,
                backend="unsafe-local",
                workdir=str(work),
                changes=changes[0],
                changes_truncated=changes[1],
            )
        return result

    async def close(self) -> None:
        return None


def _host_paths(value: str, mounts: dict[str, Path]) -> str:
    """No mounts here: a sandbox path to a mounted directory becomes the host's path."""
    for destination, source in mounts.items():
        value = value.replace(destination, str(source))
    return value


def _unpack(payload: bytes, target: Path) -> None:
    import io
    import tarfile

    with tarfile.open(fileobj=io.BytesIO(payload), mode="r") as archive:
        # Our own tar of the project (pack_directory). Pythons before 3.11.4 (Debian 12's
        # 3.11.2) have no extraction filters and extract the same way.
        if hasattr(tarfile, "data_filter"):
            archive.extractall(target, filter="data")
        else:
            archive.extractall(target)


def _result(code: int, out: bytes, err: bytes, duration_ms: int, workdir: str) -> ExecResult:
    return ExecResult(
        exit_code=code,
        stdout=out.decode(),
        stderr=err.decode(),
        duration_ms=duration_ms,
        backend="unsafe-local",
        workdir=workdir,
    )
