"""`sandbox build-image` against the real engine: an image made of this machine's
interpreter (no registry), one built FROM a base image, and what the docker backend
does with them: run the job with the image's own Python, mounting nothing of the
host's but fixloop's runner.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import uuid
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import docker
import pytest

from engine.verify.execute import PLUGIN_FILES, PLUGIN_MOUNT
from sandbox.contract import ExecRequest, Limits
from sandbox.docker.backend import DockerSandbox
from sandbox.docker.engine_check import connect
from sandbox.docker.images import (
    BuiltImage,
    build_from_base,
    build_from_host,
    image_interpreter,
    skeleton_image,
)
from sandbox.docker.locate import engine_url
from sandbox.errors import SandboxError, SandboxUnavailable
from tests.conftest import DOCKER_ENGINE, dockerd_url, sandbox_unavailable
from tests.sandbox.hostile_helpers import assert_host_clean

pytestmark = pytest.mark.sandbox

REPO = Path(__file__).resolve().parents[2]

# Reads what the job can see: the tools, fixloop's plugin, the kernel, and whether
# anything of the host's /usr (git lives there on every machine that runs this) shows.
LOOK_AROUND = """
import os, subprocess, sys
import fixloop_pytest, mypy.version, pytest
ruff = subprocess.run(["ruff", "--version"], capture_output=True, text=True).stdout.strip()
print("PYTHON", sys.executable, sys.version.split()[0])
print("TOOLS", pytest.__version__, mypy.version.__version__, ruff)
print("KERNEL", open("/proc/version").read().strip())
print("HOST GIT", os.path.exists("/usr/bin/git"))
"""
HOST_HAS_GIT = Path("/usr/bin/git").exists()


@pytest.fixture(scope="module", params=["docker-podman", DOCKER_ENGINE])
def engine(request: pytest.FixtureRequest) -> str:
    """The engine's URL: the one the docker backend uses by default (Podman in CI), or
    Docker Engine."""
    return dockerd_url() if request.param == "docker-engine" else engine_url()


# Docker Engine builds from the host too, and runs a job in it; the rest is the builder's
# own logic, the same for every engine, proven on Podman (CI's time: vfs copies each image).
podman_only = pytest.mark.parametrize("engine", ["docker-podman"], indirect=True, scope="module")


@pytest.fixture(scope="module")
def client(engine: str) -> Iterator[docker.DockerClient]:
    try:
        connected = connect(engine)
    except SandboxUnavailable as exc:
        sandbox_unavailable(str(exc))
        raise
    yield connected
    connected.close()


@pytest.fixture(scope="module")
def host_image(engine: str, client: docker.DockerClient) -> Iterator[BuiltImage]:
    """This interpreter with pytest, ruff, mypy (and pip, to be a base below), built by
    the command a user runs, which checks its image by running a job in it."""
    tag = f"localhost/fixloop-test-image:{uuid.uuid4().hex[:8]}"
    done = subprocess.run(
        [
            sys.executable, "-m", "tui.cli", "sandbox", "build-image", "--from-host",
            "--python", sys.executable, "--package", "pip", "--tag", tag, "--docker-url", engine,
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )  # fmt: skip
    try:
        assert done.returncode == 0, done.stderr
        assert f"built {tag}: Python {sys.version.split()[0]}" in done.stdout
        assert f"a job in it under gVisor: {sys.version.split()[0]}" in done.stdout
        assert f"--image {tag}" in done.stdout
        installed = {name: metadata.version(name) for name in ("pytest", "ruff", "mypy", "pip")}
        yield BuiltImage(
            tag=tag,
            interpreter=image_interpreter(client, tag),
            size_bytes=0,
            packages=installed,  # copied as installed here
        )
    finally:
        with contextlib.suppress(docker.errors.ImageNotFound):
            client.images.remove(tag, force=True)


async def test_an_image_from_the_host_runs_the_tools_under_gvisor_without_host_mounts(
    engine: str, host_image: BuiltImage, tmp_path: Path
) -> None:
    (tmp_path / "test_one.py").write_text("def test_one():\n    assert 1 + 1 == 2\n")
    backend = DockerSandbox(url=engine, image=host_image.tag, allow_runc=False)
    try:
        looked = await backend.run(
            ExecRequest(argv=["python", "-c", LOOK_AROUND], limits=Limits(timeout_s=120))
        )
        tests = await backend.run(
            ExecRequest(
                argv=["python", "-m", "pytest", "-q", "-p", "no:cacheprovider"],
                workdir=tmp_path,
                limits=Limits(timeout_s=120),
            )
        )
    finally:
        await backend.close()

    assert looked.exit_code == 0, looked.stderr
    assert f"PYTHON {host_image.interpreter.executable} {sys.version.split()[0]}" in looked.stdout
    versions = host_image.packages
    assert f"TOOLS {versions['pytest']} {versions['mypy']} ruff {versions['ruff']}" in looked.stdout
    assert "Sun Jan 10 15:06:54 PST 2016" in looked.stdout  # gVisor's kernel
    assert HOST_HAS_GIT  # so the next line means something
    assert "HOST GIT False" in looked.stdout
    assert tests.exit_code == 0, tests.stdout + tests.stderr
    assert "1 passed" in tests.stdout
    await assert_host_clean(backend)


@podman_only
def test_a_package_missing_from_the_interpreter_names_the_install_command(
    client: docker.DockerClient,
) -> None:
    with pytest.raises(SandboxError, match="pip install fixloop-no-such-package"):
        build_from_host(
            client,
            python=Path(sys.executable),
            tag="localhost/fixloop-test-image:never",
            packages=["fixloop-no-such-package"],
        )


@podman_only
def test_an_image_fixloop_did_not_build_is_refused_with_the_fix(
    engine: str, client: docker.DockerClient
) -> None:
    skeleton = skeleton_image(client, ["/proc", "/tmp"])  # an image without the label
    with pytest.raises(SandboxUnavailable, match="sandbox build-image"):
        DockerSandbox(url=engine, image=skeleton, allow_runc=False)


@podman_only
async def test_an_image_from_a_base_gets_the_tools_and_the_requirements(
    engine: str, client: docker.DockerClient, host_image: BuiltImage, tmp_path: Path
) -> None:
    # No registry here: the image built from the host is the base. pip installs the
    # wheels on this machine for the base's Python; the build only copies them in.
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("iniconfig\n")
    tag = f"localhost/fixloop-test-image:base-{uuid.uuid4().hex[:8]}"
    built = build_from_base(
        client,
        base=host_image.tag,
        tag=tag,
        requirements=[requirements],
        site_modules=PLUGIN_FILES,
        mount_points=[PLUGIN_MOUNT],
    )
    try:
        backend = DockerSandbox(url=engine, image=tag, allow_runc=False)
        try:
            result = await backend.run(
                ExecRequest(
                    argv=["python", "-c", "import iniconfig, fixloop_pytest, mypy; print('ok')"],
                    limits=Limits(timeout_s=120),
                )
            )
        finally:
            await backend.close()
    finally:
        client.images.remove(tag, force=True)

    assert built.interpreter.prefix == host_image.interpreter.prefix  # the base's own Python
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "ok\n"
