"""Choosing a backend and naming leftovers, without an engine or a sandbox: what
`--sandbox auto` decides from file checks alone, and whose a sandbox name is. The
choices that need a real engine are in test_docker_engine.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from sandbox import choose_backend
from sandbox.choose import check_engine
from sandbox.owners import left_by_dead_process, new_name, owner_pid


def test_a_named_backend_is_taken_without_asking_anything(tmp_path: Path) -> None:
    nowhere = f"unix://{tmp_path}/no-engine.sock"
    assert choose_backend("docker", docker_url=nowhere) == "docker"
    assert choose_backend("unsafe-local", docker_url=nowhere) == "unsafe-local"


def test_no_engine_socket_is_known_without_loading_docker_py(tmp_path: Path) -> None:
    code = (
        "import sys; from sandbox.choose import check_engine; "
        f"check = check_engine('unix://{tmp_path}/no-engine.sock'); "
        "print(check.missing, check.engine, 'docker' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.split() == ["True", "None", "False"], done.stderr


def test_a_missing_engine_says_where_it_looked(tmp_path: Path) -> None:
    check = check_engine(f"unix://{tmp_path}/no-engine.sock")
    assert check.error == f"no engine socket at unix://{tmp_path}/no-engine.sock"
    assert not check.gvisor


def test_a_sandbox_name_says_which_process_made_it() -> None:
    assert owner_pid(new_name()) == os.getpid()
    assert owner_pid("someone-elses-container") is None
    assert owner_pid("fixloop-podman.sock") is None


def test_only_a_dead_processs_sandboxes_are_leftovers() -> None:
    finished = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    dead = int(finished.stdout)
    assert left_by_dead_process(f"fixloop-{dead}-0badc0de")
    assert not left_by_dead_process(new_name())
    assert not left_by_dead_process("someone-elses-container")
