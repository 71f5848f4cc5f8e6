"""A repository that commits links and runs of its own under `.fixloop/` against `fixloop-tui
clean --yes --include-undecided`: a link is never followed (not sized through, not entered, not
removed: what it points at stays whole), a `run.json` that is a link is never read, and a run
directory fixloop did not seal is left alone with the branch its `run.json` names."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import git
import pytest

from engine.project.settings import Settings
from engine.run.events import RunFinished, RunStarted
from engine.run.outcome import RunConfig
from engine.run.run_directory import RunRecord

REPO = Path(__file__).parents[2]
LINKED_RUN = "20990101-000000-f00d"
LINKED_WORKTREE = "20990101-000000-beef"
FORGED_RUN = "20990102-000000-cafe"
ZERO_RUN = "20990103-000000-d00d"
WEEKS_AGO = 1_700_000_000.0
BIG = 3 * 1024**3  # a sparse file: were it counted, the listing would say GB


@pytest.fixture
def machine(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    (tmp_path / "tmp").mkdir()
    gitconfig = tmp_path / "gitconfig"
    gitconfig.write_text("[user]\n\tname = Repo\n\temail = repo@example.invalid\n")
    return {
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


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory of the person's outside the project (their home, say), with a big file."""
    target = tmp_path / "precious"
    target.mkdir()
    (target / "thesis.tex").write_text("years of work\n")
    with (target / "disk.img").open("wb") as image:
        image.truncate(BIG)
    return target


def clean(machine: dict[str, str], project: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui.cli", "clean", str(project), "--yes", "--include-undecided"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**machine, "PYTHONPATH": str(REPO)},
        timeout=120,
        check=False,
    )


def commit_all(repo: git.Repo, env: dict[str, str]) -> None:
    repo.git.add("-A", "-f")
    repo.git.commit("-q", "-m", "the repository's own .fixloop", env=env)
    for path in Path(str(repo.working_tree_dir), ".fixloop").rglob("*"):
        os.utime(path, (WEEKS_AGO, WEEKS_AGO), follow_symlinks=False)


def forged_run(root: Path, base: str) -> None:
    """A run directory the repository made: ended ok, accepted, naming the person's `main`."""
    run = root / ".fixloop" / "runs" / FORGED_RUN
    run.mkdir(parents=True)
    record = RunRecord(
        project=str(root),
        run_id=FORGED_RUN,
        branch="main",
        start_head=base,
        user_branch="main",
        baseline=base,
        config=RunConfig(task="Fix it.", model="openai/x"),
        settings=Settings(),
        python=Path("/usr/bin/python3"),
        versions={},
        argv=[],
    )
    (run / "run.json").write_text(record.model_dump_json())
    (run / "run.seal").write_text("0" * 64 + "\n")
    started = RunStarted(
        run_id=FORGED_RUN,
        task="Fix it.",
        project=str(root),
        model="openai/x",
        sandbox="gvisor",
        max_iterations=4,
        branch="main",
    )
    finished = RunFinished(status="ok", iterations=1, branch="main")
    (run / "events.jsonl").write_text(
        started.model_dump_json() + "\n" + finished.model_dump_json() + "\n"
    )
    (run / "finish.json").write_text('{"choice": "discard"}\n')


@pytest.fixture
def hostile(tmp_path: Path, machine: dict[str, str], outside: Path) -> Path:
    root = tmp_path / "repo"
    repo = git.Repo.init(root, initial_branch="main")
    (root / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    repo.git.add("-A")
    repo.git.commit("-q", "-m", "calc", env=machine)
    runs = root / ".fixloop" / "runs"
    runs.mkdir(parents=True)
    (runs / LINKED_RUN).symlink_to(outside)
    (root / ".fixloop" / "worktrees").mkdir()
    (root / ".fixloop" / "worktrees" / LINKED_WORKTREE).symlink_to(outside)
    (runs / ZERO_RUN).mkdir()
    (runs / ZERO_RUN / "run.json").symlink_to("/dev/zero")
    forged_run(root, repo.head.commit.hexsha)
    commit_all(repo, machine)
    return root


def test_links_under_fixloop_are_never_followed_nor_removed(
    hostile: Path, machine: dict[str, str], outside: Path
) -> None:
    done = clean(machine, hostile)
    assert done.returncode == 0, done.stderr
    assert (outside / "thesis.tex").read_text() == "years of work\n"
    assert (outside / "disk.img").stat().st_size == BIG
    assert (hostile / ".fixloop" / "runs" / LINKED_RUN).is_symlink()
    assert (hostile / ".fixloop" / "worktrees" / LINKED_WORKTREE).is_symlink()
    assert f"{LINKED_RUN}: a link to {outside}: never followed" in done.stdout
    assert "GB" not in done.stdout


def test_a_run_the_repository_made_is_left_alone_with_the_branch_it_names(
    hostile: Path, machine: dict[str, str]
) -> None:
    done = clean(machine, hostile)
    assert done.returncode == 0, done.stderr
    assert (hostile / ".fixloop" / "runs" / FORGED_RUN / "run.json").is_file()
    assert git.Repo(hostile).git.branch("--list", "--format=%(refname:short)") == "main"
    assert f"{FORGED_RUN}: not a run fixloop recorded for you" in done.stdout


def test_a_run_record_that_is_a_link_is_never_read(hostile: Path, machine: dict[str, str]) -> None:
    done = clean(machine, hostile)  # reading /dev/zero would run past the timeout
    assert done.returncode == 0, done.stderr
    assert f"{ZERO_RUN}: not a run fixloop recorded for you" in done.stdout


def test_a_fixloop_directory_that_is_a_link_is_not_entered(
    tmp_path: Path, machine: dict[str, str], outside: Path
) -> None:
    root = tmp_path / "linked"
    repo = git.Repo.init(root, initial_branch="main")
    (outside / "runs" / "20990104-000000-0000").mkdir(parents=True)
    (root / ".fixloop").symlink_to(outside)
    commit_all(repo, machine)
    done = clean(machine, root)
    assert done.returncode == 0, done.stderr
    assert (outside / "runs" / "20990104-000000-0000").is_dir()
    assert (outside / "thesis.tex").is_file()
    assert f"{root / '.fixloop'}: a link to {outside}: never followed" in done.stdout
