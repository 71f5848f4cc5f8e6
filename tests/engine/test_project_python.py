"""The project's own venv is used only when the person made it: one a repository commits,
or one leading back into the project, is refused in one line, and nothing in it runs."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import git
import pytest

from engine.errors import ConfigError
from engine.project.paths import project_python


def made_venv(project: Path) -> Path:
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(project / ".venv")], check=True
    )
    return project / ".venv" / "bin" / "python"


def commit_all(project: Path, message: str) -> None:
    repo = git.Repo.init(project)
    repo.git.add("-A", "--force")
    repo.index.commit(message)


def test_a_committed_venv_is_refused_and_never_run(tmp_path: Path) -> None:
    marker = tmp_path / "ran-on-the-host"
    project = tmp_path / "project"
    python = project / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f"#!/bin/sh\ntouch {marker}\n")
    python.chmod(0o755)
    (project / ".venv" / "pyvenv.cfg").write_text(
        f"home = {Path(sys.executable).resolve().parent}\nversion = {sys.version.split()[0]}\n"
    )
    commit_all(project, "a venv of its own")
    with pytest.raises(ConfigError) as raised:
        project_python(project)
    assert str(raised.value) == (
        f"{project / '.venv'} is part of the repository (git tracks .venv/bin/python): "
        "fixloop only runs an interpreter you made; pass --python PATH"
    )
    assert not marker.exists()


def test_a_committed_link_to_a_venv_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    made_venv(elsewhere)
    project = tmp_path / "project"
    project.mkdir()
    (project / "venv").symlink_to(elsewhere / ".venv")
    commit_all(project, "a link to a venv")
    with pytest.raises(ConfigError, match=r"is part of the repository \(git tracks venv\)"):
        project_python(project)


def test_a_venv_whose_interpreter_is_in_the_project_is_refused(tmp_path: Path) -> None:
    python = made_venv(tmp_path)
    tools = tmp_path / "tools"
    tools.mkdir()
    shutil.copy2(Path(sys.executable).resolve(), tools / "python3")
    python.unlink()
    python.symlink_to(tools / "python3")
    with pytest.raises(ConfigError, match=r"its base interpreter .*tools/python3 is inside the"):
        project_python(tmp_path)


def test_a_venv_without_its_pyvenv_cfg_is_refused(tmp_path: Path) -> None:
    made_venv(tmp_path)
    (tmp_path / ".venv" / "pyvenv.cfg").unlink()
    with pytest.raises(ConfigError, match=r"is not a virtual environment \(no pyvenv.cfg\)"):
        project_python(tmp_path)


def test_a_venv_the_person_made_beside_a_repository_is_used(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text(".venv/\n")
    (tmp_path / "code.py").write_text("x = 1\n")
    commit_all(tmp_path, "code")
    python = made_venv(tmp_path)
    assert project_python(tmp_path) == python
