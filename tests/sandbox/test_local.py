"""unsafe-local: no isolation, but a clean environment, limits and a loud warning."""

import time
from pathlib import Path

import pytest

from sandbox import ExecRequest, ExecResult, Limits
from sandbox.unsafe_local import UnsafeLocalSandbox, UnsafeLocalWarning


async def run(argv: list[str], workdir: Path | None = None, **limits: float) -> ExecResult:
    with pytest.warns(UnsafeLocalWarning):
        return await UnsafeLocalSandbox().run(
            ExecRequest(argv=argv, workdir=workdir, limits=Limits(**limits))
        )


async def test_every_use_warns() -> None:
    backend = UnsafeLocalSandbox()
    for _ in range(2):
        with pytest.warns(UnsafeLocalWarning, match="no file, network or process isolation"):
            await backend.run(ExecRequest(argv=["true"]))


async def test_host_environment_does_not_leak(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-canary-local")
    result = await run(["python", "-c", "import os; print(sorted(os.environ))"])
    assert "OPENAI_API_KEY" not in result.stdout
    assert result.exit_code == 0


async def test_runs_on_a_copy_of_the_workdir(tmp_path: Path) -> None:
    (tmp_path / "data.txt").write_text("original")
    result = await run(
        ["python", "-c", "open('data.txt','w').write('changed'); print(open('data.txt').read())"],
        workdir=tmp_path,
    )
    assert result.stdout == "changed\n"
    assert (tmp_path / "data.txt").read_text() == "original"


async def test_timeout_kills_the_command_and_its_children() -> None:
    started = time.monotonic()
    result = await run(["sh", "-c", "sleep 60 & sleep 60"], timeout_s=1)
    assert result.timed_out
    assert result.exit_code == 124
    assert time.monotonic() - started < 5


async def test_unknown_command_is_127() -> None:
    result = await run(["no-such-command-fixloop"])
    assert result.exit_code == 127
    assert "command not found" in result.stderr
