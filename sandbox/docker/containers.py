"""One container of the docker backend: created with fixloop's limits, attached before it
starts, proven to run under gVisor, fed its single job through the zygote, and removed
with its cgroup (also what a dead fixloop process left in the engine).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import struct
import time
from pathlib import Path
from typing import Any

import docker
import docker.errors
import docker.types
import requests.exceptions

from sandbox import cgroups
from sandbox.bundle import (
    HOST_PIDS_LIMIT,
    INSIDE_DIR,
    MIB,
    NOBODY,
    SANDBOX_LIB,
    Profile,
    base_environment,
    sandbox_rlimits,
)
from sandbox.contract import ExecRequest, ExecResult
from sandbox.docker.kernel import KernelReport, require_gvisor
from sandbox.errors import EngineRefused, SandboxError
from sandbox.handoff import (
    DRAIN_GRACE_S,
    READY,
    START_TIMEOUT_S,
    job_changes,
    job_header,
    job_stdout,
)
from sandbox.memory_watch import Measure, MemoryWatch, sentry_argv, stats_measure
from sandbox.output import CHUNK, CappedStream
from sandbox.owners import new_name
from sandbox.runsc import find_runsc

OWNER_LABEL = "fixloop.owner"
BACKSTOP_MB = 64
# Runs first in every container: reports the kernel, then becomes the job runner.
INIT_SCRIPT = f"{SANDBOX_LIB}/docker_init.sh"


class Multiplexed:
    """The engine's attach stream: 8-byte frame headers, then stdout (1) or stderr (2)."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self.reader = reader
        self._stream = 0
        self._left = 0

    async def read(self) -> tuple[int, bytes] | None:
        """The next piece of output as (stream, bytes); None at the end."""
        try:
            while self._left == 0:
                header = await self.reader.readexactly(8)
                self._stream, self._left = struct.unpack(">BxxxL", header)
            chunk = await self.reader.read(min(self._left, CHUNK))
        except asyncio.IncompleteReadError:
            return None
        if not chunk:
            return None
        self._left -= len(chunk)
        return self._stream, chunk


