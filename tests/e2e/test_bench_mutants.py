"""`fixloop-tui bench --suite mutants --repo PATH` on a project the bench has never seen: a src
layout installed editable into its own `.venv`, a few tests, committed; the real CLI, the
scripted model server over HTTP, the real gVisor sandbox. The person's checkout is only ever
read: every file of it, `.git` and `.venv` included, is byte-identical after."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import git
import pytest

from tests.model_server import ScriptedModelServer, reply
from tests.projects import answer, readable

pytestmark = [pytest.mark.sandbox, pytest.mark.usefixtures("needs_gvisor")]

REPO = Path(__file__).resolve().parents[2]
KEY = "sk-fixloop-canary-5b0c1a52-bench-mutants"
MODULE = "src/minicalc/__init__.py"
SOURCE = '''"""Small helpers whose suite sees most changes."""


def clamp(value, low, high):
    if value < low:
        return low
    if value > high:
        return high
    return value


def mean(values):
    if not values:
        raise ValueError("mean of nothing")
    return sum(values) / len(values)


def running_total(values):
    totals = []
    total = 0
    for value in values:
        total += value
        totals.append(total)
    return totals
'''
SUITE = """import pytest

from minicalc import clamp, mean, running_total


def test_clamp_inside():
    assert clamp(5, 0, 10) == 5


def test_clamp_low():
    assert clamp(-3, 0, 10) == 0


def test_clamp_high():
    assert clamp(12, 0, 10) == 10


def test_clamp_at_the_edges():
    assert clamp(0, 0, 10) == 0
    assert clamp(10, 0, 10) == 10


def test_mean():
    assert mean([1, 2, 3, 6]) == 3


def test_mean_of_nothing():
    with pytest.raises(ValueError):
        mean([])


def test_running_total():
    assert running_total([1, 2, 3]) == [1, 3, 6]
"""
PYPROJECT = """[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"

[project]
name = "minicalc"
version = "0.1"

[tool.setuptools.packages.find]
where = ["src"]
"""
# The model's answer for any bug: the module as it was.
RESTORED = answer("put the module back as it was", {"path": MODULE, "content": SOURCE})


def pip(venv: Path, *args: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", *args],
        check=True,
        capture_output=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def minicalc(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project, committed, its `.venv` holding pytest and minicalc installed editable."""
    top = tmp_path_factory.mktemp("bench-mutants")
    root = top / "minicalc"
    (root / "src" / "minicalc").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "pyproject.toml").write_text(PYPROJECT)
    (root / MODULE).write_text(SOURCE)
    (root / "tests" / "test_minicalc.py").write_text(SUITE)
    (root / ".gitignore").write_text(".venv/\n*.egg-info/\n")
    readable(top)  # before the venv: chmod would follow its links to the interpreter
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / ".venv")], check=True)
    pip(root / ".venv", "-q", "pytest", "setuptools")
    pip(root / ".venv", "-q", "--no-build-isolation", "--no-deps", "-e", str(root))
    repo = git.Repo.init(root)
    repo.git.add("-A")
    repo.index.commit("minicalc")
    return root


def every_file(root: Path) -> dict[str, bytes]:
    """Every file under `root` (`.git` and `.venv` too), a link as its target, by path."""
    found: dict[str, bytes] = {}
    for directory, dirs, files in os.walk(root):
        for name in [*files, *(d for d in dirs if os.path.islink(os.path.join(directory, d)))]:
            path = Path(directory) / name
            key = str(path.relative_to(root))
            if path.is_symlink():
                found[key] = b"link:" + os.readlink(path).encode()
            else:
                found[key] = hashlib.sha256(path.read_bytes()).digest()
    return found


