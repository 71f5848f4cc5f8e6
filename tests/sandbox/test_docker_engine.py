"""The docker backend against real engines, Podman and Docker Engine: each with runsc
(gVisor) as its default runtime, and each with runc, whose containers share the host
kernel and must be refused.

The runc engines are a second Podman service and a second dockerd this module starts on
their own sockets and storage, so a refusal here is the backend's real path: a container
created, started, its kernel report read, refused, removed.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from engine.doctor import check_docker
from sandbox import SandboxUnavailable, choose_backend
from sandbox.bundle import Profile, mount_points
from sandbox.contract import Limits
from sandbox.docker.backend import DockerSandbox, list_containers
from sandbox.docker.containers import Container
from sandbox.docker.engine_check import connect
from sandbox.docker.images import skeleton_image
from sandbox.docker.locate import engine_url
from sandbox.errors import RuncWarning
from sandbox.interpreter import default_python, probe
from tests.conftest import DOCKER_ENGINE, DOCKERD_URL, dockerd_url, sandbox_unavailable
from tests.sandbox.hostile_helpers import OURS, python_job

pytestmark = pytest.mark.sandbox

REPO = Path(__file__).resolve().parents[2]
# Docker Engine as it comes: runc its default runtime, runsc not registered.
RUNC_DAEMON = {
    "exec-opts": ["native.cgroupdriver=cgroupfs"],
    "iptables": False,
    "bridge": "none",
    "storage-driver": "vfs",
}
RUNC_CONF = """
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
"""


@pytest.fixture(scope="module", params=["docker-podman", DOCKER_ENGINE])
def runc_engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """The URL of an engine whose containers run on runc, i.e. the host kernel: Podman, or
    Docker Engine (param docker-engine)."""
    # A short path: unix socket paths are limited to 108 bytes.
    base = Path(f"/run/fixloop/runc-{request.param}-{os.getpid()}")
    storage = tmp_path_factory.mktemp("runc-storage")
    if request.param == "docker-podman":
        start = podman_on_runc(base, storage)
    else:
        start = dockerd_on_runc(base, storage)
    socket = base / f"{request.param}.sock"
    service = subprocess.Popen(
        start(socket), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env={**os.environ, "CONTAINERS_CONF": str(base / "containers.conf")},
    )  # fmt: skip
    url = f"unix://{socket}"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                connect(url).close()
                break
            except SandboxUnavailable:
                if time.monotonic() > deadline or service.poll() is not None:
                    raise
                time.sleep(0.1)
        yield url
    finally:
        service.terminate()
        try:
            service.wait(timeout=20)
        except subprocess.TimeoutExpired:
            service.kill()
            service.wait()
        shutil.rmtree(base, ignore_errors=True)


def podman_on_runc(base: Path, storage: Path) -> Callable[[Path], list[str]]:
    podman, runc = shutil.which("podman"), shutil.which("runc")
    if podman is None or runc is None:
        sandbox_unavailable(
            "podman and runc are needed: `fixloop-tui sandbox engine`, apt-get install runc"
        )
    base.mkdir(parents=True)
    (base / "containers.conf").write_text(RUNC_CONF)
    return lambda socket: [
        str(podman), "--root", str(storage), "--runroot", str(base / "run"),
        "--storage-driver", "vfs", "system", "service", "--time=0", f"unix://{socket}",
    ]  # fmt: skip


def dockerd_on_runc(base: Path, storage: Path) -> Callable[[Path], list[str]]:
    dockerd = shutil.which("dockerd")
    if dockerd is None:
        sandbox_unavailable("dockerd is needed: `bash .ci/docker-service.sh` installs docker.io")
    base.mkdir(parents=True)

    def start(socket: Path) -> list[str]:
        daemon = {
            **RUNC_DAEMON,
            "hosts": [f"unix://{socket}"],
            "data-root": str(storage),
            "exec-root": str(base / "x"),
            "pidfile": str(base / "docker.pid"),
            "containerd-namespace": f"fixloop-runc-{os.getpid()}",
            "containerd-plugins-namespace": f"fixloop-runc-plugins-{os.getpid()}",
        }
        (base / "daemon.json").write_text(json.dumps(daemon))
        return [str(dockerd), "--config-file", str(base / "daemon.json")]

    return start


@pytest.fixture(params=["docker-podman", DOCKER_ENGINE])
def gvisor_engine(request: pytest.FixtureRequest) -> str:
    """The URL of an engine with runsc, known to answer: the one the docker backend uses by
    default (Podman in CI), or Docker Engine."""
    url = dockerd_url() if request.param == "docker-engine" else engine_url()
    try:
        connect(url).close()
    except SandboxUnavailable as exc:
        sandbox_unavailable(str(exc))
    return url


def _ours_in(url: str) -> list[str]:
    client = connect(url)
    try:
        return [name for name in list_containers(client) if name.startswith(OURS)]
    finally:
        client.close()


# --- gVisor or nothing --------------------------------------------------------------


def test_an_engine_on_runc_is_refused_at_start_up(runc_engine: str) -> None:
    with pytest.raises(SandboxUnavailable) as refused:
        DockerSandbox(url=runc_engine, allow_runc=False)

    message = str(refused.value)
    assert "does not run containers under gVisor" in message
    assert os.uname().release in message  # what the container saw: the host's kernel
    assert "--sandbox gvisor" in message  # and what to do instead
    assert _ours_in(runc_engine) == []


async def test_a_container_on_runc_is_refused_before_it_gets_a_job(runc_engine: str) -> None:
    # Past the start-up check (runc allowed), the check every container makes still refuses.
    client = connect(runc_engine)
    profile = Profile.of(probe(default_python()), Limits(memory_mb=256))
    image = skeleton_image(client, mount_points(profile))
    container = Container(client, image, profile, url=runc_engine, allow_runc=False)
    try:
        with pytest.raises(SandboxUnavailable, match="does not run containers under gVisor"):
            await container.start()
        assert _ours_in(runc_engine) == []
    finally:
        client.close()


async def test_allowing_runc_runs_on_the_host_kernel_and_warns_every_job(
    runc_engine: str,
) -> None:
    backend = DockerSandbox(url=runc_engine, allow_runc=True)
    try:
        assert "NOT gVisor" in backend.description
        for _ in range(2):
            with pytest.warns(RuncWarning, match="NOT under gVisor"):
                result = await backend.run(python_job("import os; print(os.uname().release)"))
            assert result.stdout == os.uname().release + "\n", result
    finally:
        await backend.close()
    assert _ours_in(runc_engine) == []


async def test_the_gvisor_engine_runs_jobs_under_gvisor_without_a_warning(
    gvisor_engine: str, recwarn: pytest.WarningsRecorder
) -> None:
    backend = DockerSandbox(url=gvisor_engine, allow_runc=False)
    try:
        result = await backend.run(python_job("print(open('/proc/version').read())"))
    finally:
        await backend.close()

    assert "Sun Jan 10 15:06:54 PST 2016" in result.stdout, result  # gVisor's kernel
    assert "gVisor" in backend.description
    assert "NOT" not in backend.description
    assert not [w for w in recwarn if issubclass(w.category, RuncWarning)]


# --- --sandbox auto and doctor ---------------------------------------------------------


@pytest.mark.usefixtures("needs_gvisor")
def test_auto_uses_runsc_directly_when_the_engine_is_not_gvisor(runc_engine: str) -> None:
    assert choose_backend("auto", docker_url=runc_engine) == "gvisor"


def test_auto_uses_the_engine_when_it_runs_gvisor(gvisor_engine: str) -> None:
    assert choose_backend("auto", docker_url=gvisor_engine) == "docker"


@pytest.mark.usefixtures("needs_gvisor")
def test_auto_without_an_engine_never_loads_docker_py(tmp_path: Path) -> None:
    code = (
        "import sys, time, engine.run.start; from sandbox import choose_backend; "
        "started = time.perf_counter(); "
        "print(choose_backend('auto'), 'docker' in sys.modules, "
        "time.perf_counter() - started)"
    )
    env = {**os.environ, "FIXLOOP_DOCKER_URL": f"unix://{tmp_path}/no-engine.sock"}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, check=True
    )
    backend, imported, seconds = done.stdout.split()
    assert (backend, imported) == ("gvisor", "False"), done.stderr
    assert float(seconds) < 1.0  # no ping, no container: file checks only


def test_doctor_names_the_engine_and_says_it_runs_gvisor(gvisor_engine: str) -> None:
    check = check_docker(gvisor_engine)
    assert check.ok, check
    assert "Podman Engine" in check.detail or "Docker Engine" in check.detail
    assert "containers run under gVisor" in check.detail


def test_doctor_says_an_engine_on_runc_is_refused_and_how_to_fix_it(runc_engine: str) -> None:
    check = check_docker(runc_engine)
    assert not check.ok
    assert "NOT under gVisor" in check.detail
    assert check.fix is not None
    assert "runsc" in check.fix
    if "Docker Engine" in check.detail:  # the daemon.json change, from the engine's own /info
        line, _, change = check.fix.partition("\n")
        assert "default runtime is runc, runsc is not registered" in line
        assert json.loads(change)["default-runtime"] == "runsc"
    else:
        assert "containers.conf" in check.fix or "docs/docker.md" in check.fix


def test_doctor_without_an_engine_says_how_to_start_one(tmp_path: Path) -> None:
    check = check_docker(f"unix://{tmp_path}/no-engine.sock")
    assert not check.ok
    assert not check.needed
    assert check.fix is not None
    assert "fixloop-tui sandbox engine" in check.fix


# --- the command line --------------------------------------------------------------------


def fixloop(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("FIXLOOP_ALLOW_RUNC", None)
    return subprocess.run(
        [sys.executable, "-m", "tui.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
        check=False,
    )


def test_sandbox_run_on_the_docker_backend(gvisor_engine: str, tmp_path: Path) -> None:
    done = fixloop(
        "sandbox", "run", "--backend", "docker", "--docker-url", gvisor_engine,
        "--", "python", "-c", "print(1)",
        cwd=tmp_path,
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (0, "1\n"), done.stderr
    assert "warning" not in done.stderr


def test_sandbox_run_refuses_a_runc_engine_in_one_line(runc_engine: str, tmp_path: Path) -> None:
    done = fixloop(
        "sandbox", "run", "--backend", "docker", "--docker-url", runc_engine, "--", "true",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 6
    assert done.stderr.startswith("fixloop-tui: error: the container engine at")
    assert len(done.stderr.splitlines()) == 1


def test_sandbox_run_with_allow_runc_warns(runc_engine: str, tmp_path: Path) -> None:
    done = fixloop(
        "sandbox", "run", "--backend", "docker", "--docker-url", runc_engine, "--allow-runc",
        "--", "python", "-c", "print(2)",
        cwd=tmp_path,
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (0, "2\n"), done.stderr
    warnings = [line for line in done.stderr.splitlines() if "NOT under gVisor" in line]
    assert len(warnings) == 1, done.stderr  # one job, one warning
    assert warnings[0].startswith("fixloop-tui: warning: the docker backend runs this job")


# --- fixloop's own dockerd ---------------------------------------------------------------


def digest(path: str) -> str | None:
    """What is at `path` now: a file's hash, or its kind; None if nothing."""
    target = Path(path)
    if not target.exists():
        return None
    if target.is_file():
        return hashlib.sha256(target.read_bytes()).hexdigest()
    return "directory" if target.is_dir() else "socket"


@pytest.mark.docker_engine
def test_sandbox_engine_docker_runs_runsc_by_default_and_leaves_a_system_docker_alone(
    tmp_path: Path,
) -> None:
    if os.geteuid() != 0:
        sandbox_unavailable("fixloop's dockerd runs as root")
    system = ("/etc/docker/daemon.json", "/var/run/docker.sock", "/var/lib/docker")
    before = {path: digest(path) for path in system}

    done = fixloop("sandbox", "engine", "--docker", cwd=tmp_path)  # idempotent: CI started it

    assert done.returncode == 0, done.stderr
    assert done.stdout == f"fixloop's dockerd (runsc) answers at {DOCKERD_URL}\n"
    client = connect(DOCKERD_URL)
    try:
        info = client.info()
    finally:
        client.close()
    assert info["DefaultRuntime"] == "runsc"
    assert info["Runtimes"]["runsc"]["runtimeArgs"] == ["--network=none"]
    assert info["DockerRootDir"] == "/var/lib/fixloop/docker"
    assert {path: digest(path) for path in system} == before
