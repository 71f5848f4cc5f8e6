"""Where things are in a project: fixloop's `.fixloop/`, its run directories
`.fixloop/runs/<run>` and worktrees `.fixloop/worktrees/<run>`, and the project's Python."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from engine.errors import ConfigError, WorkspaceError
from sandbox.errors import InterpreterRefused
from sandbox.host_trees import is_within
from sandbox.interpreter import read_venv

FIXLOOP_DIR = ".fixloop"


def fixloop_dir(project: Path) -> Path:
    return project / FIXLOOP_DIR


def runs_dir(project: Path) -> Path:
    return fixloop_dir(project) / "runs"


def run_path(project: Path, run_id: str) -> Path:
    """The run directory `.fixloop/runs/<run>`: the audit trail of one run."""
    return runs_dir(project) / run_id


def worktrees_dir(project: Path) -> Path:
    return fixloop_dir(project) / "worktrees"


def worktree_path(project: Path, run_id: str) -> Path:
    """Where the run's worktree is (or was) while it runs: `.fixloop/worktrees/<run>`."""
    return worktrees_dir(project) / run_id


def ensure_fixloop_dir(project: Path) -> Path:
    """`.fixloop/` with a `.gitignore` of `*`: git ignores the directory, so the user's own
    .gitignore stays untouched. `.fixloop/`, its `runs/` and `worktrees/` must be real
    directories of the project: a repository that commits `.fixloop -> ~` (or `runs -> /etc`)
    would have fixloop write its trail, its worktrees and that `.gitignore` wherever the link
    points, so a link there is refused (ConfigError) before anything is written."""
    directory = fixloop_dir(project)
    for path in (directory, runs_dir(project), worktrees_dir(project)):
        if path.is_symlink() or (path.exists() and not path.is_dir()):
            raise ConfigError(
                f"{path} is a link or not a directory: fixloop writes its runs only into a "
                f"real directory of the project; remove it (rm {path})"
            )
    directory.mkdir(exist_ok=True)
    ignore = directory / ".gitignore"
    if ignore.is_symlink():
        ignore.unlink()
    if not ignore.is_file() or "*" not in ignore.read_text().split():
        ignore.write_text("*\n")
    return directory


def project_python(project: Path) -> Path:
    """The interpreter that runs the project's tests: its venv (`.venv`, else `venv`) if it
    has one, else ours. Nothing in the venv is executed here or later: it is read
    (`sandbox.interpreter.read_venv`), and its bin/python only ever runs in a sandbox.

    The venv must be one the person made, not one the repository brought: ConfigError (one
    line) when git tracks anything under it (or it is a tracked symlink), when it has no
    `pyvenv.cfg`, when `read_venv` refuses it (a base interpreter not owned by root or this
    user, or writable by others; a tree to mount that is `/` or holds the home directory),
    or when its base interpreter or `base_prefix` resolves inside the project, where a
    checkout could have put it. A hostile repository controls only files inside the project
    and what git checks out; every way those could name a host tree is refused here, and
    what remains (the venv's own files) is mounted read-only and run only in the sandbox.
    Also ConfigError when the project has a venv this user cannot look into (root's, say)."""
    for name in (".venv", "venv"):
        candidate = project / name / "bin" / "python"
        try:
            if candidate.exists():
                break
        except PermissionError:
            raise ConfigError(
                f"cannot use the project's interpreter {candidate}: permission denied; "
                f"make {name}/ readable by this user, or pass --python PATH"
            ) from None
    else:
        return Path(sys.executable)
    venv = project / name
    committed = tracked_path(project, name)
    if committed is not None:
        raise ConfigError(
            f"{venv} is part of the repository (git tracks {committed}): fixloop only runs an "
            "interpreter you made; pass --python PATH"
        )
    if not (venv / "pyvenv.cfg").is_file():
        raise ConfigError(
            f"{venv} is not a virtual environment (no pyvenv.cfg): recreate it with "
            f"`python -m venv {name}`, or pass --python PATH"
        )
    try:
        found = read_venv(venv, candidate)
    except InterpreterRefused as exc:
        raise ConfigError(
            f"cannot use the project's interpreter: {exc}; pass --python PATH"
        ) from None
    inside = project.resolve()
    trees = (("base interpreter", found.base_executable), ("standard library", found.base_prefix))
    for what, path in trees:
        if is_within(path.resolve(), inside):
            raise ConfigError(
                f"{venv}: its {what} {path} is inside the project, where a checkout could have "
                "put it: fixloop only runs an interpreter you installed; pass --python PATH"
            )
    return candidate


def tracked_path(project: Path, name: str) -> str | None:
    """The first path git tracks at or under `name` in `project` (a committed file, or `name`
    itself as a committed symlink), or None, also outside a repository. Reading the index
    runs nothing of the repository's: fsmonitor is off for this call (hooks always are)."""
    from engine.project.git_plumbing import run_git  # git: not at start-up

    try:
        listed = run_git(
            project, "-c", "core.fsmonitor=false", "ls-files", "-z", "--", name, ok=(0,)
        )[1]
    except (WorkspaceError, OSError):
        return None
    first = listed.split(b"\0", 1)[0]
    return os.fsdecode(first) if first else None


def in_repository(project: Path) -> bool:
    """Whether `project` is inside a git work tree (so `tracked_path` can speak for it)."""
    from engine.project.git_plumbing import run_git  # git: not at start-up

    try:
        out = run_git(project, "rev-parse", "--is-inside-work-tree", ok=(0,))[1]
    except (WorkspaceError, OSError):
        return False
    return out.strip() == b"true"