class Container:
    """One gVisor container, started with the zygote waiting for its single job."""

    def __init__(
        self,
        client: docker.DockerClient,
        image: str,
        profile: Profile,
        *,
        url: str,
        allow_runc: bool = False,
        own_python: bool = False,
        rootless_engine: bool = False,
    ) -> None:
        self.client = client
        self.url = url
        # True: the image carries the interpreter (sandbox build-image); mount none of the host's.
        self.own_python = own_python
        self.image = image
        self.profile = profile
        self.allow_runc = allow_runc
        self.name = new_name()
        self.id: str | None = None
        # Rootless (a user's Podman, cgroups not writable): no cgroup of ours; the engine's
        # own limits hold where it can set them, and rlimits inside the sandbox do the rest.
        self.own_cgroup = cgroups.writable()
        # A rootless engine limits nothing (no cgroup; rootless Podman's API even drops
        # ulimits): the zygote sets the rlimits, and a memory watch is the memory limit.
        self.rootless_engine = rootless_engine
        self._measure: Measure | None = None
        self._watch: MemoryWatch | None = None
        self.cgroup = cgroups.SandboxCgroup(
            name=self.name,
            memory_bytes=profile.memory_mb * MIB,
            cpus=profile.cpus,
            pids=HOST_PIDS_LIMIT,
        )
        self.kernel = KernelReport(version="", root="")
        self._oom_event: int | None = None
        self._frames: Multiplexed | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._startup_stderr = CappedStream(64 * 1024)
        self._destroyed = False

    def create_arguments(self) -> dict[str, Any]:
        """The engine's create_container arguments for this container."""
        profile = self.profile
        interpreter = profile.interpreter
        # "source:destination:ro" (the dict form cannot mount one source twice).
        host = [] if self.own_python else ["/usr", *(str(p) for p in interpreter.mounts)]
        binds = [f"{path}:{path}:ro" for path in host]
        binds.append(f"{INSIDE_DIR}:{SANDBOX_LIB}:ro")
        binds += [f"{source}:{destination}:ro" for destination, source in profile.mounts]
        tmpfs = {
            "/tmp": f"size={profile.tmpfs_mb}m,mode=1777",
            "/dev/shm": "size=64m,mode=1777",
            profile.workspace: f"size={profile.tmpfs_mb}m,mode=1777",
        }
        ulimits = [
            docker.types.Ulimit(name=name, soft=value, hard=value)
            for name, value in (
                ("nproc", profile.pids),
                ("fsize", profile.tmpfs_mb * MIB),
                ("nofile", 1024),
                ("core", 0),
            )
        ]
        host_config = self.client.api.create_host_config(
            binds=binds,
            tmpfs=tmpfs,
            network_mode="none",
            read_only=True,
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            # Our cgroup (the parent) holds the exact limit, so an OOM happens there,
            # where we can see it; the engine's own limit is only a backstop.
            mem_limit=(profile.memory_mb + BACKSTOP_MB) * MIB,
            memswap_limit=(profile.memory_mb + BACKSTOP_MB) * MIB,
            nano_cpus=int(profile.cpus * 1e9),
            # Host threads of gVisor's own processes count here; guests are
            # limited by RLIMIT_NPROC (see bundle.HOST_PIDS_LIMIT).
            pids_limit=HOST_PIDS_LIMIT,
            ulimits=ulimits,
            cgroup_parent=self.cgroup.oci_path if self.own_cgroup else None,
            # The job's output is read from the attach stream; none goes to disk.
            log_config=docker.types.LogConfig(type="none"),
        )
        zygote = [
            str(interpreter.executable),
            "-s",
            "-X",
            "utf8",
            f"{SANDBOX_LIB}/zygote.py",
            *([] if profile.preload else ["--no-preload"]),
            *self._zygote_rlimits(),
        ]
        # Exactly the environment the gvisor backend's zygote gets: the engine adds its own
        # variables (container=podman, HOSTNAME ...), and a warm-up that read a variable
        # the job then lacks could not be used (the zygote would start a fresh interpreter).
        environment = [
            f"{k}={v}" for k, v in base_environment(interpreter, profile.workspace).items()
        ]
        return {
            "image": self.image,
            "command": ["/bin/sh", INIT_SCRIPT, "/usr/bin/env", "-i", *environment, *zygote],
            "name": self.name,
            "user": f"{NOBODY}:{NOBODY}",
            "working_dir": profile.workspace,
            "environment": base_environment(interpreter, profile.workspace),
            "hostname": "fixloop-sandbox",
            "stdin_open": True,
            "labels": {OWNER_LABEL: str(os.getpid())},
            "host_config": host_config,
        }

    def _zygote_rlimits(self) -> list[str]:
        """The rlimits the zygote sets itself: only under a rootless engine, with room over the
        memory limit for the watch (see `address_space_bytes`)."""
        if not self.rootless_engine:
            return []
        rlimits = sandbox_rlimits(self.profile, rootless=True)
        return [f"--rlimit={name}={value}" for name, value in rlimits]

    async def start(self) -> Container:
        try:
            if self.own_cgroup:
                await asyncio.to_thread(self.cgroup.create)
                self._oom_event = await asyncio.to_thread(_watch_oom, self.cgroup)
            created = await asyncio.to_thread(
                lambda: self.client.api.create_container(**self.create_arguments())
            )
            self.id = str(created["Id"])
            # Attach before start, so no byte of output is missed.
            raw = await asyncio.to_thread(self._attach)
            reader, self._writer = await asyncio.open_connection(sock=raw, limit=CHUNK * 4)
            self._frames = Multiplexed(reader)
            await asyncio.to_thread(self.client.api.start, self.id)
            said = await asyncio.wait_for(self._until_ready(), START_TIMEOUT_S)
            self.kernel = KernelReport.parse(said)
            # Per container, not only at start-up: the engine's runtime can change under us.
            require_gvisor(self.kernel, self.url, allow_runc=self.allow_runc)
            if self.rootless_engine:
                self._measure = await asyncio.to_thread(self._sentry_measure)
        except TimeoutError:
            await self.destroy()
            raise SandboxError(
                f"the container did not start within {START_TIMEOUT_S:.0f} s: "
                f"{self._startup_stderr.text().strip()[-400:] or 'no output'}"
            ) from None
        except docker.errors.APIError as exc:
            await self.destroy()
            raise EngineRefused(
                f"the container engine refused the sandbox: {exc.explanation}"
            ) from exc
        except BaseException:
            await self.destroy()
            raise
        return self

    def _sentry_measure(self) -> Measure:
        """How to measure this container's memory from outside: ask its sentry, found on this
        host by the container's id. None found: no memory limit, so no job."""
        assert self.id is not None
        sentry = sentry_argv(self.id)
        if sentry is None:
            raise SandboxError(
                "the container started under a rootless engine, but its gVisor sentry is not "
                "on this host to watch its memory: refusing to run a job without a memory limit"
            )
        return stats_measure(find_runsc(), sentry[1], self.id)

    def _attach(self) -> socket.socket:
        params = {"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1}
        handle = self.client.api.attach_socket(self.id, params=params)
        raw = getattr(handle, "_sock", handle)
        if not isinstance(raw, socket.socket):
            raise SandboxError("internal: the engine's attach stream is not a socket")
        raw.setblocking(False)
        return raw

    async def _until_ready(self) -> str:
        """Read the probe's report up to the zygote's READY line."""
        assert self._frames is not None
        said = bytearray()
        while True:
            frame = await self._frames.read()
            if frame is None:
                raise SandboxError(
                    "the container exited before its job: "
                    f"{self._startup_stderr.text().strip()[-400:] or 'no output'}"
                )
            stream, chunk = frame
            if stream != 1:
                self._startup_stderr.feed(chunk)
                continue
            said += chunk
            if said.endswith(READY) and (len(said) == len(READY) or said[-15:-14] == b"\n"):
                return said[: -len(READY)].decode(errors="replace")
            if len(said) > 64 * 1024:
                raise SandboxError("the container said too much before its job")

    async def execute(self, request: ExecRequest, payload: bytes | None) -> ExecResult:
        """Hand the job to the zygote and wait for it, killing it at the timeout."""
        if self._frames is None or self._writer is None or self.id is None:
            raise SandboxError("internal: execute() on a container that was not started")
        limits = request.limits
        header = job_header(request, self.profile.interpreter, has_files=payload is not None)
        outputs = {1: job_stdout(request), 2: CappedStream(limits.output_bytes)}
        pump = asyncio.create_task(self._pump(outputs))
        started = time.monotonic()
        timed_out = False
        watching: asyncio.Task[None] | None = None
        if self._measure is not None:
            self._watch = MemoryWatch(self._measure, self.profile.memory_mb * MIB, self.kill)
            watching = asyncio.create_task(self._watch.watch())
        try:
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self._writer.write(header)
                if payload is not None:
                    self._writer.write(payload)
                await self._writer.drain()
            exited = asyncio.ensure_future(asyncio.to_thread(self._wait, limits.timeout_s + 60))
            try:
                status = await asyncio.wait_for(asyncio.shield(exited), limits.timeout_s)
            except TimeoutError:
                timed_out = True
                await self.kill()
                status = await asyncio.wait_for(exited, 10)
            duration_ms = int((time.monotonic() - started) * 1000)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(pump), DRAIN_GRACE_S)
        finally:
            pump.cancel()
            if watching is not None:
                watching.cancel()
        exit_code = status if status is not None else 128 + signal.SIGKILL
        if timed_out:
            exit_code = 124 if exit_code in (0, 128 + signal.SIGKILL) else exit_code
        oom = await asyncio.to_thread(self.oom_killed)
        stdout, stderr = outputs[1], outputs[2]
        changes, changes_truncated = job_changes(request, stdout, killed=timed_out or oom)
        return ExecResult(
            exit_code=exit_code,
            stdout=stdout.text(),
            stderr=stderr.text(),
            duration_ms=duration_ms,
            timed_out=timed_out,
            oom_killed=oom,
            truncated=stdout.truncated or stderr.truncated,
            backend="docker",
            workdir=self.profile.workspace,
            changes=changes,
            changes_truncated=changes_truncated,
        )

    async def _pump(self, outputs: dict[int, CappedStream]) -> None:
        assert self._frames is not None
        while (frame := await self._frames.read()) is not None:
            stream, chunk = frame
            outputs.get(stream, outputs[2]).feed(chunk)

    def _wait(self, timeout_s: float) -> int | None:
        try:
            answer = self.client.api.wait(self.id, timeout=timeout_s)
        except (docker.errors.APIError, requests.exceptions.RequestException):
            return None
        code = answer.get("StatusCode")
        return int(code) if isinstance(code, int) else None

    def oom_killed(self) -> bool:
        """The engine may not report OOM kills (Podman never does): the memory watch says
        so under a rootless engine; otherwise ask the kernel.

        The engine's runtime deletes its own cgroup, and with it cgroup v1's
        `oom_kill` counter; but the OOM happens at our cgroup's limit, which
        signals the eventfd registered on it (v1) or counts it hierarchically (v2).
        """
        if self._watch is not None and self._watch.fired:
            return True
        if self.cgroup.oom_killed():
            return True
        if self._oom_event is None:
            return False
        try:
            return os.eventfd_read(self._oom_event) > 0
        except BlockingIOError:
            return False

    async def kill(self) -> None:
        if self.id is not None:
            with contextlib.suppress(docker.errors.APIError, requests.exceptions.RequestException):
                await asyncio.to_thread(self.client.api.kill, self.id, "SIGKILL")

    async def destroy(self) -> None:
        """Remove the container and its cgroup; safe to call twice and under cancellation."""
        if self._destroyed:
            return
        self._destroyed = True
        await asyncio.shield(asyncio.to_thread(self.destroy_now_unguarded))

    def destroy_now(self) -> None:
        """Synchronous cleanup for interpreter exit, when no event loop is left."""
        if self._destroyed:
            return
        self._destroyed = True
        self.destroy_now_unguarded()

    def destroy_now_unguarded(self) -> None:
        if self._oom_event is not None:
            os.close(self._oom_event)
            self._oom_event = None
        if self._writer is not None:
            with contextlib.suppress(Exception):
                self._writer.transport.abort()
        remove_container(self.client, self.id or self.name)
        remove_cgroup(self.cgroup)


