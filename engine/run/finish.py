"""Ending a run as the person chose: accept (squash onto their branch), keep (the branch
stays) or discard, from nothing but the project and the run id; the change an accept would
squash, to see before choosing; the choice recorded in the run directory (`finish.json`).
Which runs are still to be decided, for `fixloop-tui accept|keep|discard` from the shell."""

from __future__ import annotations

import fcntl
import os
import shlex
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from engine.errors import FinishRefused, UnsealedRecord, WorkspaceError
from engine.project.accept import accept_run
from engine.project.paths import run_path
from engine.project.workspace import Workspace, accept_message
from engine.run.report import refresh_report
from engine.run.run_directory import (
    FinishChoice,
    FinishRecord,
    RunDirectory,
    RunRecord,
    RunSummary,
    list_runs,
    summarize,
)

Finish = FinishChoice
FINISH_LOCK = "finish.lock"  # held while a choice is carried out: two choices never interleave


class Finished(BaseModel):
    """What accept / keep / discard did, in words for the person."""

    model_config = ConfigDict(frozen=True)

    choice: Finish
    done: bool
    detail: str
    commit: str | None = None


def finish_run(
    project: Path, run_id: str, choice: Finish, *, only_undecided: bool = False
) -> Finished:
    """Accept (squash onto the user's branch), keep (the branch stays) or discard the run.

    A refused accept changes nothing and says why; keep and discard always succeed. What took
    effect is recorded in the run directory (`finish.json`, read back by `fixloop-tui runs`).
    With `only_undecided` (the shell), a run that is not undecided raises FinishRefused, checked
    under the run's finish lock so that two choices made at once cannot both take effect.
    The run's record must be sealed (fixloop wrote it for this user): a run directory a
    repository committed, naming a branch of its own, is never squashed onto the person's.
    """
    run = RunDirectory(run_path(project, run_id))
    with _finish_lock(run):
        if only_undecided:
            require_undecided(project, run_id)
        finished = _finish(project, run, choice)
        if finished.done:
            run.write_finish(FinishRecord(choice=choice, commit=finished.commit))
            refresh_report(project, run_id)
    return finished


def undecided_runs(project: Path) -> list[RunSummary]:
    """The runs that ended with a branch nobody has accepted, kept or discarded, newest first;
    only runs fixloop recorded for this user (a sealed `run.json`), never one a repository
    committed under `.fixloop/runs/`."""
    return [
        run
        for run in list_runs(project)
        if _refusal(run, project) is None and _sealed(RunDirectory(Path(run.path)))
    ]


def _sealed(run: RunDirectory) -> bool:
    try:
        run.sealed_record()
    except (UnsealedRecord, OSError, ValueError):
        return False
    return True


def newest_undecided(project: Path) -> str:
    """The id of the newest undecided run; FinishRefused, saying so, when there is none."""
    runs = undecided_runs(project)
    if not runs:
        raise FinishRefused(f"no run in {project} waits for a decision (see `fixloop-tui runs`)")
    return runs[0].id


def require_undecided(project: Path, run_id: str) -> None:
    """FinishRefused, in one line that says what to do, unless the run ended with a branch
    that nobody decided on yet."""
    refusal = _refusal(summarize(run_path(project, run_id)), project)
    if refusal is not None:
        raise FinishRefused(refusal)


def _refusal(run: RunSummary, project: Path) -> str | None:
    if run.finish is not None:
        if run.finish == "keep":
            return (
                f"run {run.id} was kept already: its branch fixloop/{run.id} is yours "
                f"(`git merge --squash fixloop/{run.id}` to take it)"
            )
        return f"run {run.id} was {run.outcome} already: nothing to decide"
    if run.status in ("unfinished", "stopped"):
        resume = shlex.join(["fixloop-tui", "resume", run.id, str(project)])
        return (
            f"run {run.id} has not ended (it is still running, or was stopped): let it end, "
            f"or continue it: {resume}"
        )
    if not run.branch:
        return f"run {run.id} ended {run.status_label} with no branch: nothing to decide"
    return None


@contextmanager
def _finish_lock(run: RunDirectory) -> Iterator[None]:
    """An exclusive lock on the run directory's finish.lock while a choice is carried out.
    Opened without following a link and never written: a link a repository planted there
    names no file of the person's to create or change."""
    path = run.path / FINISH_LOCK
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    except OSError as exc:
        raise FinishRefused(
            f"{path} is not a file fixloop made ({exc.strerror}): nothing was changed; remove it "
            "if the run is yours"
        ) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


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
    try:
        record = run.sealed_record()
    except UnsealedRecord as exc:
        return Finished(choice=choice, done=False, detail=str(exc))
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
        sha = accept_run(
            workspace, accept_message(record.config.task, run.run_id, workspace.branch)
        )
    except WorkspaceError as exc:
        return Finished(choice=choice, done=False, detail=str(exc))
    return Finished(
        choice=choice,
        done=True,
        commit=sha,
        detail=f"accepted as {sha[:10]} on {workspace.user_branch}",
    )
