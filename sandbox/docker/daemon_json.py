"""The change to Docker Engine's daemon.json that makes gVisor (runsc) its default runtime:
what `doctor` prints for a Docker whose containers run on runc. Pure: the engine's own
report (its default runtime and the runtimes it knows) in, the text to print out.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

from sandbox.docker.kernel import EngineCheck

DAEMON_JSON = "/etc/docker/daemon.json"
# runsc refuses to start with networking in the root network namespace, and jobs get no
# network anyway: the same flag fixloop's own services give it (docker-service.sh).
RUNSC_ARGS = ["--network=none"]


def is_docker_engine(engine: str | None) -> bool:
    """Docker Engine (configured by daemon.json), as opposed to Podman (containers.conf)."""
    return engine is not None and "podman" not in engine.lower()


def registered_runsc(runtimes: Mapping[str, str]) -> str | None:
    """The name under which the engine knows a runsc binary, if it does."""
    return next(
        (name for name, path in sorted(runtimes.items()) if PurePosixPath(path).name == "runsc"),
        None,
    )


def daemon_json_change(
    default_runtime: str | None, runtimes: Mapping[str, str], runsc: str
) -> dict[str, Any]:
    """The keys to merge into daemon.json. runsc already registered (as any name) and not
    the default: only `default-runtime`; not registered: the runtime at `runsc` as well."""
    name = registered_runsc(runtimes)
    if name is not None:
        return {"default-runtime": name}
    return {
        "runtimes": {"runsc": {"path": runsc, "runtimeArgs": RUNSC_ARGS}},
        "default-runtime": "runsc",
    }


def daemon_json_fix(check: EngineCheck, runsc: str) -> str | None:
    """One line saying what to do, then the JSON to merge into daemon.json; None for an
    engine that is not Docker Engine or already runs gVisor."""
    if check.gvisor or check.kernel is None or not is_docker_engine(check.engine):
        return None
    runtimes = dict(check.runtimes)
    change = daemon_json_change(check.default_runtime, runtimes, runsc)
    now = f"its default runtime is {check.default_runtime or 'unknown'}"
    registered = registered_runsc(runtimes)
    known = f", runsc is registered as {registered!r}" if registered else ", runsc not registered"
    return (
        f"make runsc Docker's default runtime ({now}{known}): merge this into {DAEMON_JSON}, "
        "then restart Docker (`systemctl restart docker`); --allow-runc accepts it unsafely\n"
        + json.dumps(change, indent=2)
    )
