"""The zygote's warm interpreter must run a job exactly as a fresh `python` would.

Unit tests of its decisions (when a job needs a fresh interpreter instead), and
end-to-end checks against the real gVisor backend: a pooled (warmed-up) sandbox
reports a pytest run like a fresh one, and falls back when it could not.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from sandbox.bundle import INSIDE_DIR
from sandbox.contract import ExecRequest, Limits
from sandbox.docker.backend import DockerSandbox
from sandbox.gvisor import GvisorSandbox


def _load_zygote() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fixloop_zygote", INSIDE_DIR / "zygote.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


zygote = _load_zygote()
BASE_ENV = {"PATH": "/usr/bin", "HOME": "/fixloop/work", "PYTHONHASHSEED": "0"}


@pytest.fixture
def warmed() -> Iterator[Any]:
    """The zygote's record of a warm-up that imported `queue` and read TEXTUAL_DEBUG."""
    warm = zygote.Warm
    saved = dict(vars(warm))
    warm.ok = True
    warm.env = dict(BASE_ENV)
    warm.env_read = frozenset({"TEXTUAL_DEBUG", "PYTEST_ADDOPTS"})
    warm.modules = frozenset({"queue", "textual"})
    try:
        yield warm
    finally:
        for name in ("ok", "env", "env_read", "modules"):
            setattr(warm, name, saved[name])


def test_workspace_module_named_like_a_warm_module_shadows_it(tmp_path: Path) -> None:
    (tmp_path / "queue.py").write_text("")
    assert zygote.shadows(str(tmp_path), [], frozenset({"queue"}))


def test_package_in_a_tests_dir_without_init_shadows(tmp_path: Path) -> None:
    (tmp_path / "tests" / "textual").mkdir(parents=True)
    (tmp_path / "tests" / "textual" / "__init__.py").write_text("")
    assert zygote.shadows(str(tmp_path), [], frozenset({"textual"}))


def test_module_inside_a_package_does_not_shadow(tmp_path: Path) -> None:
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__init__.py").write_text("")
    (tmp_path / "app" / "queue.py").write_text("")
    assert not zygote.shadows(str(tmp_path), [], frozenset({"queue"}))


def test_bytecode_cache_does_not_shadow(tmp_path: Path) -> None:
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / "queue.cpython-311.pyc").write_bytes(b"")
    assert not zygote.shadows(str(tmp_path), [], frozenset({"queue"}))


def test_pythonpath_entry_can_shadow(tmp_path: Path) -> None:
    extra = tmp_path / "vendor"
    extra.mkdir()
    (extra / "queue.py").write_text("")
    workdir = tmp_path / "work"
    workdir.mkdir()
    assert zygote.shadows(str(workdir), [str(extra)], frozenset({"queue"}))


def test_job_with_the_warm_up_environment_stays_warm(warmed: Any, tmp_path: Path) -> None:
    assert zygote.warm_fits(dict(BASE_ENV), str(tmp_path))


def test_new_variable_nobody_read_stays_warm(warmed: Any, tmp_path: Path) -> None:
    env = {**BASE_ENV, "FIXLOOP_PYTEST_REPORT": "/tmp/r.json", "PYTHONPATH": "/fixloop/plugin"}
    assert zygote.warm_fits(env, str(tmp_path))


def test_variable_the_warm_up_read_needs_a_fresh_interpreter(warmed: Any, tmp_path: Path) -> None:
    assert not zygote.warm_fits({**BASE_ENV, "TEXTUAL_DEBUG": "1"}, str(tmp_path))


def test_pytest_session_variable_stays_warm(warmed: Any, tmp_path: Path) -> None:
    assert zygote.warm_fits({**BASE_ENV, "PYTEST_ADDOPTS": "-x"}, str(tmp_path))


def test_interpreter_setting_needs_a_fresh_interpreter(warmed: Any, tmp_path: Path) -> None:
    assert not zygote.warm_fits({**BASE_ENV, "PYTHONHASHSEED": "1"}, str(tmp_path))


def test_failed_warm_up_needs_a_fresh_interpreter(warmed: Any, tmp_path: Path) -> None:
    warmed.ok = False
    assert not zygote.warm_fits(dict(BASE_ENV), str(tmp_path))


# --- against the real sandbox -----------------------------------------------------

