"""`fixloop-tui verify` as a user runs it: a real process, real sandbox, real exit codes."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import git
import pytest

from tests.projects import PROJECTS, REPO, committed_copy


def verify(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui.cli", "verify", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
        check=False,
        env=None if env is None else os.environ | env,
    )


@pytest.mark.usefixtures("needs_gvisor")
def test_failing_example_prints_one_json_object_and_exits_1(tmp_path: Path) -> None:
    root = committed_copy(REPO / "examples" / "textstats", tmp_path)
    done = verify(str(root), "--json")
    assert done.returncode == 1, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "failing"
    assert result["tests"] == {
        "collected": 5,
        "passed": 3,
        "failed": 2,
        "errors": 0,
        "skipped": 0,
        "xfailed": 0,
    }
    assert result["error_class"] == "logic"
    assert len(result["signature"]) == 16
    assert [s["name"] for s in result["stages"]] == ["tests"]
    assert {"exit_code", "duration_ms", "timed_out", "oom_killed", "cmd"} <= set(
        result["stages"][0]
    )
    assert 0 < result["packet_tokens"] <= 2000
    assert "tests/test_core.py::" in result["packet_text"]
    assert result["packet"]["failures"][0]["expected"] == "2.5"


@pytest.mark.usefixtures("needs_gvisor")
def test_passing_project_exits_0(tmp_path: Path) -> None:
    done = verify(str(committed_copy(PROJECTS / "passing", tmp_path)))
    assert done.returncode == 0, done.stdout + done.stderr
    assert ": OK" in done.stdout.splitlines()[0]


@pytest.mark.usefixtures("needs_gvisor")
def test_each_stage_says_its_time_as_the_app_does(tmp_path: Path) -> None:
    done = verify(str(committed_copy(PROJECTS / "passing", tmp_path)))
    [stage] = [line for line in done.stdout.splitlines() if line.startswith("  tests ")]
    assert re.fullmatch(r"  tests\s+ok\s+\d+\.\ds  \S.*", stage), stage


@pytest.mark.usefixtures("needs_gvisor")
def test_a_missing_third_party_module_exits_3_with_the_fix(tmp_path: Path) -> None:
    done = verify(str(committed_copy(PROJECTS / "missing_module", tmp_path)), "--json")
    assert done.returncode == 3, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "env_failure"
    assert "yaml_fixloop_missing" in result["env_cause"]
    assert result["packet"] is None  # never a packet for the model about the environment


@pytest.mark.usefixtures("needs_gvisor")
def test_the_projects_own_package_not_importing_exits_3_naming_the_install(
    tmp_path: Path,
) -> None:
    root = committed_copy(PROJECTS / "src_not_installed", tmp_path)
    done = verify(str(root), "--json")
    assert done.returncode == 3, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "env_failure"
    assert result["env_cause"].startswith(
        "the project's own package 'tallies' does not import in the sandbox: it is not "
        "installed in "
    )
    assert f"-m pip install -e {root}`" in result["env_cause"]
    assert result["packet"] is None


@pytest.mark.usefixtures("needs_gvisor")
def test_an_edited_test_file_exits_4(tmp_path: Path) -> None:
    root = committed_copy(PROJECTS / "test_pinning", tmp_path)
    tests = root / "tests" / "test_slugs.py"
    tests.write_text(tests.read_text().replace('== "hello-world"', '!= ""'))
    done = verify(str(root))
    assert done.returncode == 4, done.stdout + done.stderr
    assert "tests/test_slugs.py was modified since the baseline" in done.stdout


@pytest.mark.usefixtures("needs_gvisor")
def test_lint_and_type_stages_run_cheapest_first(tmp_path: Path) -> None:
    root = committed_copy(PROJECTS / "lint_findings", tmp_path)
    done = verify(str(root), "--json", "--lint-cmd", "ruff check .", "--type-cmd", "mypy .")
    result = json.loads(done.stdout)
    assert [s["name"] for s in result["stages"]] == ["lint", "types", "tests"]
    assert "F401" in result["packet_text"]


def test_the_projects_own_sandbox_setting_is_refused_until_trusted(tmp_path: Path) -> None:
    source = tmp_path / "source" / "passing"
    shutil.copytree(PROJECTS / "passing", source)
    with (source / "pyproject.toml").open("a") as pyproject:
        pyproject.write('\n[tool.fixloop]\nsandbox = "unsafe-local"\n')
    root = committed_copy(source, tmp_path)
    refused = verify(str(root))
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "sets sandbox" in refused.stderr
    assert f"fixloop-tui trust {root}" in refused.stderr
    assert "unsafe-local runs the stages unsandboxed" not in refused.stderr
    trusted = subprocess.run(
        [sys.executable, "-m", "tui.cli", "trust", str(root)],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=True,
    )
    assert 'sandbox = "unsafe-local"' in trusted.stdout
    done = verify(str(root))
    assert "unsafe-local runs the stages unsandboxed" in done.stderr
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_bad_setting_in_the_environment_is_a_usage_error(tmp_path: Path) -> None:
    done = verify(str(tmp_path), env={"FIXLOOP_EXEC_TIMEOUT": "-1"})
    assert done.returncode == 2
    assert "bad value for 'exec_timeout' in the environment" in done.stderr


def test_a_missing_directory_is_a_one_line_usage_error(tmp_path: Path) -> None:
    done = verify(str(tmp_path / "nope"))
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0
    assert "is not a directory" in done.stderr


def test_a_broken_pyproject_is_a_one_line_usage_error(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.fixloop\n")
    done = verify(str(tmp_path))
    assert done.returncode == 2
    assert "not valid TOML" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.usefixtures("needs_gvisor")
def test_a_test_stopped_by_its_limit_is_told_how_to_give_it_time(tmp_path: Path) -> None:
    """`verify` has no earlier times: a test that is only slow in the sandbox is stopped at
    the per-test limit, and the person is told how to tell slow from hung, and that one
    verification without the limit teaches fixloop its time (and where that is kept)."""
    root = tmp_path / "slow"
    root.mkdir()
    (root / "test_slow.py").write_text(
        "import time\n\n\ndef test_slow():\n    time.sleep(4)\n\n\ndef test_quick():\n    pass\n"
    )
    repo = git.Repo.init(root)
    repo.index.add(["test_slow.py"])
    repo.index.commit("a slow test")

    cache = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    stopped = verify(str(root), "--test-timeout", "1", env=cache)
    assert stopped.returncode == 1, stopped.stdout + stopped.stderr
    assert "hint: 1 test was stopped by the per-test limit" in stopped.stdout
    assert "--test-timeout 0` once" in stopped.stdout
    assert f"remembers their times (in {tmp_path / 'cache' / 'fixloop' / 'test-times'}/" in (
        stopped.stdout
    )

    given_time = verify(str(root), "--test-timeout", "0", env=cache)
    assert given_time.returncode == 0, given_time.stdout + given_time.stderr
    assert "hint:" not in given_time.stdout
