"""Talking to a Docker-compatible engine: connecting, what it is, and whether its
containers run under gVisor (`examine_engine`; `sandbox.choose` asks it for `--sandbox
auto` and `doctor`).
"""

from __future__ import annotations

from typing import Any

import docker
import docker.errors
import docker.types
import requests.exceptions

from sandbox.bundle import (
    Profile,
    mount_points,
)
from sandbox.contract import Limits
from sandbox.docker.containers import INIT_SCRIPT, Container, remove_container
from sandbox.docker.images import skeleton_image
from sandbox.docker.kernel import EngineCheck, KernelReport, Runtime, require_gvisor
from sandbox.docker.locate import engine_url, socket_missing
from sandbox.errors import SandboxError, SandboxUnavailable
from sandbox.handoff import START_TIMEOUT_S
from sandbox.interpreter import Interpreter, default_python, probe

API_TIMEOUT_S = 60
# An engine that does not answer a ping this fast is not one to run jobs on; a
# missing socket fails at once without it.
PING_TIMEOUT_S = 10
# Understood by Docker since 20.10 and by Podman's compatible API since 3.0.
API_VERSION = "1.41"
# Per process, by engine URL: what each engine is, and the kernel report of those
# whose containers were seen to run under gVisor.
_ENGINES: dict[str, str] = {}
_VERIFIED: dict[str, KernelReport] = {}
_ROOTLESS: dict[str, bool] = {}


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
            "`fixloop-tui sandbox engine` (Podman with runsc), or name it with "
            "--docker-url / FIXLOOP_DOCKER_URL"
        ) from exc
    client.api.timeout = API_TIMEOUT_S
    return client


def engine_version(client: docker.DockerClient, url: str) -> str:
    """E.g. 'Podman Engine 4.3.1' or 'Docker Engine - Community 24.0.7' (asked once per URL)."""
    if url not in _ENGINES:
        _ENGINES[url] = _ask_version(client)
    return _ENGINES[url]


def engine_rootless(client: docker.DockerClient, url: str) -> bool:
    """The engine runs as a normal user, so no cgroup limits its containers: rootless Docker
    says `name=rootless` among its security options, rootless Podman (4.3) only `Rootless:
    true`. Asked once per URL."""
    if url not in _ROOTLESS:
        try:
            info: dict[str, Any] = client.info()
        except (docker.errors.APIError, requests.exceptions.RequestException):
            info = {}
        options = info.get("SecurityOptions") or []
        _ROOTLESS[url] = info.get("Rootless") is True or "name=rootless" in options
    return _ROOTLESS[url]


def _ask_version(client: docker.DockerClient) -> str:
    try:
        version: dict[str, Any] = client.version()
    except Exception:  # only for display
        return "unknown engine"
    components = version.get("Components") or [{}]
    name = components[0].get("Name") or "engine"
    if name == "Engine":  # Docker's own name for itself; its builds may leave Platform empty
        name = (version.get("Platform") or {}).get("Name") or "Docker Engine"
    return f"{name} {version.get('Version', '?')}"


def engine_runtimes(client: docker.DockerClient) -> tuple[str | None, tuple[Runtime, ...]]:
    """The engine's default runtime and the runtimes it knows, as its /info says (Docker
    and Podman both do); (None, ()) if it does not answer. For the fix `doctor` prints for
    an engine whose containers are not under gVisor."""
    try:
        info: dict[str, Any] = client.info()
    except (docker.errors.APIError, requests.exceptions.RequestException):
        return None, ()
    runtimes = tuple(
        Runtime(
            name=name,
            path=str((spec or {}).get("path") or name),
            args=tuple(str(arg) for arg in (spec or {}).get("runtimeArgs") or ()),
        )
        for name, spec in sorted((info.get("Runtimes") or {}).items())
    )
    return info.get("DefaultRuntime") or None, runtimes


def engine_kernel(
    client: docker.DockerClient, url: str, own: tuple[str, Interpreter] | None = None
) -> KernelReport:
    """The kernel the engine's containers run: remembered per engine and process once
    seen to be gVisor's, else asked of one short container (see report_kernel)."""
    known = _VERIFIED.get(url)
    if known is not None:
        return known
    kernel = report_kernel(client, url, own)
    if kernel.gvisor:
        _VERIFIED[url] = kernel
    return kernel


def report_kernel(
    client: docker.DockerClient, url: str, own: tuple[str, Interpreter] | None = None
) -> KernelReport:
    """Start one container that only reports its kernel, and return what it said.

    `own`: (tag, interpreter) of an image built by `sandbox build-image`; default
    the skeleton image with the host's interpreter mounted.
    """
    interpreter = own[1] if own else probe(default_python())
    profile = Profile.of(interpreter, Limits(timeout_s=30, memory_mb=256))
    image = own[0] if own else skeleton_image(client, mount_points(profile))
    container = Container(client, image, profile, url=url, own_python=own is not None)
    config = container.create_arguments()
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
            f"{getattr(exc, 'explanation', None) or exc}; see docs/docker.md"
        ) from exc
    finally:
        remove_container(client, container.id or container.name)
    return KernelReport.parse(said)


def examine_engine(url: str | None = None) -> EngineCheck:
    """Is there an engine at `url` (default: the one fixloop would use), and is it gVisor?

    Costs nothing without an engine socket, a ping otherwise, and one short
    container (about a second) the first time per engine and process.
    """
    url = engine_url(url)
    if url in _VERIFIED and url in _ENGINES and url in _ROOTLESS:
        return EngineCheck(
            url=url, engine=_ENGINES[url], kernel=_VERIFIED[url], rootless=_ROOTLESS[url]
        )
    try:
        client = connect(url)
    except SandboxUnavailable as exc:
        return EngineCheck(url=url, error=str(exc))
    try:
        engine = engine_version(client, url)
        try:
            kernel = engine_kernel(client, url)
        except SandboxError as exc:
            return EngineCheck(url=url, engine=engine, error=str(exc))
        try:
            require_gvisor(kernel, url, allow_runc=False)
        except SandboxUnavailable as exc:
            default_runtime, runtimes = engine_runtimes(client)
            return EngineCheck(
                url=url,
                engine=engine,
                kernel=kernel,
                error=str(exc),
                default_runtime=default_runtime,
                runtimes=runtimes,
            )
        rootless = engine_rootless(client, url)
        return EngineCheck(url=url, engine=engine, kernel=kernel, rootless=rootless)
    finally:
        client.close()
