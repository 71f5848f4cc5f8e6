"""A project in its ordinary dev setup stays green in fixloop: a src layout installed
editable into its own `.venv` (the `.pth` names the checkout's path) with a threaded and
multiprocessing suite, green bare, verifies OK on both gVisor backends, as root and as a
normal user (.ci/rootless)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path, PurePosixPath

import git
import pytest

from sandbox.contract import ExecRequest
from sandbox.gvisor import GvisorSandbox
from tests.e2e.test_headless import REPO
from tests.projects import readable

pytestmark = [pytest.mark.sandbox, pytest.mark.usefixtures("needs_gvisor")]

PYPROJECT = """\
[build-system]
requires = ["setuptools>=64"]
build-backend = "setuptools.build_meta"

[project]
name = "threadly"
version = "0.1.0"

[tool.setuptools.packages.find]
where = ["src"]
"""

PACKAGE = """\
def square(x):
    return x * x
"""

SUITE = """\
import multiprocessing
import threading
from concurrent.futures import ThreadPoolExecutor

from threadly import square


def test_square():
    assert square(3) == 9


def test_a_pool_of_200_threads_all_running_at_once():
    barrier = threading.Barrier(200, timeout=30)

    def work(x):
        barrier.wait()
        return square(x)

    with ThreadPoolExecutor(max_workers=200) as pool:
        assert sum(pool.map(work, range(200))) == sum(x * x for x in range(200))


def test_a_process_pool_of_4():
    with multiprocessing.get_context("fork").Pool(4) as pool:
        assert pool.map(square, range(8)) == [x * x for x in range(8)]
"""


def pip(venv: Path, *args: str) -> None:
    """pip into the project's venv (made --without-pip: fast, no bundled wheels)."""
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", *args],
        check=True,
        capture_output=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def editable(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project, committed, its `.venv` holding pytest and the project installed
    editable (`pip install -e . --no-build-isolation --no-deps`), green bare."""
    top = tmp_path_factory.mktemp("own-path")
    root = top / "threadly"
    (root / "src" / "threadly").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "pyproject.toml").write_text(PYPROJECT)
    (root / "src" / "threadly" / "__init__.py").write_text(PACKAGE)
    (root / "tests" / "test_threadly.py").write_text(SUITE)
    (root / ".gitignore").write_text(".venv/\n*.egg-info/\n")
    # Before the venv exists: chmod follows its symlinks to the interpreter it was made from.
    readable(top)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / ".venv")], check=True)
    pip(root / ".venv", "-q", "pytest", "setuptools")
    pip(root / ".venv", "-q", "--no-build-isolation", "--no-deps", "-e", str(root))
    pth = "".join(p.read_text() for p in (root / ".venv").glob("lib/python*/site-packages/*.pth"))
    assert str(root / "src") in pth, pth
    repo = git.Repo.init(root)
    repo.git.add("-A")
    repo.index.commit("baseline")
    bare = subprocess.run(
        [str(root / ".venv" / "bin" / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert bare.returncode == 0, bare.stdout + bare.stderr
    return root


def verify(root: Path, backend: str) -> tuple[subprocess.CompletedProcess[str], dict[str, object]]:
    done = subprocess.run(
        [sys.executable, "-m", "tui.cli", "verify", str(root), "--json", "--sandbox", backend],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={"PATH": "/usr/bin:/bin", "HOME": str(root.parent)},
        timeout=300,
        check=False,
    )
    return done, json.loads(done.stdout) if done.stdout.strip() else {}


@pytest.mark.parametrize("backend", ["gvisor", "docker"])
def test_an_editable_src_layout_with_a_threaded_suite_green_bare_verifies_ok(
    editable: Path, backend: str
) -> None:
    done, result = verify(editable, backend)

    assert done.returncode == 0, done.stdout + done.stderr
    assert result["status"] == "ok", result
    assert result["tests"] == {
        "collected": 3, "passed": 3, "failed": 0, "errors": 0, "skipped": 0, "xfailed": 0,
    }  # fmt: skip


def test_an_edit_to_the_package_is_what_the_editable_install_imports(editable: Path) -> None:
    module = editable / "src" / "threadly" / "__init__.py"
    module.write_text(textwrap.dedent(PACKAGE).replace("x * x", "x + x"))
    try:
        done, result = verify(editable, "gvisor")
    finally:
        module.write_text(PACKAGE)

    assert result["status"] == "failing", done.stdout + done.stderr
    packet = str(result["packet_text"])
    assert "tests/test_threadly.py::test_square" in packet
    # Paths in the packet are the project's, relative: not where the sandbox keeps its copy.
    assert str(editable) not in packet


async def test_a_warm_sandbox_imports_the_editable_install_from_its_workspace(
    editable: Path, gvisor_pool: GvisorSandbox
) -> None:
    # A pooled sandbox's interpreter started (and read the venv's .pth files) before the
    # workspace, and so the project's src/, existed.
    result = await gvisor_pool.run(
        ExecRequest(
            argv=["python", "-c", "import threadly; print(threadly.__file__)"],
            workdir=editable,
            workspace_path=PurePosixPath(editable),
            python=editable / ".venv" / "bin" / "python",
        )
    )

    assert result.exit_code == 0, result.stderr
    assert result.stdout.strip() == str(editable / "src" / "threadly" / "__init__.py")


async def test_the_doctor_imports_the_editable_install_as_a_verification_would(
    editable: Path,
) -> None:
    from engine.doctor import check_project_package

    check = await check_project_package(editable, editable / ".venv" / "bin" / "python")
    assert check is not None
    assert check.ok, check
    assert check.detail == "threadly imports in the sandbox"