def _watch_oom(cgroup: cgroups.SandboxCgroup) -> int | None:
    """An eventfd the kernel signals when `cgroup` (v1) runs out of memory; None on v2."""
    memory = next((p for p in cgroup.created if p.parent.parent.name == "memory"), None)
    if memory is None:
        return None
    event = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
    control = os.open(memory / "memory.oom_control", os.O_RDONLY | os.O_CLOEXEC)
    try:
        (memory / "cgroup.event_control").write_text(f"{event} {control}")
    except OSError:
        os.close(event)
        return None
    finally:
        os.close(control)
    return event


def _subdirectories(path: Path) -> list[Path]:
    """Every directory below `path`, deepest first."""
    found = [Path(d) for d, _, _ in os.walk(path)][1:]
    return sorted(found, key=lambda p: len(p.parts), reverse=True)


def remove_container(client: docker.DockerClient, name: str) -> None:
    for _ in range(3):
        try:
            client.api.remove_container(name, force=True, v=True)
            return
        except docker.errors.NotFound:
            return
        except (docker.errors.APIError, requests.exceptions.RequestException):
            time.sleep(0.2)


def remove_cgroup(cgroup: cgroups.SandboxCgroup) -> None:
    """Our cgroup and whatever the engine created below it (e.g. conmon's)."""
    children = [child for path in cgroup.created for child in _subdirectories(path)]
    # remove() works from the end of `created`: the deepest children go first.
    cgroup.created = [*cgroup.created, *reversed(children)]
    cgroup.remove()
