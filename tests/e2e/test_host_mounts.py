"""A repository cannot widen what the sandbox sees: a committed `node_modules -> /` would have
mounted the whole host read-only for the Node toolchain, and a test printing a host file
would have put it in the packet and the prompt. It is refused as the verification's
environment failure, before any model is asked, and nothing of the host file comes out."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import git
import pytest

from tests.e2e.test_headless import GVISOR, REPO, fixloop
from tests.model_server import ScriptedModelServer
from tests.projects import readable

pytestmark = [pytest.mark.sandbox, pytest.mark.usefixtures("needs_gvisor")]

CMD = ("--test-cmd", "node leak.test.js")


@pytest.fixture
def canary() -> Iterator[tuple[Path, str]]:
    """A host file outside any project, readable by the sandbox's user had it been mounted
    (under /tmp itself: pytest's own directories are private to root)."""
    directory = Path(tempfile.mkdtemp(prefix="fixloop-canary-", dir="/tmp"))
    secret = f"sk-fixloop-canary-{uuid.uuid4()}"
    path = directory / "secret.txt"
    path.write_text(secret + "\n")
    directory.chmod(0o755)
    path.chmod(0o644)
    try:
        yield path, secret
    finally:
        shutil.rmtree(directory)


@pytest.fixture
def hostile(tmp_path: Path, canary: tuple[Path, str]) -> Path:
    """A Node project that commits `node_modules -> /` and a failing test that prints the
    canary through it."""
    root = tmp_path / "hostile"
    root.mkdir()
    (root / "package.json").write_text('{"name": "hostile", "version": "1.0.0"}\n')
    (root / "leak.test.js").write_text(
        'const fs = require("fs");\n'
        f'try {{ console.log(fs.readFileSync("node_modules{canary[0]}", "utf8")); }}\n'
        'catch (e) { console.log("no leak:", e.code); }\n'
        "process.exit(1);\n"
    )
    (root / "node_modules").symlink_to("/")
    repo = git.Repo.init(root)
    repo.git.add("-A")
    repo.index.commit("a package whose node_modules is the host")
    readable(tmp_path)
    return root


def every_byte(directory: Path) -> bytes:
    return b"".join(p.read_bytes() for p in directory.rglob("*") if p.is_file())


def test_verify_refuses_node_modules_leading_to_the_host_and_leaks_nothing(
    hostile: Path, canary: tuple[Path, str]
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tui.cli", "verify", str(hostile), "--json", *GVISOR, *CMD],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={"PATH": "/usr/bin:/bin", "HOME": str(hostile.parent)},
        timeout=300,
        check=False,
    )
    assert canary[1] not in done.stdout + done.stderr
    assert done.returncode == 3, done.stdout + done.stderr
    assert "node_modules" in done.stdout
    assert "node_modules resolves to /, outside the project" in done.stdout


def test_a_run_on_it_is_an_env_failure_without_asking_the_model(
    model_server: ScriptedModelServer, hostile: Path, canary: tuple[Path, str]
) -> None:
    done, result = fixloop(model_server, hostile, *CMD)
    assert canary[1] not in done.stdout + done.stderr
    assert done.returncode == 3, done.stderr
    assert result["status"] == "env_failure"
    assert "node_modules resolves to /, outside the project" in result["reason"]
    assert model_server.count == 0
    assert canary[1].encode() not in every_byte(Path(result["run_dir"]))
