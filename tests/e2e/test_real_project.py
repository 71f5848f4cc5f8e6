"""A real project from PyPI, in its ordinary dev setup, stays green in fixloop: cachetools
(pinned sdist, MIT; a src layout installed editable into its own `.venv`, a suite of 480
tests of which some run 10 threads through a Barrier), green bare, verifies OK on both gVisor
backends, as root and as a normal user (.ci/rootless). The sdist is downloaded at test time:
no network to PyPI is a failure, not a skip. The whole benchmark is `bench/real_projects.py`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import git
import pytest

from bench.real_projects import BARE_CMD, IGNORED, PROJECTS, TEST_CMD, fetch_sdist, unpack
from tests.e2e.test_headless import REPO
from tests.projects import readable

pytestmark = [pytest.mark.sandbox, pytest.mark.usefixtures("needs_gvisor")]

CACHETOOLS = PROJECTS["cachetools"]
TESTS = 480


def pip(venv: Path, *args: str) -> None:
    """pip into the project's venv (made --without-pip: fast, no bundled wheels)."""
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture(scope="module")
def cachetools(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """cachetools' sdist unpacked and committed, its `.venv` holding pytest and the project
    installed editable (its `.pth` names the checkout's src/), green bare."""
    top = tmp_path_factory.mktemp("real-project")
    root = top / CACHETOOLS.slug
    unpack(fetch_sdist(CACHETOOLS, top / "downloads"), root)
    (root / ".gitignore").write_text(IGNORED)
    # Before the venv exists: chmod follows its symlinks to the interpreter it was made from.
    readable(top)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / ".venv")], check=True)
    test_deps = [dep for dep in CACHETOOLS.test_deps if dep.startswith("pytest")]
    pip(root / ".venv", "-q", *test_deps, "setuptools>=80", "setuptools-scm>=8.2")
    repo = git.Repo.init(root)
    repo.git.add("-A")
    repo.index.commit(CACHETOOLS.slug)
    pip(root / ".venv", "-q", "--no-build-isolation", "--no-deps", "-e", str(root))
    pth = "".join(p.read_text() for p in (root / ".venv").glob("lib/python*/site-packages/*.pth"))
    assert str(root / "src") in pth, pth
    bare = subprocess.run(
        [str(root / ".venv" / "bin" / "python"), *BARE_CMD],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert bare.returncode == 0, bare.stdout + bare.stderr
    assert f"{TESTS} passed" in bare.stdout, bare.stdout
    return root


@pytest.mark.parametrize("backend", ["gvisor", "docker"])
def test_cachetools_green_bare_verifies_ok_with_all_its_tests(
    cachetools: Path, backend: str
) -> None:
    done = subprocess.run(
        [
            sys.executable, "-m", "tui.cli", "verify", str(cachetools), "--json",
            "--sandbox", backend,
            "--python", str(cachetools / ".venv" / "bin" / "python"),
            "--test-cmd", TEST_CMD,
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={"PATH": "/usr/bin:/bin", "HOME": str(cachetools.parent)},
        timeout=300,
        check=False,
    )  # fmt: skip
    result = json.loads(done.stdout) if done.stdout.strip() else {}

    assert done.returncode == 0, done.stdout + done.stderr
    assert result["status"] == "ok", result
    tests = result["tests"]
    assert tests["collected"] == TESTS, tests
    # Its 32 subtests are no tests of their own: pytest says "32 subtests passed" apart.
    assert tests["passed"] == TESTS, tests
    assert (tests["failed"], tests["errors"], tests["skipped"]) == (0, 0, 0), tests
