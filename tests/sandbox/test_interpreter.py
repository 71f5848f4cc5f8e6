"""Where an interpreter lives: a venv is read from disk, never run; what it reads is what
running it would have answered, and the trees it asks to mount stay out of secret places."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox.errors import InterpreterRefused
from sandbox.interpreter import _PROBE, Interpreter, probe, read_venv


def ran(python: Path) -> Interpreter:
    """What `python` itself says, asked as fixloop used to ask it."""
    done = subprocess.run(
        [str(python), "-I", "-c", _PROBE], capture_output=True, text=True, check=True
    )
    data = json.loads(done.stdout)
    return Interpreter(
        executable=Path(data["executable"]),
        prefix=Path(data["prefix"]),
        base_prefix=Path(data["base_prefix"]),
        version=data["version"],
    )


def venv(at: Path, *options: str) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", *options, str(at)], check=True)
    return at / "bin" / "python"


def test_a_venv_is_read_as_running_it_would_answer(tmp_path: Path) -> None:
    python = venv(tmp_path / "venv")
    answered = ran(python)
    read = read_venv(tmp_path / "venv").interpreter(python)
    assert read == answered
    assert read.mounts == answered.mounts


def test_a_venv_of_copies_is_read_without_running_it(tmp_path: Path) -> None:
    python = venv(tmp_path / "venv", "--copies")
    assert not python.is_symlink()  # chmod below must not reach the base interpreter
    answered = ran(python)
    python.chmod(0o644)  # it cannot run any more: what follows only reads
    assert probe(python) == answered


def test_a_venvs_interpreter_is_never_run_to_find_its_trees(tmp_path: Path) -> None:
    marker = tmp_path / "ran-on-the-host"
    base = Path(sys.executable).resolve()
    python = tmp_path / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f'#!/bin/sh\ntouch {marker}\necho \'{{"prefix": "/"}}\'\n')
    python.chmod(0o755)
    (tmp_path / "venv" / "pyvenv.cfg").write_text(
        f"home = {base.parent}\nversion = {sys.version.split()[0]}\n"
    )
    found = probe(python)
    assert not marker.exists()
    assert found.prefix == tmp_path / "venv"
    assert found.base_prefix == ran(base).base_prefix


def test_a_venv_whose_home_is_a_secret_directory_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "id_rsa").write_text("sk-fixloop-canary-not-a-key\n")
    python = tmp_path / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.symlink_to(Path(sys.executable).resolve())
    (tmp_path / "venv" / "pyvenv.cfg").write_text(
        f"home = {secret}\nversion = {sys.version.split()[0]}\n"
    )
    with pytest.raises(InterpreterRefused, match=r"the root of the host|at or above its home"):
        read_venv(tmp_path / "venv")


def test_a_base_interpreter_others_may_write_is_refused(tmp_path: Path) -> None:
    shared = tmp_path / "shared" / "bin"
    shared.mkdir(parents=True)
    shutil.copy2(Path(sys.executable).resolve(), shared / "python3")
    python = venv(tmp_path / "venv")
    python.unlink()
    python.symlink_to(shared / "python3")
    shared.chmod(0o777)  # anyone could swap the interpreter the venv leads to
    with pytest.raises(InterpreterRefused, match="others may write to it"):
        read_venv(tmp_path / "venv")
