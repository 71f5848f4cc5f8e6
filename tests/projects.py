"""Fixture projects as a user would have them: a git repository with one commit,
readable by the sandbox's unprivileged user."""

from __future__ import annotations

import shutil
from pathlib import Path

import git

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
PROJECTS = REPO / "tests" / "fixtures" / "projects"


def committed_copy(source: Path, into: Path, message: str = "baseline") -> Path:
    """`source` copied to `into/<name>`, committed, and readable by uid 65534."""
    root = into / source.name
    shutil.copytree(source, root)
    repo = git.Repo.init(root)
    repo.git.add("-A")
    repo.index.commit(message)
    readable(into)
    return root


def readable(top: Path) -> None:
    """The sandbox runs as nobody: every directory on the way must be searchable."""
    for path in [top, *top.rglob("*")]:
        if ".git" not in path.parts:
            path.chmod(0o755 if path.is_dir() else 0o644)
