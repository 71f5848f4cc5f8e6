"""Git as the workspace runs it: without the user's hooks, failures as `WorkspaceError`,
scratch index files, and the bookkeeping of run worktrees and branches.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import git

from sandbox.errors import FixloopError

# The user's hooks must not run (or prompt) for the loop's own bookkeeping.
_NO_HOOKS = ("-c", f"core.hooksPath={os.devnull}")


class WorkspaceError(FixloopError):
    """The project cannot host a run, or a run's result cannot be applied as asked."""


@contextmanager
def scratch_index(copy_of: Path | None = None) -> Iterator[dict[str, str]]:
    """An environment pointing git at a throwaway index file (optionally a copy of another)."""
    with tempfile.TemporaryDirectory(prefix="fixloop-index-") as scratch:
        index = Path(scratch) / "index"
        if copy_of is not None and copy_of.is_file():
            shutil.copyfile(copy_of, index)
        yield {"GIT_INDEX_FILE": str(index)}


def run_git(
    cwd: Path, *args: str, env: Mapping[str, str] | None = None, ok: tuple[int, ...] = (0,)
) -> tuple[int, bytes]:
    """Run git in `cwd` without the user's hooks; a status outside `ok` is a WorkspaceError."""
    status, out, err = git.Git(str(cwd)).execute(
        [str(git.Git.GIT_PYTHON_GIT_EXECUTABLE), *_NO_HOOKS, *args],
        with_extended_output=True,
        with_exceptions=False,
        stdout_as_string=False,
        strip_newline_in_stdout=False,
        env=env,
    )
    if status not in ok:
        detail = err.strip().splitlines()[-1] if err.strip() else f"exit status {status}"
        raise WorkspaceError(f"`git {' '.join(args[:2])}` failed in {cwd}: {detail}")
    return status, out


def git_bytes(cwd: Path, *args: str, env: Mapping[str, str] | None = None) -> bytes:
    return run_git(cwd, *args, env=env)[1]


def git_text(cwd: Path, *args: str, env: Mapping[str, str] | None = None) -> str:
    return os.fsdecode(git_bytes(cwd, *args, env=env)).rstrip("\n")


def git_ok(cwd: Path, *args: str) -> bool:
    """Whether a git query answers yes (exit 0); any other status means no."""
    return run_git(cwd, *args, ok=tuple(range(256)))[0] == 0


def nul_paths(out: bytes) -> list[str]:
    """NUL-separated git output as paths (undecodable bytes survive a round trip)."""
    return [os.fsdecode(item) for item in out.split(b"\0") if item]


def commit_of(cwd: Path, rev: str) -> str:
    status, out = run_git(cwd, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", ok=(0, 1))
    if status != 0:
        raise WorkspaceError(f"{rev!r} is not a commit in {cwd}; name a commit of the run")
    return out.decode().strip()


def tree_of(cwd: Path, rev: str) -> str:
    return git_text(cwd, "rev-parse", "--verify", f"{rev}^{{tree}}")


def remove_worktree(project: Path, root: Path) -> None:
    if root.is_dir() and root.resolve() in registered_worktrees(project):
        git_bytes(project, "worktree", "remove", "--force", "--force", str(root))
    elif root.exists():  # a leftover directory git no longer knows about
        shutil.rmtree(root)
    git_bytes(project, "worktree", "prune")


def delete_branch(project: Path, branch: str) -> None:
    if git_ok(project, "show-ref", "--verify", "--quiet", f"refs/heads/{branch}"):
        git_bytes(project, "branch", "--quiet", "-D", branch)


def registered_worktrees(project: Path) -> list[Path]:
    out = git_bytes(project, "worktree", "list", "--porcelain", "-z")
    return [
        Path(os.fsdecode(line.removeprefix(b"worktree "))).resolve()
        for line in out.split(b"\0")
        if line.startswith(b"worktree ")
    ]
