"""Shared fixtures. Sandbox tests fail (never skip) under FIXLOOP_REQUIRE_SANDBOX=1."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator

import pytest

from sandbox.errors import SandboxUnavailable
from sandbox.gvisor import GvisorSandbox, check_can_run
from tests.model_server import model_server  # noqa: F401 - the scripted model server fixture

REQUIRE_SANDBOX = os.environ.get("FIXLOOP_REQUIRE_SANDBOX") == "1"


@pytest.fixture(autouse=True)
def private_state(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The app's remembered state (the theme) goes to a temp dir, never the real home."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))


def sandbox_unavailable(why: str) -> None:
    """Fail under FIXLOOP_REQUIRE_SANDBOX=1 (CI), skip elsewhere."""
    if REQUIRE_SANDBOX:
        pytest.fail(f"FIXLOOP_REQUIRE_SANDBOX=1 but the sandbox is unavailable: {why}")
    pytest.skip(reason=f"gVisor sandbox unavailable here: {why}")


@pytest.fixture
async def gvisor() -> AsyncIterator[GvisorSandbox]:
    """A cold gvisor backend (every job starts its own sandbox)."""
    try:
        backend = GvisorSandbox()
    except SandboxUnavailable as exc:
        sandbox_unavailable(str(exc))
        raise  # unreachable: fail/skip raise
    try:
        yield backend
    finally:
        await backend.close()


@pytest.fixture
async def gvisor_pool() -> AsyncIterator[GvisorSandbox]:
    """A gvisor backend with a warm pool of two sandboxes per profile."""
    try:
        backend = GvisorSandbox(pool_size=2)
    except SandboxUnavailable as exc:
        sandbox_unavailable(str(exc))
        raise
    try:
        yield backend
    finally:
        await backend.close()


@pytest.fixture
def needs_gvisor() -> None:
    """For tests that start fixloop as a process which then uses the gvisor backend."""
    try:
        check_can_run()
    except SandboxUnavailable as exc:
        sandbox_unavailable(str(exc))
