"""Which backend a run gets (`choose_backend` owns `--sandbox auto`), and what `doctor`
reports of each backend on this machine. Plain values in: nothing here knows of settings.
"""

from __future__ import annotations

import subprocess
from typing import Literal

from sandbox.contract import BackendName
from sandbox.docker.kernel import EngineCheck
from sandbox.docker.locate import engine_url, socket_missing
from sandbox.errors import SandboxUnavailable

__all__ = ["EngineCheck", "check_engine", "choose_backend", "gvisor_problem", "runsc_version"]


def choose_backend(
    choice: BackendName | Literal["auto"], *, docker_url: str | None = None
) -> BackendName:
    """The backend a run uses. `auto`: the docker backend if an engine answers at
    `docker_url` (default: the one it would use) and its containers run under gVisor,
    else the gvisor backend if runsc works here, else SandboxUnavailable saying what
    `doctor` would. Without an engine socket this costs file checks only."""
    if choice != "auto":
        return choice
    docker_reason = check_engine(docker_url).error
    if docker_reason is None:
        return "docker"
    gvisor_reason = gvisor_problem()
    if gvisor_reason is not None:
        raise SandboxUnavailable(
            f"no sandbox works here (gvisor: {gvisor_reason}; docker: {docker_reason}); see "
            "`fixloop-tui doctor`, or choose --sandbox unsafe-local to run model-written "
            "code unsandboxed (not recommended)"
        )
    return "gvisor"


def check_engine(url: str | None = None) -> EngineCheck:
    """Is there an engine at `url` (default: the one the docker backend would use), and
    do its containers run under gVisor? Without a socket there this imports no docker-py
    and asks nothing; otherwise a ping, and one short container the first time per
    engine and process."""
    url = engine_url(url)
    if socket_missing(url):
        return EngineCheck(url=url, missing=True, error=f"no engine socket at {url}")
    from sandbox.docker.engine_check import examine_engine

    return examine_engine(url)


def gvisor_problem() -> str | None:
    """Why the gvisor backend cannot run here (with the fix); None if it can."""
    from sandbox.gvisor import check_can_run

    try:
        check_can_run()
    except SandboxUnavailable as exc:
        return str(exc)
    return None


def runsc_version() -> tuple[str, str]:
    """runsc's path and what its --version says first; SandboxUnavailable (with the
    install command) when it is not installed."""
    from sandbox.gvisor import find_runsc

    runsc = find_runsc()
    try:
        done = subprocess.run(
            [runsc, "--version"], capture_output=True, text=True, timeout=20, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return runsc, "unknown version"
    return runsc, (done.stdout.splitlines() or ["unknown version"])[0]
