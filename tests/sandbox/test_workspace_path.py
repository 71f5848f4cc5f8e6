"""Where a job's workspace appears inside its sandbox: the checkout's own path when the
engine asks (so what its dev setup recorded resolves), never where it would hide the
sandbox's own trees or the system's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path, PurePosixPath

import pytest
from pydantic import ValidationError

from sandbox.contract import ExecRequest
from sandbox.docker.backend import DockerSandbox
from sandbox.gvisor import GvisorSandbox
from tests.projects import readable

Isolating = GvisorSandbox | DockerSandbox


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/tmp",
        "/usr/src/project",
        "/proc/1",
        "/fixloop/work",
        "/etc/project",
        "/dev/shm/p",
        "/home/u/../../etc",
        "project",
    ],
)
def test_a_workspace_path_that_would_shadow_the_sandboxs_trees_is_refused(path: str) -> None:
    with pytest.raises(ValidationError, match="workspace path"):
        ExecRequest(argv=["true"], workspace_path=PurePosixPath(path))


@pytest.mark.parametrize("path", ["/home/u/project", "/tmp/pytest-of-u/project", "/srv/app"])
def test_a_checkout_path_is_a_workspace_path(path: str) -> None:
    request = ExecRequest(argv=["true"], workspace_path=PurePosixPath(path))
    assert request.workspace_path == PurePosixPath(path)


@pytest.mark.sandbox
async def test_the_workspace_appears_at_the_path_asked_for(
    isolating: Isolating, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "data.txt").write_text("the copy")
    readable(tmp_path)
    code = "import os, sys; print(os.getcwd()); print(open(sys.argv[1]).read())"
    result = await isolating.run(
        ExecRequest(
            argv=["python", "-c", code, str(project / "data.txt")],
            workdir=project,
            workspace_path=PurePosixPath(project),
        )
    )

    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == [str(project), "the copy"]
    assert result.workdir == str(project)


@pytest.fixture
def with_env(tmp_path: Path) -> Path:
    """A checkout whose venv is `env/` (not one of the names never copied: .venv, venv)."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "app.py").write_text("import sys\nprint(sys.prefix)\n")
    # Before the venv exists: chmod follows its symlinks to the interpreter it was made from.
    readable(tmp_path)
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(project / "env")], check=True
    )
    return project


@pytest.mark.sandbox
async def test_a_venv_in_the_checkout_is_mounted_there_whatever_its_name(
    isolating: Isolating, with_env: Path
) -> None:
    result = await isolating.run(
        ExecRequest(
            argv=["python", "app.py"],
            workdir=with_env,
            workspace_path=PurePosixPath(with_env),
            python=with_env / "env" / "bin" / "python",
        )
    )

    assert result.exit_code == 0, result.stderr
    assert result.stdout.strip() == str(with_env / "env")
