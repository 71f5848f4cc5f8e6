"""The gvisor backend: runsc driven directly through an OCI bundle, no daemon.

Each job gets a fresh gVisor sandbox whose first process is the zygote
(`inside/zygote.py`); a warm pool may start sandboxes before jobs exist. A
sandbox serves exactly one job and is then killed and deleted with its cgroup
and bundle, even when the caller is cancelled. As root its limits are a cgroup's;
as a normal user it runs `runsc --rootless` with rlimits and a memory watch instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path
from typing import Literal

from sandbox import cgroups
from sandbox.bundle import (
    HOST_PIDS_LIMIT,
    MIB,
    Profile,
    mount_points,
    profile_for,
    skeleton_root,
    write_bundle,
)
from sandbox.contract import ExecRequest, ExecResult
from sandbox.errors import SandboxError
from sandbox.handoff import (
    DRAIN_GRACE_S,
    READY,
    START_TIMEOUT_S,
    job_changes,
    job_files,
    job_header,
    job_stdout,
)
from sandbox.memory_watch import MemoryWatch, file_measure, sentry_memory_file
from sandbox.output import CappedStream, await_job, exit_status
from sandbox.owners import (
    new_name,
    private_dir,
    rootless,
    runtime_dir,
    skeleton_dir,
)
from sandbox.pool import WarmPool
from sandbox.runsc import check_can_run, find_runsc, list_containers, reap_stale, runsc_command

# What runsc itself is (finding it, whether it runs here, leftovers) lives in sandbox.runsc;
# named here too for callers that know only the backend.
__all__ = ["GvisorSandbox", "RunscContainer", "check_can_run", "find_runsc", "list_containers"]


class RunscContainer:
    """One gVisor sandbox, started with the zygote waiting for its single job."""

    def __init__(self, runsc: str, profile: Profile) -> None:
        self.runsc = runsc
        self.profile = profile
        self.id = new_name()
        self.state = runtime_dir() / "runsc"
        self.bundle = Path()
        self.rootless = rootless()
        # Rootless: no cgroup of ours; the memory watch is the sandbox's memory limit.
        self.cgroup: cgroups.SandboxCgroup | None = None
        self.memory_file: Path | None = None
        if not self.rootless:
            self.cgroup = cgroups.SandboxCgroup(
                name=self.id,
                memory_bytes=profile.memory_mb * MIB,
                cpus=profile.cpus,
                pids=HOST_PIDS_LIMIT,
            )
        self.process: asyncio.subprocess.Process | None = None
        # The sandbox's stdout and stderr, read on the host.
        self.stdout: asyncio.StreamReader | None = None
        self.stderr: asyncio.StreamReader | None = None
        self._streams: list[asyncio.StreamWriter] = []
        self._stderr = CappedStream(64 * 1024)
        self._stderr_task: asyncio.Task[None] | None = None
        self._destroyed = False

    def _runsc(self, *args: str) -> list[str]:
        return runsc_command(self.runsc, self.state, *args, rootless=self.rootless)

    async def start(self) -> RunscContainer:
        base = runtime_dir()
        if self.rootless:
            private_dir(base)
            private_dir(skeleton_dir())
        self.state.mkdir(parents=True, exist_ok=True, mode=0o700)
        bundles = base / "bundles"
        bundles.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            rootfs = skeleton_root(skeleton_dir(), mount_points(self.profile))
            self.bundle = Path(tempfile.mkdtemp(prefix=self.id + "-", dir=bundles))
            if self.cgroup is not None:
                self.cgroup.create()
            write_bundle(
                self.bundle,
                rootfs,
                self.profile,
                self.cgroup.oci_path if self.cgroup is not None else None,
                rootless=self.rootless,
            )
            self.stdout, stdout = await self._output_channel()
            self.stderr, stderr = await self._output_channel()
            try:
                self.process = await asyncio.create_subprocess_exec(
                    *self._runsc("run", "--bundle", str(self.bundle), self.id),
                    stdin=asyncio.subprocess.PIPE,
                    stdout=stdout.fileno(),
                    stderr=stderr.fileno(),
                    start_new_session=True,
                )
            finally:
                stdout.close()
                stderr.close()
            self._stderr_task = asyncio.create_task(self._stderr.drain(self.stderr))
            try:
                line = await asyncio.wait_for(self.stdout.readline(), timeout=START_TIMEOUT_S)
            except TimeoutError:
                line = b""
            if line != READY:
                await self._settle_stderr()
                said = self._stderr.text().strip()[-400:] or "no output"
                raise SandboxError(f"the gVisor sandbox did not start: {said}")
            if self.rootless:
                self.memory_file = await asyncio.to_thread(sentry_memory_file, self.id)
                if self.memory_file is None:
                    raise SandboxError(
                        "the gVisor sandbox started, but its memory cannot be watched "
                        "(no runsc-memory file of its sentry in /proc): refusing to run a job "
                        "without a memory limit"
                    )
        except BaseException:
            await self.destroy()
            raise
        self._stderr = CappedStream(64 * 1024)
        return self

    async def _output_channel(self) -> tuple[asyncio.StreamReader, socket.socket]:
        """A stream the sandbox writes to: (our reading end, the end runsc gets).

        A socket, not a pipe: this runsc writes to a full host pipe with a short
        count instead of blocking, and unbuffered writers (PYTHONUNBUFFERED=1
        makes `print` one) silently lose the rest. To a socket it writes fully.
        """
        ours, theirs = socket.socketpair()
        reader, writer = await asyncio.open_unix_connection(sock=ours)
        self._streams.append(writer)
        return reader, theirs

    async def _settle_stderr(self) -> None:
        if self._stderr_task is not None:
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(self._stderr_task), DRAIN_GRACE_S)

    async def execute(self, request: ExecRequest, payload: bytes | None) -> ExecResult:
        """Hand the job to the zygote and wait for it, killing it at the timeout."""
        process = self.process
        if process is None or process.stdin is None or self.stdout is None:
            raise SandboxError("internal: execute() on a sandbox that was not started")
        assert self.stderr is not None
        assert self._stderr_task is not None
        limits = request.limits
        header = job_header(request, self.profile.interpreter, has_files=payload is not None)
        stdout = job_stdout(request)
        # Output the zygote wrote before the job is not the job's.
        self._stderr = CappedStream(limits.output_bytes)
        self._stderr_task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._stderr_task
        readers = [
            asyncio.create_task(stdout.drain(self.stdout)),
            asyncio.create_task(self._stderr.drain(self.stderr)),
        ]
        stdin = process.stdin
        watch: MemoryWatch | None = None
        watching: asyncio.Task[None] | None = None
        if self.memory_file is not None:
            watch = MemoryWatch(
                file_measure(self.memory_file), self.profile.memory_mb * MIB, self.kill
            )
            watching = asyncio.create_task(watch.watch())

        async def send() -> None:
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                stdin.write(header)
                if payload is not None:
                    stdin.write(payload)
                await stdin.drain()
                stdin.close()

        try:
            timed_out, duration_ms = await await_job(
                process.wait,
                self.kill,
                readers,
                timeout_s=limits.timeout_s,
                grace_s=DRAIN_GRACE_S,
                send=send,
            )
        finally:
            if watching is not None:
                watching.cancel()
        exit_code = exit_status(process.returncode, timed_out)
        if watch is not None:
            oom = watch.fired
        else:
            oom = self.cgroup is not None and self.cgroup.oom_killed()
        changes, changes_truncated = job_changes(request, stdout, killed=timed_out or oom)
        return ExecResult(
            exit_code=exit_code,
            stdout=stdout.text(),
            stderr=self._stderr.text(),
            duration_ms=duration_ms,
            timed_out=timed_out,
            oom_killed=oom,
            truncated=stdout.truncated or self._stderr.truncated,
            backend="gvisor",
            workdir=self.profile.workspace,
            changes=changes,
            changes_truncated=changes_truncated,
        )

    async def kill(self) -> None:
        await _quiet(*self._runsc("kill", "--all", self.id, "KILL"))

    async def destroy(self) -> None:
        """Kill, delete and clean up; safe to call twice and under cancellation."""
        if self._destroyed:
            return
        self._destroyed = True
        await asyncio.shield(self._destroy())

    async def _destroy(self) -> None:
        if self.process is not None:
            await self.kill()
            if self.process.returncode is None:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.process.wait(), timeout=5)
            if self.process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    self.process.kill()
                await self.process.wait()
        if self._stderr_task is not None:
            self._stderr_task.cancel()
        for stream in self._streams:
            stream.close()
        await _quiet(*self._runsc("delete", "--force", self.id))
        if self.cgroup is not None:
            await asyncio.to_thread(self.cgroup.remove)
        if self.bundle != Path():
            shutil.rmtree(self.bundle, ignore_errors=True)

    def destroy_now(self) -> None:
        """Synchronous cleanup for interpreter exit, when no event loop is left."""
        if self._destroyed:
            return
        self._destroyed = True
        for args in (("kill", "--all", self.id, "KILL"), ("delete", "--force", self.id)):
            with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                subprocess.run(self._runsc(*args), capture_output=True, timeout=10, check=False)
        if self.cgroup is not None:
            self.cgroup.remove()
        if self.bundle != Path():
            shutil.rmtree(self.bundle, ignore_errors=True)


async def _quiet(*argv: str) -> None:
    process = await asyncio.create_subprocess_exec(
        *argv, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL
    )
    try:
        await asyncio.wait_for(process.wait(), timeout=10)
    except TimeoutError:
        process.kill()
        await process.wait()


class GvisorSandbox:
    """The Sandbox protocol over runsc. `pool_size` > 0 keeps sandboxes warm per profile."""

    name: Literal["gvisor"] = "gvisor"

    def __init__(self, *, pool_size: int = 0, runsc: str | None = None) -> None:
        self.runsc = runsc or check_can_run()
        self.pool: WarmPool[Profile, RunscContainer] = WarmPool(
            size=pool_size, start=self._start, discard=self._discard
        )
        reap_stale(self.runsc)

    @property
    def description(self) -> str:
        """For the audit trail: whether the run's limits were a cgroup's or a user's."""
        return "gvisor (runsc --rootless: rlimits and a memory watch)" if rootless() else "gvisor"

    async def _start(self, profile: Profile) -> RunscContainer:
        return await RunscContainer(self.runsc, profile).start()

    @staticmethod
    async def _discard(container: RunscContainer) -> None:
        await container.destroy()

    async def warm(self, request: ExecRequest) -> None:
        """Start pooled sandboxes for requests like this one, before they arrive."""
        self.pool.fill(self.profile(request))

    def profile(self, request: ExecRequest) -> Profile:
        return profile_for(request, pooled=self.pool.size > 0)

    async def run(self, request: ExecRequest) -> ExecResult:
        profile = await asyncio.to_thread(self.profile, request)
        payload = await job_files(request, profile)
        container = await self.pool.take(profile)
        try:
            return await container.execute(request, payload)
        finally:
            await container.destroy()

    async def close(self) -> None:
        await self.pool.close()
