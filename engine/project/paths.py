"""Where things are in a project: fixloop's `.fixloop/`, its run directories
`.fixloop/runs/<run>` and worktrees `.fixloop/worktrees/<run>`, and the project's Python."""

from __future__ import annotations

import sys
from pathlib import Path

from engine.project.settings import ConfigError

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
    """The interpreter that runs the project's tests: its venv if it has one, else ours.
    ConfigError when the project has a venv this user cannot look into (root's, say)."""
    for venv in (".venv", "venv"):
        candidate = project / venv / "bin" / "python"
        try:
            if candidate.exists():
                return candidate
        except PermissionError:
            raise ConfigError(
                f"cannot use the project's interpreter {candidate}: permission denied; "
                f"make {venv}/ readable by this user, or pass --python PATH"
            ) from None
    return Path(sys.executable)
