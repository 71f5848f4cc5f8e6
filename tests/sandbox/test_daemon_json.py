"""doctor's fix for a Docker Engine whose containers run on runc: the daemon.json change,
from what the engine's /info says (the runtimes below are Docker 20.10's own, as
fixloop's runc-default test engine reports them). The real engine: test_docker_engine.py.
"""

from __future__ import annotations

import json

from sandbox.docker.daemon_json import daemon_json_fix
from sandbox.docker.kernel import EngineCheck, KernelReport, Runtime

RUNC_KERNEL = KernelReport(
    version="Linux version 6.18.44-fc-v1147 (builder@sandboxing) #1 SMP PREEMPT_DYNAMIC @0",
    root="ext4 rw,relatime",
)
DOCKER_RUNTIMES = (
    Runtime("io.containerd.runc.v2", "runc"),
    Runtime("io.containerd.runtime.v1.linux", "runc"),
    Runtime("runc", "runc"),
)


def on_runc(engine: str, *runtimes: Runtime) -> EngineCheck:
    return EngineCheck(
        url="unix:///var/run/docker.sock",
        engine=engine,
        kernel=RUNC_KERNEL,
        error="refused",
        default_runtime="runc",
        runtimes=(*DOCKER_RUNTIMES, *runtimes),
    )


def change_of(fix: str) -> dict[str, object]:
    line, _, change = fix.partition("\n")
    assert "/etc/docker/daemon.json" in line
    assert "restart" in line
    parsed: dict[str, object] = json.loads(change)
    return parsed


def test_runsc_not_registered_gets_the_runtime_and_the_default() -> None:
    fix = daemon_json_fix(on_runc("Docker Engine 20.10.24+dfsg1"), runsc="/usr/bin/runsc")
    assert fix is not None
    assert "default runtime is runc, runsc is not registered" in fix.splitlines()[0]
    assert change_of(fix) == {
        "runtimes": {"runsc": {"path": "/usr/bin/runsc", "runtimeArgs": ["--network=none"]}},
        "default-runtime": "runsc",
    }


def test_runsc_registered_with_no_network_gets_only_the_default() -> None:
    registered = Runtime("gvisor", "/usr/local/bin/runsc", ("--network=none",))
    fix = daemon_json_fix(on_runc("Docker Engine - Community 24.0.7", registered), "/usr/bin/runsc")
    assert fix is not None
    assert "runsc is registered as 'gvisor'" in fix.splitlines()[0]
    assert change_of(fix) == {"default-runtime": "gvisor"}


def test_runsc_registered_without_no_network_gets_it_added() -> None:
    # Seen here: Docker 20.10 with plain runsc as default fails every container ("cannot
    # run with network enabled in root network namespace").
    registered = Runtime("runsc", "/usr/bin/runsc", ("--debug",))
    fix = daemon_json_fix(on_runc("Docker Engine 20.10.24+dfsg1", registered), "/usr/bin/runsc")
    assert fix is not None
    assert change_of(fix) == {
        "runtimes": {
            "runsc": {"path": "/usr/bin/runsc", "runtimeArgs": ["--debug", "--network=none"]}
        },
        "default-runtime": "runsc",
    }


def test_the_runsc_found_here_is_the_path_given() -> None:
    fix = daemon_json_fix(on_runc("Docker Engine 20.10.24"), runsc="/opt/gvisor/runsc")
    assert fix is not None
    assert '"path": "/opt/gvisor/runsc"' in fix


def test_podman_gets_no_daemon_json() -> None:
    assert daemon_json_fix(on_runc("Podman Engine 4.3.1"), runsc="/usr/bin/runsc") is None


def test_an_engine_already_on_gvisor_gets_no_change() -> None:
    gvisor = KernelReport(
        version="Linux version 4.4.0 #1 SMP Sun Jan 10 15:06:54 PST 2016", root="9p ro"
    )
    check = EngineCheck(url="unix:///x.sock", engine="Docker Engine 20.10.24", kernel=gvisor)
    assert daemon_json_fix(check, runsc="/usr/bin/runsc") is None
