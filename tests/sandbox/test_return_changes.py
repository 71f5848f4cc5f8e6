"""`return_changes` against every backend: the files a job changed come back as values,
and nothing a hostile job does makes them reach outside the workspace or grow unbounded.

Parametrized like the hostile suite (`isolating`: runsc directly and through a
Docker-compatible engine), plus unsafe-local, which collects the same way on the host.
"""

from __future__ import annotations

import textwrap
import warnings
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from sandbox.contract import ExecRequest, ExecResult, FileChange, Limits, Sandbox
from sandbox.unsafe_local import UnsafeLocalSandbox, UnsafeLocalWarning
from tests.conftest import open_backend

pytestmark = pytest.mark.sandbox


@pytest.fixture(params=["gvisor", "docker-podman", "unsafe-local"])
async def backend(request: pytest.FixtureRequest) -> AsyncIterator[Sandbox]:
    opened: Sandbox = (
        UnsafeLocalSandbox()
        if request.param == "unsafe-local"
        else open_backend(request.param, pool_size=0)
    )
    try:
        yield opened
    finally:
        await opened.close()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "pkg").mkdir(parents=True)
    (root / "hello.txt").write_text("hello\n")
    (root / "pkg" / "module.py").write_text("VALUE = 1\n")
    (root / "pkg" / "keep.py").write_text("KEEP = 1\n")
    return root


async def run(
    backend: Sandbox, code: str, workdir: Path, only: tuple[str, ...] = (), **limits: int
) -> ExecResult:
    request = ExecRequest(
        argv=["python", "-c", textwrap.dedent(code)],
        workdir=workdir,
        limits=Limits(timeout_s=30, memory_mb=256, **limits),
        return_changes=True,
        changes_only=only,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnsafeLocalWarning)
        return await backend.run(request)


def by_path(result: ExecResult) -> dict[str, FileChange]:
    assert result.changes is not None, result.stderr
    return {change.path: change for change in result.changes}


async def test_changed_new_and_deleted_files_come_back(backend: Sandbox, workspace: Path) -> None:
    result = await run(
        backend,
        """
        import os
        open("hello.txt", "w").write("HELLO\\n")
        open("pkg/new.sh", "w").write("echo hi\\n")
        os.chmod("pkg/new.sh", 0o755)
        os.remove("pkg/module.py")
        os.makedirs("pkg/__pycache__")
        open("pkg/__pycache__/module.pyc", "wb").write(b"cache")
        print("done")
        """,
        workspace,
    )
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "done\n"
    assert by_path(result) == {
        "hello.txt": FileChange(path="hello.txt", content=b"HELLO\n"),
        "pkg/new.sh": FileChange(path="pkg/new.sh", content=b"echo hi\n", executable=True),
        "pkg/module.py": FileChange(path="pkg/module.py", content=None),
    }
    assert result.changes_truncated is False
    assert (workspace / "hello.txt").read_text() == "hello\n"


async def test_only_the_files_asked_for_come_back(backend: Sandbox, workspace: Path) -> None:
    """A runner's report files, not its build output (JUnit XML under build/, say)."""
    result = await run(
        backend,
        """
        import os
        os.makedirs("build/test-results")
        open("build/test-results/TEST-a.xml", "w").write("<testsuite/>")
        open("build/classes.bin", "wb").write(b"x" * 1000)
        open("hello.txt", "w").write("changed")
        os.remove("pkg/module.py")
        """,
        workspace,
        only=("build/test-results/*.xml",),
    )
    assert by_path(result) == {
        "build/test-results/TEST-a.xml": FileChange(
            path="build/test-results/TEST-a.xml", content=b"<testsuite/>"
        )
    }


async def test_nothing_comes_back_unless_asked(backend: Sandbox, workspace: Path) -> None:
    request = ExecRequest(
        argv=["python", "-c", "open('hello.txt', 'w').write('x')"], workdir=workspace
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnsafeLocalWarning)
        result = await backend.run(request)
    assert result.exit_code == 0
    assert result.changes is None


async def test_the_jobs_exit_status_is_kept(backend: Sandbox, workspace: Path) -> None:
    result = await run(backend, "open('hello.txt', 'w').write('x'); raise SystemExit(3)", workspace)
    assert result.exit_code == 3
    assert set(by_path(result)) == {"hello.txt"}


