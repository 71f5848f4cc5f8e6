"""`fixloop-tui clean` as a person runs it: the real CLI process over a project whose runs were
made the way the engine makes them (a worktree on `fixloop/<run>`, a sealed `run.json`, the
trail's events, the person's choice), with every place fixloop writes on the machine (its
cache, runtime directory, temporary directory, config) pointed into tmp_path."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import git
import pytest

from engine.project.paths import run_path, worktree_path
from engine.project.settings import Settings
from engine.project.workspace import Workspace, iteration_message
from engine.run.events import RunFinished, RunStarted
from engine.run.finish import finish_run
from engine.run.outcome import RunConfig
from engine.run.run_directory import RunDirectory
from engine.run.start import run_record

REPO = Path(__file__).parents[2]
ACCEPTED = "20261101-100000-aaaa"
UNDECIDED = "20261102-100000-bbbb"
SIZE = re.compile(r"\d+(\.\d)? (B|kB|MB)")
WEEKS_AGO = time.time() - 21 * 86400


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The environment of this test and of every CLI process: HOME, config (the run records'
    sealing key), cache, data, runtime and temporary directories all in tmp_path; no git
    config from outside."""
    home = tmp_path / "home"
    (tmp_path / "tmp").mkdir()
    gitconfig = tmp_path / "gitconfig"
    gitconfig.write_text("[user]\n\tname = Test\n\temail = test@example.invalid\n")
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "FIXLOOP_RUNTIME_DIR": str(tmp_path / "runtime"),
        "TMPDIR": str(tmp_path / "tmp"),
        "GIT_CONFIG_GLOBAL": str(gitconfig),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CEILING_DIRECTORIES": str(tmp_path),
    }
    for name, value in env.items():
        if name != "PATH":
            monkeypatch.setenv(name, value)
    return env


def fixloop(env: dict[str, str], *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**env, "PYTHONPATH": str(REPO)},
        timeout=120,
        check=False,
    )


