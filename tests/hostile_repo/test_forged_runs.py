"""A repository that commits its own `.fixloop/runs/<run>/`, a run that "ended ok" on a branch of
the repository's making: `fixloop-tui accept`, `keep` and `discard` never carry it out. Only a
run whose `run.json` fixloop sealed for this user is finished from the shell, and a finish lock
the repository planted as a link is refused, its target never created."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import git
import pytest

from engine.project.paths import run_path
from engine.project.settings import Settings
from engine.run.events import RunFinished, RunStarted
from engine.run.outcome import RunConfig
from engine.run.run_directory import RunRecord

REPO = Path(__file__).parents[2]
RUN = "20990101-000000-f00d"
HOSTILE = "import os\nos.system('echo owned > /tmp/owned')\n"
IDENTITY = {
    "GIT_AUTHOR_NAME": "Repo",
    "GIT_AUTHOR_EMAIL": "repo@example.invalid",
    "GIT_COMMITTER_NAME": "Repo",
    "GIT_COMMITTER_EMAIL": "repo@example.invalid",
}


def fixloop(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "PYTHONPATH": str(REPO),
    }
    return subprocess.run(
        [sys.executable, "-m", "tui.cli", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=120,
        check=False,
    )


@pytest.fixture
def forged(tmp_path: Path) -> Path:
    """A repository on main, a branch fixloop/<RUN> that plants code, and a committed run
    directory saying that run ended ok on it, undecided."""
    root = tmp_path / "repo"
    repo = git.Repo.init(root, initial_branch="main")
    (root / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    repo.git.add(A=True)
    repo.git.commit("-q", "-m", "calc", env=IDENTITY)
    base = repo.head.commit.hexsha
    repo.git.checkout("-q", "-b", f"fixloop/{RUN}")
    (root / "calc.py").write_text(HOSTILE)
    repo.git.commit("-q", "-am", "fixloop[iter 1/4]: a fix", env=IDENTITY)
    repo.git.checkout("-q", "main")
    record = RunRecord(
        project=str(root),
        run_id=RUN,
        branch=f"fixloop/{RUN}",
        start_head=base,
        user_branch="main",
        baseline=base,
        config=RunConfig(task="Fix it.", model="openai/x"),
        settings=Settings(),
        python=Path("/usr/bin/python3"),
        versions={},
        argv=[],
    )
    run = run_path(root, RUN)
    run.mkdir(parents=True)
    (run / "run.json").write_text(record.model_dump_json())
    started = RunStarted(
        run_id=RUN, task="Fix it.", project=str(root), model="x", sandbox="gvisor", max_iterations=4
    )
    finished = RunFinished(run_id=RUN, status="ok", iterations=1, branch=f"fixloop/{RUN}")
    (run / "events.jsonl").write_text(started.model_dump_json() + "\n" + finished.model_dump_json())
    repo.git.add("-f", ".fixloop")
    repo.git.commit("-q", "-m", "a run", env=IDENTITY)
    return root


def test_an_unsealed_run_is_neither_the_newest_undecided_nor_accepted_by_id(
    forged: Path, tmp_path: Path
) -> None:
    head = git.Repo(forged).head.commit.hexsha
    by_default = fixloop(tmp_path / "home", "accept", str(forged))
    assert by_default.returncode == 2
    assert "waits for a decision" in by_default.stderr
    named = fixloop(tmp_path / "home", "accept", RUN, str(forged))
    assert named.returncode == 1
    assert named.stderr.strip().endswith(
        "was not written by fixloop for you (its seal does not match): resume does not obey it; "
        "start a new run instead"
    )
    assert git.Repo(forged).head.commit.hexsha == head
    assert (forged / "calc.py").read_text() != HOSTILE
    assert not (run_path(forged, RUN) / "finish.json").exists()


def test_a_finish_lock_planted_as_a_link_is_refused_and_its_target_never_made(
    forged: Path, tmp_path: Path
) -> None:
    target = tmp_path / "made-by-fixloop"
    (run_path(forged, RUN) / "finish.lock").symlink_to(target)
    done = fixloop(tmp_path / "home", "discard", RUN, str(forged))
    assert done.returncode == 2
    assert "is not a file fixloop made" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not target.exists()
    assert f"fixloop/{RUN}" in [head.name for head in git.Repo(forged).heads]


def test_the_report_of_an_unsealed_run_is_refused_before_git_is_given_its_revisions(
    forged: Path, tmp_path: Path
) -> None:
    done = fixloop(tmp_path / "home", "report", RUN, str(forged))
    assert done.returncode == 2
    assert done.stderr.startswith(f"fixloop-tui: error: {run_path(forged, RUN) / 'run.json'} was")
    assert done.stdout == ""


def test_a_run_record_linked_to_an_endless_file_is_refused_at_once(
    forged: Path, tmp_path: Path
) -> None:
    record = run_path(forged, RUN) / "run.json"
    record.unlink()
    record.symlink_to("/dev/zero")
    done = fixloop(tmp_path / "home", "accept", RUN, str(forged))
    assert done.returncode == 1
    assert "not a run fixloop wrote" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert (forged / "calc.py").read_text() != HOSTILE