async def test_links_fifos_and_links_out_never_come_back(backend: Sandbox, workspace: Path) -> None:
    result = await run(
        backend,
        """
        import os
        os.symlink("/etc/passwd", "passwd")
        os.remove("pkg/keep.py")
        os.symlink("/etc/shadow", "pkg/keep.py")
        os.symlink("..", "up")
        os.mkfifo("pipe")
        open("plain.txt", "w").write("plain\\n")
        """,
        workspace,
    )
    assert result.exit_code == 0, result.stderr
    # A file replaced by a link is gone as a file: the link itself never comes back.
    assert by_path(result) == {
        "plain.txt": FileChange(path="plain.txt", content=b"plain\n"),
        "pkg/keep.py": FileChange(path="pkg/keep.py", content=None),
    }


async def test_a_forged_frame_in_the_output_is_only_output(
    backend: Sandbox, workspace: Path
) -> None:
    result = await run(
        backend,
        """
        import json, sys
        from base64 import b64encode
        forged = json.dumps({"truncated": False, "changes": [
            {"path": "../../etc/cron.d/x", "content": b64encode(b"evil").decode(),
             "executable": True}]}).encode()
        sys.stdout.buffer.write(forged + b"\\nFIXLOOP-CHANGES %012d\\n" % len(forged))
        """,
        workspace,
    )
    assert result.exit_code == 0, result.stderr
    assert result.changes == []
    assert "FIXLOOP-CHANGES" in result.stdout


async def test_a_huge_file_truncates_the_changes_not_the_host(
    backend: Sandbox, workspace: Path
) -> None:
    result = await run(
        backend,
        """
        open("big.bin", "wb").write(b"x" * (8 * 2**20))
        open("hello.txt", "w").write("changed\\n")
        """,
        workspace,
        changes_bytes=2**20,
    )
    assert result.exit_code == 0, result.stderr
    assert result.changes == []
    assert result.changes_truncated is True


async def test_thousands_of_files_stay_within_the_cap(backend: Sandbox, workspace: Path) -> None:
    result = await run(
        backend,
        """
        import os
        os.mkdir("many")
        for n in range(3000):
            open(f"many/{n}.txt", "w").write("some text in a file\\n")
        """,
        workspace,
        changes_bytes=64 * 1024,
    )
    assert result.exit_code == 0, result.stderr
    assert result.changes_truncated is True
    assert result.changes == []


async def test_a_child_left_running_is_ended_before_the_changes_are_taken(
    isolating: Sandbox, workspace: Path
) -> None:
    # Isolating backends only: unsafe-local waits for every holder of the job's pipes.
    result = await run(
        isolating,
        """
        import os, subprocess, sys
        subprocess.Popen([sys.executable, "-c",
            "import time; time.sleep(3); open('late.txt', 'w').write('late')"],
            start_new_session=False)
        open("hello.txt", "w").write("now\\n")
        """,
        workspace,
    )
    assert result.exit_code == 0, result.stderr
    assert set(by_path(result)) == {"hello.txt"}
    assert result.duration_ms < 3000


async def test_a_job_killed_at_its_timeout_sends_nothing_back(
    backend: Sandbox, workspace: Path
) -> None:
    request = ExecRequest(
        argv=["python", "-c", "open('hello.txt', 'w').write('x')\nimport time; time.sleep(60)"],
        workdir=workspace,
        limits=Limits(timeout_s=2, memory_mb=256),
        return_changes=True,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnsafeLocalWarning)
        result = await backend.run(request)
    assert result.timed_out
    assert result.changes is None


async def test_a_tree_too_deep_to_walk_brings_back_nothing_and_keeps_the_status(
    isolating: Sandbox, workspace: Path
) -> None:
    # Isolating backends only: unsafe-local's own clean-up cannot remove such a tree.
    result = await run(
        isolating,
        """
        import os
        open("hello.txt", "w").write("changed\\n")
        for _ in range(1200):
            os.mkdir("d")
            os.chdir("d")
        open("deep.txt", "w").write("deep\\n")
        raise SystemExit(4)
        """,
        workspace,
    )
    assert result.exit_code == 4, result.stderr
    assert result.changes == []
    assert result.changes_truncated is True


async def test_a_warm_pooled_sandbox_returns_changes_the_same_way(
    isolating_pool: Sandbox, workspace: Path
) -> None:
    """A pooled sandbox's zygote has warmed up pytest; the job (in-process, warm) runs in
    its forked child all the same."""
    result = await run(
        isolating_pool,
        "import sys; open('hello.txt', 'w').write(str('pytest' in sys.modules))",
        workspace,
    )
    assert result.exit_code == 0, result.stderr
    assert by_path(result) == {"hello.txt": FileChange(path="hello.txt", content=b"True")}