def ended_run(project: Path, run_id: str, status: str = "ok") -> None:
    """A run as the engine leaves it: one commit on its branch, a sealed record, its events."""
    workspace = Workspace.create(project, run_id)
    (workspace.root / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    workspace.commit(iteration_message(1, 4, "add adds"))
    run = RunDirectory.create(project, run_id)
    config = RunConfig(task="Fix add.", model="openai/scripted")
    run.write_record(run_record(project, Settings(), config, Path("python3"), workspace, {}))
    run.emit(
        RunStarted(
            run_id=run_id,
            task="Fix add.",
            project=str(project),
            model="openai/scripted",
            sandbox="gvisor",
            max_iterations=4,
            branch=workspace.branch,
        )
    )
    run.emit(RunFinished(status=status, iterations=1, branch=workspace.branch))
    (run.path / "iterations" / "01").mkdir(parents=True)
    (run.path / "iterations" / "01" / "prompt.txt").write_text("x" * 4000)


def age(path: Path, when: float = WEEKS_AGO) -> None:
    """Make `path` and everything under it look untouched since `when`."""
    for each in [path, *path.rglob("*")]:
        os.utime(each, (when, when), follow_symlinks=False)


@pytest.fixture
def project(tmp_path: Path, machine: dict[str, str]) -> Path:
    """A repository on main with two runs: one accepted (its branch squashed and deleted), one
    undecided (ended exhausted, its branch and worktree still there)."""
    root = tmp_path / "project"
    repo = git.Repo.init(root, initial_branch="main")
    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    repo.git.add(A=True)
    repo.git.commit("-q", "-m", "calc")
    ended_run(root, ACCEPTED)
    assert finish_run(root, ACCEPTED, "accept").done
    ended_run(root, UNDECIDED, status="exhausted")
    for run in (ACCEPTED, UNDECIDED):
        age(run_path(root, run))
    return root


def branches(project: Path) -> list[str]:
    return git.Repo(project).git.branch("--list", "--format=%(refname:short)", "fixloop/*").split()


def test_a_dry_run_lists_both_runs_with_sizes_and_removes_nothing(
    project: Path, machine: dict[str, str]
) -> None:
    done = fixloop(machine, "clean", str(project), "--runs", "--dry-run", "--include-undecided")
    assert done.returncode == 0, done.stderr
    lines = {
        run: next(line for line in done.stdout.splitlines() if run in line)
        for run in (ACCEPTED, UNDECIDED)
    }
    assert all(SIZE.search(line) for line in lines.values()), done.stdout
    assert "accepted" in lines[ACCEPTED]
    assert "undecided" in lines[UNDECIDED]
    assert "would remove 2 items" in done.stdout
    assert run_path(project, ACCEPTED).is_dir()
    assert run_path(project, UNDECIDED).is_dir()
    assert branches(project) == [f"fixloop/{UNDECIDED}"]


def test_yes_removes_the_runs_their_worktrees_and_their_branches(
    project: Path, machine: dict[str, str]
) -> None:
    done = fixloop(machine, "clean", str(project), "--runs", "--yes", "--include-undecided")
    assert done.returncode == 0, done.stderr
    assert branches(project) == []
    assert not run_path(project, ACCEPTED).exists()
    assert not run_path(project, UNDECIDED).exists()
    assert not worktree_path(project, UNDECIDED).exists()
    assert len(git.Repo(project).git.worktree("list").splitlines()) == 1


def test_an_undecided_run_is_named_and_kept_unless_asked_for(
    project: Path, machine: dict[str, str]
) -> None:
    done = fixloop(machine, "clean", str(project), "--runs", "--yes")
    assert done.returncode == 0, done.stderr
    assert not run_path(project, ACCEPTED).exists()
    assert run_path(project, UNDECIDED).is_dir()
    assert branches(project) == [f"fixloop/{UNDECIDED}"]
    [kept] = [line for line in done.stdout.splitlines() if UNDECIDED in line]
    assert "--include-undecided" in kept


def test_it_asks_first_and_a_no_removes_nothing(project: Path, machine: dict[str, str]) -> None:
    done = fixloop(machine, "clean", str(project), "--runs", stdin="n\n")
    assert "remove 1 item (" in done.stdout
    assert "nothing removed" in done.stdout
    assert run_path(project, ACCEPTED).is_dir()


def test_a_run_that_may_still_be_running_is_never_removed(
    project: Path, machine: dict[str, str]
) -> None:
    live = "20261103-100000-cccc"
    workspace = Workspace.create(project, live)
    run = RunDirectory.create(project, live)
    config = RunConfig(task="Fix add.", model="openai/scripted")
    run.write_record(run_record(project, Settings(), config, Path("python3"), workspace, {}))
    run.emit(
        RunStarted(
            run_id=live,
            task="Fix add.",
            project=str(project),
            model="openai/scripted",
            sandbox="gvisor",
            max_iterations=4,
            branch=f"fixloop/{live}",
        )
    )
    done = fixloop(machine, "clean", str(project), "--runs", "--yes", "--include-undecided")
    assert done.returncode == 0, done.stderr
    assert run_path(project, live).is_dir()
    assert worktree_path(project, live).is_dir()
    assert branches(project) == [f"fixloop/{live}"]
    assert f"{live}: it may still be running" in done.stdout


def test_older_than_offers_only_what_has_not_been_used_for_that_long(
    tmp_path: Path, machine: dict[str, str]
) -> None:
    cache = Path(machine["XDG_CACHE_HOME"]) / "fixloop"
    for name in ("models", "go-build"):
        (cache / name).mkdir(parents=True)
        (cache / name / "data").write_bytes(b"\0" * 2048)
    age(cache / "models")
    done = fixloop(machine, "clean", "--caches", "--older-than", "7d", "--yes")
    assert done.returncode == 0, done.stderr
    assert not (cache / "models").exists()
    assert (cache / "go-build" / "data").is_file()


def test_an_age_that_is_no_age_is_a_usage_error(machine: dict[str, str]) -> None:
    done = fixloop(machine, "clean", "--older-than", "a week")
    assert done.returncode == 2
    assert "give an age like 30m, 12h, 7d or 2w" in done.stderr


def test_the_demos_copies_are_listed_with_sizes_and_removed(
    tmp_path: Path, machine: dict[str, str]
) -> None:
    copy = Path(machine["TMPDIR"]) / "fixloop-demo-x1y2z3"
    (copy / "textstats").mkdir(parents=True)
    (copy / "textstats" / "core.py").write_text("x = 1\n" * 500)
    age(copy)
    listed = fixloop(machine, "clean", "--demos", "--dry-run")
    [line] = [line for line in listed.stdout.splitlines() if copy.name in line]
    assert "3.0 kB" in line
    done = fixloop(machine, "clean", "--demos", "--yes")
    assert done.returncode == 0, done.stderr
    assert not copy.exists()


def dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_dead_sandboxes_bundles_and_idle_skeleton_roots_are_removed(
    machine: dict[str, str],
) -> None:
    runtime = Path(machine["FIXLOOP_RUNTIME_DIR"])
    bundle = runtime / "bundles" / f"fixloop-{dead_pid()}-0a0b0c0d-x1"
    root = runtime / "rootfs-0123456789abcdef"
    for path in (bundle, root / "etc"):
        path.mkdir(parents=True)
    (root / "etc" / "passwd").write_text("nobody:x:65534\n")
    done = fixloop(machine, "clean", "--sandbox", "--yes")
    assert done.returncode == 0, done.stderr
    assert not bundle.exists()
    assert not root.exists()


def test_skeleton_roots_are_kept_while_a_sandbox_runs(machine: dict[str, str]) -> None:
    runtime = Path(machine["FIXLOOP_RUNTIME_DIR"])
    live = runtime / "bundles" / f"fixloop-{os.getpid()}-0a0b0c0d-x1"
    root = runtime / "rootfs-0123456789abcdef"
    live.mkdir(parents=True)
    root.mkdir()
    done = fixloop(machine, "clean", "--sandbox", "--yes")
    assert done.returncode == 0, done.stderr
    assert live.is_dir()
    assert root.is_dir()
    assert "sandboxes are running: their skeleton roots are kept" in done.stdout


def test_a_branch_whose_run_directory_is_gone_goes_with_its_worktree_only_when_asked(
    project: Path, machine: dict[str, str]
) -> None:
    shutil.rmtree(run_path(project, UNDECIDED))
    age(worktree_path(project, UNDECIDED))
    kept = fixloop(machine, "clean", str(project), "--runs", "--yes")
    assert branches(project) == [f"fixloop/{UNDECIDED}"]
    assert "a branch and its worktree with no run directory" in kept.stdout
    done = fixloop(machine, "clean", str(project), "--runs", "--yes", "--include-undecided")
    assert done.returncode == 0, done.stderr
    assert branches(project) == []
    assert not worktree_path(project, UNDECIDED).exists()
