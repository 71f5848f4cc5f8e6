"""Per-test limits that learn from the project's passing runs: `fixloop-tui verify` as a person
runs it (a real process, the real sandbox, a real git project in tmp_path, the person's cache
in tmp_path), and the pure rules of what is remembered."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import git
import pytest

from engine.verify.learned_times import LearnedTimes, merged, passing_times, times_path
from engine.verify.results import StageKind, StageResult, TestCase, TestCounts, TestReport
from tests.engine.test_model_code import committed
from tests.model_server import ScriptedModelServer
from tests.projects import REPO

SLOW = "tests/test_slow.py::test_slow_but_fine"
SLOW_TEST = "import time\n\n\ndef test_slow_but_fine():\n    time.sleep(2.5)\n"
KEY = "sk-fixloop-canary-2f0c5d1e-learned-times"
HANGS = "def test_hangs():\n    while True:\n        pass\n"


def verify(root: Path, cache: Path, *flags: str) -> tuple[int, dict[str, object], str]:
    """`fixloop-tui verify ROOT --json FLAGS` with the person's cache at `cache`."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tui.cli",
            "verify",
            str(root),
            "--json",
            "--sandbox",
            "gvisor",
            *flags,
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
        check=False,
        env=os.environ | {"XDG_CACHE_HOME": str(cache)},
    )
    return done.returncode, json.loads(done.stdout or "{}"), done.stderr


def timed_out(result: dict[str, object]) -> list[str]:
    packet = result.get("packet")
    assert isinstance(packet, dict), result
    return [f["test"] for f in packet["failures"] if f["kind"] == "timeout"]


@pytest.fixture
def slow_project(tmp_path: Path) -> Path:
    return committed(tmp_path / "project", {"tests/test_slow.py": SLOW_TEST})


@pytest.mark.usefixtures("needs_gvisor")
def test_one_verify_without_a_limit_teaches_the_next_ones_the_slow_tests_time(
    slow_project: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    code, first, _ = verify(slow_project, cache, "--test-timeout", "1")
    assert (code, first["status"], timed_out(first)) == (1, "failing", [SLOW])
    code, taught, err = verify(slow_project, cache, "--test-timeout", "0")
    assert (code, taught["status"]) == (0, "ok"), err
    code, later, err = verify(slow_project, cache, "--test-timeout", "1")
    assert (code, later["status"]) == (0, "ok"), (later, err)


@pytest.mark.usefixtures("needs_gvisor")
def test_the_times_are_kept_in_the_persons_cache_not_in_the_project(
    slow_project: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    code, _, err = verify(slow_project, cache, "--test-timeout", "0")
    assert code == 0, err
    kept = times_path(slow_project, {"XDG_CACHE_HOME": str(cache)})
    assert kept is not None
    assert kept.parent == cache / "fixloop" / "test-times"
    times = json.loads(kept.read_text())["backends"]["gvisor"]["times"]
    assert 2.5 <= times[SLOW] < 30
    assert git.Repo(slow_project).git.status("--porcelain", "--ignored") == ""


@pytest.mark.usefixtures("needs_gvisor")
def test_a_remembered_slow_test_is_not_shortened_after_another_test_hangs(
    slow_project: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    assert verify(slow_project, cache, "--test-timeout", "0")[0] == 0
    # The hang runs first and times out: later limits drop to a fifth (1 s), but not below
    # what the slow test is remembered to need.
    (slow_project / "tests" / "test_a_hangs.py").write_text(HANGS)
    code, result, _ = verify(slow_project, cache, "--test-timeout", "3")
    assert code == 1
    assert timed_out(result) == ["tests/test_a_hangs.py::test_hangs"]


@pytest.mark.usefixtures("needs_gvisor")
def test_a_runs_baseline_gives_a_slow_test_its_remembered_time(
    slow_project: Path, tmp_path: Path, model_server: ScriptedModelServer
) -> None:
    cache = tmp_path / "cache"
    assert verify(slow_project, cache, "--test-timeout", "0")[0] == 0
    # Green at the baseline with the tiny limit: the run ends before any model call.
    done = subprocess.run(
        [
            sys.executable, "-m", "tui.cli", str(slow_project), "--headless", "--json",
            "--sandbox", "gvisor", "--test-timeout", "1",
            "--model", "openai/scripted", "--api-base", model_server.base_url,
        ],
        capture_output=True, text=True, cwd=REPO, timeout=300, check=False,
        env=os.environ | {"XDG_CACHE_HOME": str(cache), "OPENAI_API_KEY": KEY},
    )  # fmt: skip
    result = json.loads(done.stdout or "{}")
    assert result.get("status") == "ok", done.stdout + done.stderr
    assert model_server.count == 0


def test_the_cache_inside_the_project_is_not_used(tmp_path: Path) -> None:
    root = committed(tmp_path / "project", {"tests/test_slow.py": SLOW_TEST})
    assert times_path(root, {"XDG_CACHE_HOME": str(root / ".cache")}) is None
    outside = times_path(root, {"XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert outside is not None
    assert root not in outside.parents


def stage(report: TestReport, duration_ms: int = 60_000) -> StageResult:
    return StageResult(
        name="tests", kind=StageKind.TESTS, cmd="pytest", exit_code=0, duration_ms=duration_ms,
        report=report,
    )  # fmt: skip


def test_a_failing_tests_time_is_not_remembered() -> None:
    report = TestReport(
        counts=TestCounts(collected=2, passed=1, failed=1),
        nodeids=["t::ok", "t::bad"],
        tests=[TestCase(nodeid="t::bad", outcome="failed", when="call")],
        durations={"t::ok": 3.0, "t::bad": 9.0},
    )
    assert passing_times([stage(report)]) == {"t::ok": 3.0}


def test_a_time_is_never_longer_than_the_stage_the_host_timed() -> None:
    report = TestReport(
        counts=TestCounts(collected=1, passed=1), nodeids=["t::a"], durations={"t::a": 1e6}
    )
    assert passing_times([stage(report, duration_ms=4_000)]) == {"t::a": 4.0}


def test_tests_collected_but_never_run_are_not_taken_as_quick_passes() -> None:
    # `-x` stopped the session after the failure: t::later was collected, never run.
    report = TestReport(
        counts=TestCounts(collected=3, passed=1, failed=1),
        nodeids=["t::slow", "t::bad", "t::later"],
        tests=[TestCase(nodeid="t::bad", outcome="failed", when="call")],
        durations={"t::slow": 2.0},
    )
    assert passing_times([stage(report)]) == {"t::slow": 2.0}


def test_one_quick_pass_halves_a_remembered_time_and_a_slower_one_replaces_it() -> None:
    old = {"t::a": 100.0, "t::b": 10.0, "t::gone": 0.8, "t::unseen": 5.0}
    new = merged(old, {"t::a": 0.0, "t::b": 30.0, "t::gone": 0.1})
    assert new == {"t::a": 50.0, "t::b": 30.0, "t::unseen": 5.0}


def test_a_times_file_others_may_write_is_not_read(tmp_path: Path) -> None:
    root = committed(tmp_path / "project", {"tests/test_slow.py": SLOW_TEST})
    environ = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    kept = times_path(root, environ)
    assert kept is not None
    kept.parent.mkdir(parents=True)
    times = {"sandbox": "gvisor", "times": {SLOW: 3600.0}}
    kept.write_text(json.dumps({"backends": {"gvisor": times}}))
    kept.chmod(0o600)
    assert LearnedTimes(root, "gvisor", environ).remembered() == {SLOW: 3600.0}
    kept.chmod(0o666)
    assert LearnedTimes(root, "gvisor", environ).remembered() == {}
