"""`DockerSandbox`: the Sandbox protocol over a Docker-compatible engine, with its warm
pool of containers, one per job (see the package's docstring)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import warnings
from typing import Literal

import docker
import docker.errors
import docker.types
import requests.exceptions

from sandbox import cgroups
from sandbox.bundle import (
    Profile,
    mount_points,
    profile_for,
)
from sandbox.contract import ExecRequest, ExecResult
from sandbox.docker.containers import OWNER_LABEL, Container, remove_cgroup, remove_container
from sandbox.docker.engine_check import connect, engine_kernel, engine_rootless, engine_version
from sandbox.docker.images import image_interpreter, skeleton_image
from sandbox.docker.kernel import require_gvisor, runc_allowed
from sandbox.docker.locate import engine_url
from sandbox.errors import EngineRefused, RuncWarning
from sandbox.handoff import job_files
from sandbox.interpreter import Interpreter
from sandbox.owners import ID_PREFIX, left_by_dead_process
from sandbox.pool import WarmPool

RUNC_WARNING = (
    "the docker backend runs this job in a container that is NOT under gVisor "
    "(--allow-runc): model-written code shares the host kernel"
)


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
        self.rootless = engine_rootless(self.client, self.url)
        self._images: dict[tuple[str, ...], str] = {}
        # An image from `sandbox build-image` and the interpreter in it; None: the host's.
        self.own_image: tuple[str, Interpreter] | None = None
        image = image or os.environ.get("FIXLOOP_IMAGE") or None
        if image is not None:
            self.own_image = (image, image_interpreter(self.client, image))
        self.pool: WarmPool[Profile, Container] = WarmPool(
            size=pool_size, start=self._start, discard=self._discard
        )
        reap_stale(self.client)
        self.kernel = engine_kernel(self.client, self.url, self.own_image)
        self.gvisor = require_gvisor(self.kernel, self.url, allow_runc=self.allow_runc)

    @property
    def description(self) -> str:
        """Which engine, and whether under gVisor: for the audit trail and the header."""
        isolation = "gVisor" if self.gvisor else "NOT gVisor (--allow-runc)"
        image = f", image {self.own_image[0]}" if self.own_image else ""
        limits = ", rootless: rlimits and a memory watch" if self.rootless else ""
        return f"docker ({self.engine}, {isolation}{image}{limits})"

    def image(self, profile: Profile) -> str:
        if self.own_image is not None:
            return self.own_image[0]
        points = tuple(sorted(mount_points(profile)))
        if points not in self._images:
            self._images[points] = skeleton_image(self.client, list(points))
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
            rootless_engine=self.rootless,
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
        payload = await job_files(request, profile)
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
    reaped = []
    for name in list_containers(client):
        if not left_by_dead_process(name):
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
