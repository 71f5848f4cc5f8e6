"""Ending a run as the person chose: accept (squash onto their branch), keep (the branch
stays) or discard, from nothing but the project and the run id."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from engine.project.git_plumbing import WorkspaceError
from engine.project.paths import run_path
from engine.project.run_directory import RunDirectory
from engine.project.workspace import Workspace, accept_message

Finish = Literal["accept", "keep", "discard"]


class Finished(BaseModel):
    """What accept / keep / discard did, in words for the person."""

    model_config = ConfigDict(frozen=True)

    choice: Finish
    done: bool
    detail: str
    commit: str | None = None


def finish_run(project: Path, run_id: str, choice: Finish) -> Finished:
    """Accept (squash onto the user's branch), keep (the branch stays) or discard the run.

    A refused accept changes nothing and says why; keep and discard always succeed.
    """
    record = RunDirectory(run_path(project, run_id)).record()
    workspace = Workspace(
        project,
        run_id,
        start_head=record.start_head,
        user_branch=record.user_branch,
        baseline=record.baseline,
    )
    if choice == "keep":
        workspace.keep()
        return Finished(choice=choice, done=True, detail=f"kept on branch {workspace.branch}")
    if choice == "discard":
        workspace.discard()
        return Finished(
            choice=choice, done=True, detail=f"discarded: branch {workspace.branch} deleted"
        )
    try:
        sha = workspace.accept(accept_message(record.config.task, run_id, workspace.branch))
    except WorkspaceError as exc:
        return Finished(choice=choice, done=False, detail=str(exc))
    return Finished(
        choice=choice,
        done=True,
        commit=sha,
        detail=f"accepted as {sha[:10]} on {workspace.user_branch}",
    )
