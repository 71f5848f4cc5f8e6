"""The docker backend: gVisor containers through a Docker-compatible engine (Docker, Podman).

Each job gets a fresh container whose first process is the zygote
(`inside/zygote.py`), fed the job over the attach socket, exactly like the gvisor
backend feeds it over runsc's stdin. Every container proves it runs under gVisor
before it gets a job; a container on any other runtime is refused (unless
--allow-runc / FIXLOOP_ALLOW_RUNC=1, and then every job warns). Containers are
always removed, even when the caller is cancelled.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import re
import secrets
import signal
import socket
import struct
import tarfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

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
    SANDBOX_WORKDIR,
    Profile,
    base_environment,
    mount_points,
    profile_for,
    skeleton_root,
)
from sandbox.contract import ExecRequest, ExecResult, Limits
from sandbox.engines import engine_url, socket_missing
from sandbox.errors import RuncWarning, SandboxError, SandboxUnavailable
from sandbox.interpreter import Interpreter, default_python, probe
from sandbox.output import CHUNK, CappedStream
from sandbox.pack import pack_directory
from sandbox.pool import WarmPool

IMAGE_REPOSITORY = "localhost/fixloop-sandbox"
IMAGE_FORMAT = "2"  # bump when the image's content changes for the same mount points
TMPFS_POINTS = frozenset({"/tmp", "/dev/shm", SANDBOX_WORKDIR})
ID_PREFIX = "fixloop-"
OWNER_LABEL = "fixloop.owner"
READY = b"FIXLOOP-READY\n"
START_TIMEOUT_S = 60.0
DRAIN_GRACE_S = 2.0
API_TIMEOUT_S = 60
# An engine that does not answer a ping this fast is not one to run jobs on; a
# missing socket fails at once without it.
PING_TIMEOUT_S = 10
# Understood by Docker since 20.10 and by Podman's compatible API since 3.0.
API_VERSION = "1.41"
BACKSTOP_MB = 64
ALLOW_RUNC_VARIABLE = "FIXLOOP_ALLOW_RUNC"
RUNC_WARNING = (
    "the docker backend runs this job in a container that is NOT under gVisor "
    "(--allow-runc): model-written code shares the host kernel"
)

# Runs first in every container: reports the kernel, then becomes the job runner.
INIT_SCRIPT = f"{SANDBOX_LIB}/docker_init.sh"
# Per process, by engine URL: what each engine is, and the kernel report of those
# whose containers were seen to run under gVisor.
_ENGINES: dict[str, str] = {}
_VERIFIED: dict[str, KernelReport] = {}

# gVisor's sentry reports this fixed build line for its emulated kernel.
GVISOR_BANNER = re.compile(r"^Linux version \S+ #1 SMP Sun Jan 10 15:06:54 PST 2016$")


class EngineRefused(SandboxError):
    """The engine would not create or start a container (often transient)."""


@dataclass(frozen=True)
class KernelReport:
    """What a container said about its kernel before it got a job."""

    version: str
    root: str  # the root mount's "type options" from /proc/self/mounts

    @property
    def gvisor(self) -> bool:
        # A host kernel's overlay root names host paths (lowerdir=); gVisor's never does.
        return bool(GVISOR_BANNER.match(self.version)) and "lowerdir=" not in self.root

    @property
    def described(self) -> str:
        return (
            f"kernel {self.version or 'unknown'!r}, root {self.root.split(' ')[0] or 'unknown'!r}"
        )

    @classmethod
    def parse(cls, text: str) -> KernelReport:
        version = root = ""
        for line in text.splitlines():
            if line.startswith("FIXLOOP-KERNEL "):
                version = line.removeprefix("FIXLOOP-KERNEL ").strip()
            elif line.startswith("FIXLOOP-ROOT "):
                root = line.removeprefix("FIXLOOP-ROOT ").strip()
        return cls(version=version, root=root)


def runc_allowed() -> bool:
    """FIXLOOP_ALLOW_RUNC=1 (the command line's --allow-runc is passed explicitly)."""
    return os.environ.get(ALLOW_RUNC_VARIABLE, "").lower() in ("1", "true", "yes", "on")


def require_gvisor(report: KernelReport, engine: str, *, allow_runc: bool | None = None) -> bool:
    """Whether the container runs under gVisor; refuses it if not, unless runc is allowed.

    Warns nothing itself: the backend warns once per job that runs outside gVisor.
    """
    if report.gvisor:
        return True
    if runc_allowed() if allow_runc is None else allow_runc:
        return False
    raise SandboxUnavailable(
        f"the container engine at {engine} does not run containers under gVisor "
        f"(the container saw {report.described}); make runsc the engine's default "
        "runtime (see README, 'Docker backend'), or use --sandbox gvisor"
    )


def connect(url: str | None = None) -> docker.DockerClient:
    """A client for a reachable engine, or SandboxUnavailable saying what to start."""
    url = engine_url(url)
    try:
        if socket_missing(url):
            raise FileNotFoundError(f"no socket {url.split('://', 1)[1]}")
        # A fixed API version: asking the engine costs a /version call, which Podman
        # answers slowly (it runs its conmon and runtime to report their versions).
        client = docker.DockerClient(base_url=url, version=API_VERSION, timeout=PING_TIMEOUT_S)
        client.ping()
    except Exception as exc:  # docker-py raises many unrelated types
        first = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
        raise SandboxUnavailable(
            f"no Docker-compatible engine answers at {url} ({first}); start one with "
            "`bash .ci/podman-service.sh` (Podman with runsc), or name it with "
            "--docker-url / FIXLOOP_DOCKER_URL"
        ) from exc
    client.api.timeout = API_TIMEOUT_S
    return client


def engine_version(client: docker.DockerClient, url: str) -> str:
    """E.g. 'Podman Engine 4.3.1' or 'Docker Engine - Community 24.0.7' (asked once per URL)."""
    if url not in _ENGINES:
        _ENGINES[url] = _ask_version(client)
    return _ENGINES[url]


def _ask_version(client: docker.DockerClient) -> str:
    try:
        version: dict[str, Any] = client.version()
    except Exception:  # only for display
        return "unknown engine"
    components = version.get("Components") or [{}]
    name = components[0].get("Name") or "engine"
    return f"{name} {version.get('Version', '?')}"


# --- the image ----------------------------------------------------------------------


def build_image(client: docker.DockerClient, points: list[str]) -> str:
    """The sandbox image for these mount points, imported from a skeleton root if missing.

    No registry and no package manager: the image is the gvisor backend's skeleton
    root (a few symlinks and /etc files plus empty mount points); `/usr` and the
    interpreter's trees are mounted read-only at run time.
    """
    from sandbox.gvisor import runtime_dir

    root = skeleton_root(runtime_dir(), points)
    tag = f"{IMAGE_REPOSITORY}:{root.name.removeprefix('rootfs-')}-{IMAGE_FORMAT}"
    with contextlib.suppress(docker.errors.ImageNotFound):
        client.images.get(tag)
        return tag

    def writable_points(entry: tarfile.TarInfo) -> tarfile.TarInfo:
        # Podman copies a tmpfs's mode from the directory beneath it (tmpcopyup), over
        # the mode=1777 asked for; runsc does not, other runtimes do.
        if entry.isdir() and "/" + entry.name.removeprefix("./") in TMPFS_POINTS:
            entry.mode = 0o1777
        return entry

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        archive.add(str(root), arcname=".", filter=writable_points)
    try:
        answer = client.api.import_image_from_data(buffer.getvalue())
        image_id = _imported_id(answer)
        client.api.tag(image_id, IMAGE_REPOSITORY, tag.rsplit(":", 1)[1])
    except docker.errors.APIError as exc:
        raise SandboxError(f"cannot import the sandbox image {tag}: {exc.explanation}") from exc
    return tag


def _imported_id(answer: Any) -> str:
    for line in str(answer).splitlines():
        with contextlib.suppress(ValueError):
            status = json.loads(line).get("status", "")
            if status.startswith("sha256:"):
                return str(status)
    raise SandboxError(f"the engine did not say which image it imported: {str(answer)[:200]}")


# --- one container --------------------------------------------------------------------


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
    ) -> None:
        self.client = client
        self.url = url
        # True: the image carries the interpreter (sandbox build-image); mount none of the host's.
        self.own_python = own_python
        self.image = image
        self.profile = profile
        self.allow_runc = allow_runc
        self.name = f"{ID_PREFIX}{os.getpid()}-{secrets.token_hex(4)}"
        self.id: str | None = None
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

    def _config(self) -> dict[str, Any]:
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
            SANDBOX_WORKDIR: f"size={profile.tmpfs_mb}m,mode=1777",
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
            cgroup_parent=self.cgroup.oci_path,
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
        ]
        # Exactly the environment the gvisor backend's zygote gets: the engine adds its own
        # variables (container=podman, HOSTNAME ...), and a warm-up that read a variable
        # the job then lacks could not be used (the zygote would start a fresh interpreter).
        environment = [f"{k}={v}" for k, v in base_environment(interpreter).items()]
        return {
            "image": self.image,
            "command": ["/bin/sh", INIT_SCRIPT, "/usr/bin/env", "-i", *environment, *zygote],
            "name": self.name,
            "user": f"{NOBODY}:{NOBODY}",
            "working_dir": SANDBOX_WORKDIR,
            "environment": base_environment(interpreter),
            "hostname": "fixloop-sandbox",
            "stdin_open": True,
            "labels": {OWNER_LABEL: str(os.getpid())},
            "host_config": host_config,
        }

    async def start(self) -> Container:
        try:
            await asyncio.to_thread(self.cgroup.create)
            self._oom_event = await asyncio.to_thread(_watch_oom, self.cgroup)
            created = await asyncio.to_thread(
                lambda: self.client.api.create_container(**self._config())
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
        header = {
            "argv": request.argv,
            "env": {**base_environment(self.profile.interpreter), **request.env},
            "cwd": SANDBOX_WORKDIR,
            "has_files": payload is not None,
        }
        outputs = {1: CappedStream(limits.output_bytes), 2: CappedStream(limits.output_bytes)}
        pump = asyncio.create_task(self._pump(outputs))
        started = time.monotonic()
        timed_out = False
        try:
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self._writer.write(json.dumps(header).encode() + b"\n")
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
        exit_code = status if status is not None else 128 + signal.SIGKILL
        if timed_out:
            exit_code = 124 if exit_code in (0, 128 + signal.SIGKILL) else exit_code
        oom = await asyncio.to_thread(self.oom_killed)
        stdout, stderr = outputs[1], outputs[2]
        return ExecResult(
            exit_code=exit_code,
            stdout=stdout.text(),
            stderr=stderr.text(),
            duration_ms=duration_ms,
            timed_out=timed_out,
            oom_killed=oom,
            truncated=stdout.truncated or stderr.truncated,
            backend="docker",
            workdir=SANDBOX_WORKDIR,
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
        """The engine may not report OOM kills (Podman never does): ask the kernel.

        The engine's runtime deletes its own cgroup, and with it cgroup v1's
        `oom_kill` counter; but the OOM happens at our cgroup's limit, which
        signals the eventfd registered on it (v1) or counts it hierarchically (v2).
        """
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


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


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


# --- the backend ---------------------------------------------------------------------


class DockerSandbox:
    """The Sandbox protocol over a Docker-compatible engine whose runtime is gVisor.

    `pool_size` > 0 keeps containers warm per profile. Construction checks that
    the engine answers and that its containers really run under gVisor (once per
    engine and process); every container checks again before it gets a job.
    `allow_runc` (default: FIXLOOP_ALLOW_RUNC) accepts a non-gVisor engine; every
    job that then runs outside gVisor warns (RuncWarning). `image` (default:
    FIXLOOP_IMAGE) is one from `sandbox build-image`, whose own interpreter runs
    the jobs; without one the host's interpreter is mounted into a skeleton image.
    """

    name: Literal["docker"] = "docker"

    def __init__(
        self,
        *,
        pool_size: int = 0,
        url: str | None = None,
        allow_runc: bool | None = None,
        image: str | None = None,
    ) -> None:
        self.url = engine_url(url)
        self.allow_runc = runc_allowed() if allow_runc is None else allow_runc
        self.client = connect(self.url)
        self.engine = engine_version(self.client, self.url)
        self._images: dict[tuple[str, ...], str] = {}
        # An image from `sandbox build-image` and the interpreter in it; None: the host's.
        self.own_image: tuple[str, Interpreter] | None = None
        image = image or os.environ.get("FIXLOOP_IMAGE") or None
        if image is not None:
            from sandbox.image import image_interpreter

            self.own_image = (image, image_interpreter(self.client, image))
        self.pool: WarmPool[Profile, Container] = WarmPool(
            size=pool_size, start=self._start, discard=self._discard
        )
        reap_stale(self.client)
        verified = _VERIFIED.get(self.url)
        self.kernel = verified or report_kernel(self.client, self.url, self.own_image)
        self.gvisor = require_gvisor(self.kernel, self.url, allow_runc=self.allow_runc)
        if self.gvisor:
            _VERIFIED[self.url] = self.kernel

    @property
    def description(self) -> str:
        """Which engine, and whether under gVisor: for the audit trail and the header."""
        isolation = "gVisor" if self.gvisor else "NOT gVisor (--allow-runc)"
        image = f", image {self.own_image[0]}" if self.own_image else ""
        return f"docker ({self.engine}, {isolation}{image})"

    def image(self, profile: Profile) -> str:
        if self.own_image is not None:
            return self.own_image[0]
        points = tuple(sorted(mount_points(profile)))
        if points not in self._images:
            self._images[points] = build_image(self.client, list(points))
        return self._images[points]

    async def _start(self, profile: Profile) -> Container:
        image = await asyncio.to_thread(self.image, profile)
        try:
            return await self._container(image, profile).start()
        except EngineRefused:
            # An engine may refuse a container transiently (Podman with overlay storage:
            # "device or resource busy" on the last container's mount); try once more.
            await asyncio.sleep(0.5)
            return await self._container(image, profile).start()

    def _container(self, image: str, profile: Profile) -> Container:
        return Container(
            self.client,
            image,
            profile,
            url=self.url,
            allow_runc=self.allow_runc,
            own_python=self.own_image is not None,
        )

    @staticmethod
    async def _discard(container: Container) -> None:
        await container.destroy()

    def profile(self, request: ExecRequest) -> Profile:
        """With an image of its own, its interpreter runs the job (not `request.python`)."""
        interpreter = self.own_image[1] if self.own_image else None
        return profile_for(request, pooled=self.pool.size > 0, interpreter=interpreter)

    async def warm(self, request: ExecRequest) -> None:
        """Start pooled containers for requests like this one, before they arrive."""
        self.pool.fill(await asyncio.to_thread(self.profile, request))

    async def run(self, request: ExecRequest) -> ExecResult:
        profile = await asyncio.to_thread(self.profile, request)
        payload = None
        if request.workdir is not None:
            payload = await asyncio.to_thread(
                pack_directory, request.workdir, request.excludes, request.limits.tmpfs_mb * MIB
            )
        container = await self.pool.take(profile)
        try:
            if not container.kernel.gvisor:
                warnings.warn(RUNC_WARNING, RuncWarning, stacklevel=2)
            return await container.execute(request, payload)
        finally:
            await container.destroy()

    async def close(self) -> None:
        await self.pool.close()
        with contextlib.suppress(Exception):
            self.client.close()


def list_containers(client: docker.DockerClient) -> list[str]:
    """Names of fixloop's containers that exist right now (any process's)."""
    try:
        found = client.api.containers(all=True, filters={"label": OWNER_LABEL})
    except (docker.errors.APIError, requests.exceptions.RequestException):
        return []
    names = [name.lstrip("/") for entry in found for name in entry.get("Names") or []]
    return [name for name in names if name.startswith(ID_PREFIX)]


def reap_stale(client: docker.DockerClient) -> list[str]:
    """Remove containers (and their cgroups) left by fixloop processes that died."""
    from sandbox.gvisor import _alive, _owner_pid

    reaped = []
    for name in list_containers(client):
        owner = _owner_pid(name)
        if owner is None or _alive(owner):
            continue
        remove_container(client, name)
        for path in cgroups.leftovers():
            if path.name == name:
                leftover = cgroups.SandboxCgroup(
                    name=name, memory_bytes=0, cpus=1, pids=1, created=[path]
                )
                remove_cgroup(leftover)
        reaped.append(name)
    return reaped


def report_kernel(
    client: docker.DockerClient, url: str, own: tuple[str, Interpreter] | None = None
) -> KernelReport:
    """Start one container that only reports its kernel, and return what it said.

    `own`: (tag, interpreter) of an image built by `sandbox build-image`; default
    the skeleton image with the host's interpreter mounted.
    """
    interpreter = own[1] if own else probe(default_python())
    profile = Profile.of(interpreter, Limits(timeout_s=30, memory_mb=256))
    image = own[0] if own else build_image(client, mount_points(profile))
    container = Container(client, image, profile, url=url, own_python=own is not None)
    config = container._config()
    config["command"] = ["/bin/sh", INIT_SCRIPT, "true"]
    config["stdin_open"] = False
    config["host_config"]["CgroupParent"] = None
    # json-file: Docker's default log driver, and an alias of k8s-file in Podman.
    config["host_config"]["LogConfig"] = {"Type": "json-file", "Config": {}}
    try:
        created = client.api.create_container(**config)
        container.id = str(created["Id"])
        client.api.start(container.id)
        client.api.wait(container.id, timeout=START_TIMEOUT_S)
        said = client.api.logs(container.id, stdout=True, stderr=True).decode(errors="replace")
    except (docker.errors.APIError, requests.exceptions.RequestException) as exc:
        raise SandboxUnavailable(
            f"the container engine at {url} cannot run the sandbox image: "
            f"{getattr(exc, 'explanation', None) or exc}; see README, 'Docker backend'"
        ) from exc
    finally:
        remove_container(client, container.id or container.name)
    return KernelReport.parse(said)


@dataclass(frozen=True)
class EngineCheck:
    """What `--sandbox auto` and `doctor` need to know about the engine at `url`."""

    url: str
    engine: str | None = None  # None: nothing answers there
    kernel: KernelReport | None = None  # None: no container ran
    error: str | None = None  # why the docker backend cannot use it; None if it can

    @property
    def gvisor(self) -> bool:
        return self.kernel is not None and self.kernel.gvisor


def check_engine(url: str | None = None) -> EngineCheck:
    """Is there an engine at `url` (default: the one fixloop would use), and is it gVisor?

    Costs nothing without an engine socket, a ping otherwise, and one short
    container (about a second) the first time per engine and process.
    """
    url = engine_url(url)
    if url in _VERIFIED and url in _ENGINES:
        return EngineCheck(url=url, engine=_ENGINES[url], kernel=_VERIFIED[url])
    try:
        client = connect(url)
    except SandboxUnavailable as exc:
        return EngineCheck(url=url, error=str(exc))
    try:
        engine = engine_version(client, url)
        try:
            kernel = _VERIFIED.get(url) or report_kernel(client, url)
        except SandboxError as exc:
            return EngineCheck(url=url, engine=engine, error=str(exc))
        try:
            require_gvisor(kernel, url, allow_runc=False)
        except SandboxUnavailable as exc:
            return EngineCheck(url=url, engine=engine, kernel=kernel, error=str(exc))
        _VERIFIED[url] = kernel
        return EngineCheck(url=url, engine=engine, kernel=kernel)
    finally:
        client.close()
