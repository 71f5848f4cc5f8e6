"""Shared fixtures. Sandbox tests fail (never skip) under FIXLOOP_REQUIRE_SANDBOX=1."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import pytest

from sandbox.errors import SandboxUnavailable
from sandbox.gvisor import GvisorSandbox, check_can_run
from tests.model_server import model_server  # noqa: F401 - the scripted model server fixture

if TYPE_CHECKING:
    from sandbox.docker.backend import DockerSandbox

REQUIRE_SANDBOX = os.environ.get("FIXLOOP_REQUIRE_SANDBOX") == "1"


@pytest.fixture(autouse=True)
def private_state(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The app's remembered state (the theme) and the user's config (the trust store) go to
    temp dirs, never the real home."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("config")))


def sandbox_unavailable(why: str) -> None:
    """Fail under FIXLOOP_REQUIRE_SANDBOX=1 (CI), skip elsewhere."""
    if REQUIRE_SANDBOX:
        pytest.fail(f"FIXLOOP_REQUIRE_SANDBOX=1 but the sandbox is unavailable: {why}")
    pytest.skip(reason=f"sandbox unavailable here: {why}")


@pytest.fixture
async def gvisor() -> AsyncIterator[GvisorSandbox]:
    """A cold gvisor backend (every job starts its own sandbox)."""
    backend = open_backend("gvisor", pool_size=0)
    assert isinstance(backend, GvisorSandbox)
    try:
        yield backend
    finally:
        await backend.close()


@pytest.fixture
async def gvisor_pool() -> AsyncIterator[GvisorSandbox]:
    """A gvisor backend with a warm pool of two sandboxes per profile."""
    backend = open_backend("gvisor", pool_size=2)
    assert isinstance(backend, GvisorSandbox)
    try:
        yield backend
    finally:
        await backend.close()


# Both backends that isolate with gVisor; the hostile suite runs against each. The docker
# backend's engine is Podman with runsc: FIXLOOP_DOCKER_URL, else where the backend looks.
ISOLATING_BACKENDS = ("gvisor", "docker-podman")
# Docker Engine (dockerd) with runsc as its default runtime (CI: .ci/docker-service.sh).
DOCKERD_VARIABLE = "FIXLOOP_TEST_DOCKERD_URL"
DOCKERD_URL = "unix:///run/fixloop/docker.sock"
# Docker Engine runs the cases chosen with `also_on_docker_engine` (not all: CI's time), marked
# `docker_engine` so that a run without one (.ci/rootless) can deselect them.
DOCKER_ENGINE = pytest.param("docker-engine", marks=pytest.mark.docker_engine)


def dockerd_url() -> str:
    """The Docker Engine the tests use: FIXLOOP_TEST_DOCKERD_URL, else fixloop's own dockerd."""
    return os.environ.get(DOCKERD_VARIABLE) or DOCKERD_URL


def also_on_docker_engine(fixture: str = "isolating") -> pytest.MarkDecorator:
    """Run a test taking `isolating` (or `isolating_pool`) on Docker Engine as well."""
    return pytest.mark.parametrize(fixture, [*ISOLATING_BACKENDS, DOCKER_ENGINE], indirect=True)


def open_backend(name: str, *, pool_size: int) -> GvisorSandbox | DockerSandbox:
    """The named gVisor backend (gvisor, docker-podman, docker-engine), or fail (CI) / skip
    (elsewhere) saying why it is missing.

    The docker backend is opened with runc refused, whatever the environment says.
    """
    try:
        if name == "gvisor":
            return GvisorSandbox(pool_size=pool_size)
        from sandbox.docker.backend import DockerSandbox

        if name == "docker-engine":
            return DockerSandbox(pool_size=pool_size, url=dockerd_url(), allow_runc=False)
        assert name == "docker-podman", name
        return DockerSandbox(pool_size=pool_size, allow_runc=False)
    except SandboxUnavailable as exc:
        hint = (
            f" (Docker Engine: `bash .ci/docker-service.sh`, then {DOCKERD_VARIABLE}=its socket)"
            if name == "docker-engine"
            else ""
        )
        sandbox_unavailable(f"{name} backend: {exc}{hint}")
        raise  # unreachable: fail/skip raise


@pytest.fixture(params=ISOLATING_BACKENDS)
async def isolating(request: pytest.FixtureRequest) -> AsyncIterator[GvisorSandbox | DockerSandbox]:
    """Each gVisor backend in turn, cold (every job starts its own sandbox)."""
    backend = open_backend(request.param, pool_size=0)
    try:
        yield backend
    finally:
        await backend.close()


@pytest.fixture(params=ISOLATING_BACKENDS)
async def isolating_pool(
    request: pytest.FixtureRequest,
) -> AsyncIterator[GvisorSandbox | DockerSandbox]:
    """Each gVisor backend in turn, with a warm pool of two sandboxes per profile."""
    backend = open_backend(request.param, pool_size=2)
    try:
        yield backend
    finally:
        await backend.close()


@pytest.fixture
def normal_user() -> None:
    """For tests of what a normal user gets, marked `rootless`: deselected by default, run by
    .ci/rootless as a normal user. Selected as root (-m rootless), they fail: as root they
    would test the wrong path."""
    if os.geteuid() == 0:
        pytest.fail("this tests the rootless path: run it as a normal user (.ci/rootless)")


@pytest.fixture
def needs_gvisor() -> None:
    """For tests that start fixloop as a process which then uses the gvisor backend."""
    try:
        check_can_run()
    except SandboxUnavailable as exc:
        sandbox_unavailable(str(exc))