PYTEST = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider"]
FAILING_TESTS = """
import warnings

def test_passes():
    assert [1, 2] == [1, 2]

def test_compares():
    assert {"a": 1, "b": [1, 2]} == {"a": 1, "b": [1, 3]}

def test_warns():
    warnings.warn("careful", UserWarning)

def test_hash_order():
    print(sorted({"x", "y", "z"}, key=hash))
    assert False
"""
WARM_PROBE = "import sys; print('textual' in sys.modules)"
Isolating = GvisorSandbox | DockerSandbox


def _without_timing(text: str) -> str:
    return re.sub(r" in \d+\.\d+s", " in Ns", text)


@pytest.mark.sandbox
async def test_warm_pytest_reports_like_a_fresh_interpreter(
    gvisor: GvisorSandbox, gvisor_pool: GvisorSandbox, tmp_path: Path
) -> None:
    (tmp_path / "test_mixed.py").write_text(FAILING_TESTS)
    request = ExecRequest(argv=PYTEST, workdir=tmp_path, limits=Limits(timeout_s=60))
    await gvisor_pool.warm(request)

    warm = await gvisor_pool.run(request)
    fresh = await gvisor.run(request)

    assert warm.exit_code == fresh.exit_code == 1
    assert "2 failed, 2 passed, 1 warning" in warm.stdout, warm
    assert _without_timing(warm.stdout) == _without_timing(fresh.stdout)
    assert warm.stderr == fresh.stderr


@pytest.mark.sandbox
async def test_pooled_python_job_runs_warm(isolating_pool: Isolating, tmp_path: Path) -> None:
    # On both backends: the docker one once lost the warm start to the variables an
    # engine adds to a container's environment.
    request = ExecRequest(argv=["python", "-c", WARM_PROBE], workdir=tmp_path)
    await isolating_pool.warm(request)

    result = await isolating_pool.run(request)

    assert result.stdout.strip() == "True", result


@pytest.mark.sandbox
async def test_workspace_shadowing_a_warm_module_gets_a_fresh_interpreter(
    isolating_pool: Isolating, tmp_path: Path
) -> None:
    (tmp_path / "queue.py").write_text("SHADOW = True\n")
    request = ExecRequest(
        argv=["python", "-c", WARM_PROBE + "; import queue; print(queue.SHADOW)"],
        workdir=tmp_path,
    )
    await isolating_pool.warm(request)

    result = await isolating_pool.run(request)

    assert result.stdout.split() == ["False", "True"], result


def test_changes_come_back_from_a_zygote_that_is_not_pid_1(tmp_path: Path) -> None:
    """The docker backend's zygote runs under its init script, not as pid 1: it ends the
    job's session (a child left running included) and still sends the frame last."""
    import json
    import subprocess
    import sys
    import time

    from sandbox.changes_frame import StdoutWithChanges, read_changes

    work = tmp_path / "work"
    work.mkdir()
    (work / "kept.txt").write_text("kept\n")
    (work / "changed.txt").write_text("before\n")
    job = (
        "import subprocess, sys\n"
        "subprocess.Popen([sys.executable, '-c', "
        '\'import time; time.sleep(5); open("late.txt", "w").write("late")\'])\n'
        "open('changed.txt', 'w').write('after\\n')\n"
        "print('job says hi')\n"
        "raise SystemExit(7)\n"
    )
    header = {
        "argv": [sys.executable, "-c", job],
        "env": {"PATH": "/usr/bin:/bin", "PYTHONUNBUFFERED": "1"},
        "cwd": str(work),
        "has_files": False,
        "return_changes": True,
        "excludes": [".git"],
        "changes_bytes": 1 << 20,
    }
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-s", str(INSIDE_DIR / "zygote.py"), "--no-preload"],
        input=json.dumps(header).encode() + b"\n",
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert time.monotonic() - started < 5
    assert done.returncode == 7, done.stderr
    stdout = StdoutWithChanges(cap=1 << 16, frame_cap=1 << 20)
    stdout.feed(done.stdout)
    changes, truncated = read_changes(stdout.take_frame(), [".git"])
    assert stdout.text() == zygote.READY.decode() + "job says hi\n"
    assert changes is not None
    assert [(c.path, c.content) for c in changes] == [("changed.txt", b"after\n")]
    assert not truncated
    time.sleep(5.5)
    assert not (work / "late.txt").exists()  # the child left running was ended
