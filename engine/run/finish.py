"""Ending a run as the person chose: accept (squash onto their branch), keep (the branch
stays) or discard, from nothing but the project and the run id; the change an accept would
squash, to see before choosing; the choice recorded in the run directory (`finish.json`)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from engine.project.git_plumbing import WorkspaceError
from engine.project.paths import run_path
from engine.project.run_directory import FinishChoice, FinishRecord, RunDirectory, RunRecord
from engine.project.workspace import Workspace, accept_message

Finish = FinishChoice


class Finished(BaseModel):
    """What accept / keep / discard did, in words for the person."""

    model_config = ConfigDict(frozen=True)

    choice: Finish
    done: bool
    detail: str
    commit: str | None = None


def finish_run(project: Path, run_id: str, choice: Finish) -> Finished:
    """Accept (squash onto the user's branch), keep (the branch stays) or discard the run.

    A refused accept changes nothing and says why; keep and discard always succeed. What took
    effect is recorded in the run directory (`finish.json`, read back by `fixloop-tui runs`).
    """
    run = RunDirectory(run_path(project, run_id))
    finished = _finish(project, run, choice)
    if finished.done:
        run.write_finish(FinishRecord(choice=choice, commit=finished.commit))
    return finished


def squash_diff(project: Path, run_id: str) -> str:
    """The whole change an accept squashes onto the person's branch: the run's baseline to its
    branch's tip, as a unified diff ("" if the branch changes nothing)."""
    workspace = _workspace(project, run_id, RunDirectory(run_path(project, run_id)).record())
    return workspace.diff(workspace.tip(), workspace.baseline)


def _workspace(project: Path, run_id: str, record: RunRecord) -> Workspace:
    return Workspace(
        project,
        run_id,
        start_head=record.start_head,
        user_branch=record.user_branch,
        baseline=record.baseline,
    )


def _finish(project: Path, run: RunDirectory, choice: Finish) -> Finished:
    record = run.record()
    workspace = _workspace(project, run.run_id, record)
    if choice == "keep":
        workspace.keep()
        return Finished(choice=choice, done=True, detail=f"kept on branch {workspace.branch}")
    if choice == "discard":
        workspace.discard()
        return Finished(
            choice=choice, done=True, detail=f"discarded: branch {workspace.branch} deleted"
        )
    try:
        sha = workspace.accept(accept_message(record.config.task, run.run_id, workspace.branch))
    except WorkspaceError as exc:
        return Finished(choice=choice, done=False, detail=str(exc))
    return Finished(
        choice=choice,
        done=True,
        commit=sha,
        detail=f"accepted as {sha[:10]} on {workspace.user_branch}",
    )
