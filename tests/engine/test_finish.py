"""Ending a run from its id on real git: the change accept would squash, and the person's choice
recorded in the run directory for `fixloop-tui runs`."""

from __future__ import annotations

from pathlib import Path

import git
import pytest

from engine.project.settings import Settings
from engine.project.workspace import Workspace, iteration_message
from engine.run.events import RunFinished, RunStarted
from engine.run.finish import finish_run, squash_diff
from engine.run.outcome import RunConfig
from engine.run.run_directory import RunDirectory, list_runs
from engine.run.start import run_record
from tests.engine.test_workspace import FIXED_STATS, isolated_git, make_project, root_of, write

__all__ = ["isolated_git"]  # the autouse fixture: no git config from outside tmp_path


def started(run_id: str, task: str = "Fix the mean.") -> RunStarted:
    return RunStarted(
        run_id=run_id,
        task=task,
        project="/p",
        model="openai/scripted",
        sandbox="gvisor",
        max_iterations=4,
        branch=f"fixloop/{run_id}",
    )


def ended_run(repo: git.Repo, run_id: str, *, accepted_suspicious: list[str] | None = None) -> Path:
    """A run that committed one fix to pkg/stats.py, ended ok, its run directory written."""
    project = root_of(repo)
    workspace = Workspace.create(project, run_id)
    write(workspace.root, {"pkg/stats.py": FIXED_STATS})
    workspace.commit(iteration_message(1, 4, "an empty list has mean 0"))
    run = RunDirectory.create(project, run_id)
    config = RunConfig(task="Fix the mean.", model="openai/scripted")
    run.write_record(run_record(project, Settings(), config, Path("python3"), workspace, {}))
    run.emit(started(run_id))
    run.emit(
        RunFinished(
            status="ok",
            iterations=1,
            branch=workspace.branch,
            accepted_suspicious=accepted_suspicious or [],
        )
    )
    return project


@pytest.fixture
def project(tmp_path: Path) -> git.Repo:
    return make_project(tmp_path / "project")


def test_the_squash_diff_is_the_runs_whole_change_from_its_baseline(project: git.Repo) -> None:
    root = ended_run(project, "20261203-100000-aaaa")
    diff = squash_diff(root, "20261203-100000-aaaa")
    assert "diff --git a/pkg/stats.py b/pkg/stats.py" in diff
    assert "+    if not xs:" in diff
    assert "tests/" not in diff  # only what the run changed


def test_each_choice_is_recorded_and_runs_shows_it(project: git.Repo) -> None:
    root = ended_run(project, "20261203-100000-aaaa")
    ended_run(project, "20261203-100001-bbbb", accepted_suspicious=["added a skip"])
    ended_run(project, "20261203-100002-cccc")
    ended_run(project, "20261203-100003-dddd")
    assert finish_run(root, "20261203-100000-aaaa", "keep").done
    assert finish_run(root, "20261203-100001-bbbb", "accept").done
    assert finish_run(root, "20261203-100002-cccc", "discard").done
    recorded = RunDirectory(root / ".fixloop" / "runs" / "20261203-100001-bbbb").finish()
    assert recorded is not None
    assert recorded.choice == "accept"
    assert recorded.commit == project.head.commit.hexsha
    shown = {run.id: (run.status_label, run.outcome) for run in list_runs(root)}
    assert shown == {
        "20261203-100000-aaaa": ("ok", "kept"),
        "20261203-100001-bbbb": ("ok (accepted suspicious)", "accepted"),
        "20261203-100002-cccc": ("ok", "discarded"),
        "20261203-100003-dddd": ("ok", "undecided"),
    }


def test_a_refused_accept_is_not_recorded(project: git.Repo) -> None:
    root = ended_run(project, "20261203-100000-aaaa")
    write(root, {"pkg/stats.py": "# the person's own edit\n"})
    finished = finish_run(root, "20261203-100000-aaaa", "accept")
    assert not finished.done
    assert RunDirectory(root / ".fixloop" / "runs" / "20261203-100000-aaaa").finish() is None
    [run] = list_runs(root)
    assert run.outcome == "undecided"


def test_a_run_that_committed_nothing_has_no_branch_to_decide_on(tmp_path: Path) -> None:
    run = RunDirectory.create(tmp_path, "20261203-100000-eeee")
    run.emit(started(run.run_id))
    run.emit(RunFinished(status="error", reason="the model is not known", branch=""))
    [summary] = list_runs(tmp_path)
    assert summary.outcome == "no branch"