def bench(
    server: ScriptedModelServer, root: Path, cache: Path, *extra: str
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    done = subprocess.run(
        [
            sys.executable, "-m", "tui.cli", "bench", "--suite", "mutants", "--repo", str(root),
            "--model", "openai/scripted", "--api-base", server.base_url,
            "--sandbox", "gvisor", "--max-iters", "0", "--json", *extra,
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={
            "PATH": "/usr/bin:/bin",
            "OPENAI_API_KEY": KEY,
            "HOME": str(cache.parent),
            "XDG_CACHE_HOME": str(cache),
        },
        timeout=900,
        check=False,
    )  # fmt: skip
    assert KEY not in done.stdout + done.stderr
    return done, json.loads(done.stdout) if done.stdout.strip() else {}


def test_a_seeded_bug_in_your_project_is_fixed_and_the_fix_touched_its_function(
    model_server: ScriptedModelServer, minicalc: Path, tmp_path: Path
) -> None:
    model_server.script(reply(RESTORED))
    done, result = bench(model_server, minicalc, tmp_path / "cache", "--limit", "1")
    assert done.returncode == 0, done.stderr
    [item] = result["items"]
    assert item["task_id"] == "minicalc"
    assert item["mutant"].startswith(f"{MODULE}:")
    run = item["arms"]["defaults"]
    assert run["status"] == "ok"
    assert run["touched_bug"] is True
    assert run["round_s"]
    assert run["wall_s"] >= run["round_s"][0]
    assert result["scores"]["defaults"]["fixes_touching_bug"] == 1
    # The task named no file: the person's words only.
    prompt = json.dumps(model_server.requests[0].body["messages"])
    assert "The tests fail; fix the bug." in prompt


def test_the_mutants_bench_leaves_your_checkout_byte_identical(
    model_server: ScriptedModelServer, minicalc: Path, tmp_path: Path
) -> None:
    before = every_file(minicalc)
    assert any(name.startswith(".git/") for name in before)
    assert any(name.startswith(".venv/") for name in before)
    model_server.script(reply(RESTORED), reply(RESTORED))
    done, _ = bench(model_server, minicalc, tmp_path / "cache", "--limit", "2")
    assert done.returncode == 0, done.stderr
    assert every_file(minicalc) == before


def test_the_screening_runs_once_and_the_same_seed_gets_the_same_bugs(
    model_server: ScriptedModelServer, minicalc: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    model_server.script(*[reply(RESTORED)] * 4)
    first, screened = bench(model_server, minicalc, cache, "--limit", "2", "--seed", "3")
    assert first.returncode == 0, first.stderr
    assert "screening seeded bugs" in first.stderr
    [remembered] = list((cache / "fixloop" / "bench-mutants").iterdir())
    second, recalled = bench(model_server, minicalc, cache, "--limit", "2", "--seed", "3")
    assert second.returncode == 0, second.stderr
    assert "screening seeded bugs" not in second.stderr
    assert f"bugs from {remembered}" in second.stderr
    assert [i["item_id"] for i in recalled["items"]] == [i["item_id"] for i in screened["items"]]


def test_the_table_says_per_project_fixes_time_per_fix_and_touched(
    model_server: ScriptedModelServer, minicalc: Path, tmp_path: Path
) -> None:
    model_server.script(reply(RESTORED))
    done = subprocess.run(
        [
            sys.executable, "-m", "tui.cli", "bench", "--suite", "mutants", "--repo",
            str(minicalc), "--model", "openai/scripted", "--api-base", model_server.base_url,
            "--sandbox", "gvisor", "--max-iters", "0", "--limit", "1",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={
            "PATH": "/usr/bin:/bin",
            "OPENAI_API_KEY": KEY,
            "HOME": str(tmp_path),
            "XDG_CACHE_HOME": str(tmp_path / "cache"),
        },
        timeout=900,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    header = next(line for line in lines if line.startswith("project "))
    for column in ("bugs", "fixed", "tok/fix", "time/fix", "/round", "touched", "endings"):
        assert column in header
    row = next(line for line in lines if line.startswith("minicalc "))
    assert "100.0%" in row
    assert "1/1" in row
    assert "ok 1" in row
    assert any(line.startswith("wall time per fix") for line in lines)
