"""The change to Docker Engine's daemon.json that makes gVisor (runsc) its default runtime:
what `doctor` prints for a Docker whose containers run on runc. Pure: the engine's own
report (its default runtime and the runtimes it knows) in, the text to print out.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import Any

from sandbox.docker.kernel import EngineCheck, Runtime

DAEMON_JSON = "/etc/docker/daemon.json"
# Without it runsc refuses to start fixloop's containers under Docker ("cannot run with
# network enabled in root network namespace", seen with Docker 20.10 here); jobs get no
# network anyway. fixloop's own services give runsc the same flag (docker-service.sh).
NO_NETWORK = "--network=none"


def is_docker_engine(engine: str | None) -> bool:
    """Docker Engine (configured by daemon.json), as opposed to Podman (containers.conf)."""
    return engine is not None and "podman" not in engine.lower()


def registered_runsc(runtimes: Sequence[Runtime]) -> Runtime | None:
    """The runtime through which the engine runs a runsc binary, if it has one."""
    return next((r for r in runtimes if PurePosixPath(r.path).name == "runsc"), None)


def daemon_json_change(runtimes: Sequence[Runtime], runsc: str) -> dict[str, Any]:
    """The keys to merge into daemon.json: `default-runtime` naming runsc's runtime, and
    that runtime's entry unless the engine already has it with --network=none (then only
    the default changes). Not registered: runsc at `runsc`, as "runsc"."""
    known = registered_runsc(runtimes)
    if known is not None and NO_NETWORK in known.args:
        return {"default-runtime": known.name}
    name, path, args = (known.name, known.path, known.args) if known else ("runsc", runsc, ())
    return {
        "runtimes": {name: {"path": path, "runtimeArgs": [*args, NO_NETWORK]}},
        "default-runtime": name,
    }


def daemon_json_fix(check: EngineCheck, runsc: str) -> str | None:
    """One line saying what to do, then the JSON to merge into daemon.json; None for an
    engine that is not Docker Engine or already runs gVisor."""
    if check.gvisor or check.kernel is None or not is_docker_engine(check.engine):
        return None
    known = registered_runsc(check.runtimes)
    now = f"its default runtime is {check.default_runtime or 'unknown'}, " + (
        f"runsc is registered as {known.name!r}" if known else "runsc is not registered"
    )
    change = daemon_json_change(check.runtimes, runsc)
    return (
        f"make runsc Docker's default runtime ({now}): merge this into {DAEMON_JSON}, "
        "then restart Docker (`systemctl restart docker`); --allow-runc accepts it unsafely\n"
        + json.dumps(change, indent=2)
    )
