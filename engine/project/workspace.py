"""The run's git worktree: where the loop edits and commits (ARCHITECTURE.md, "Settings and
files on disk"). The user's checkout, index and branch are never touched while a run is live;
only `accept` (engine/project/accept.py) writes there.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

from engine.errors import WorkspaceError
from engine.project.changed_code import FileChange, change_subject
from engine.project.git_plumbing import (
    commit_message,
    commit_of,
    delete_branch,
    git_bytes,
    git_ok,
    git_text,
    nul_paths,
    registered_worktrees,
    remove_worktree,
    required_filters,
    run_git,
    scratch_index,
    tree_of,
)
from engine.project.paths import FIXLOOP_DIR, ensure_fixloop_dir, worktree_path
from engine.project.pins import TestPins

BRANCH_PREFIX = "fixloop/"
BASELINE_MESSAGE = "fixloop[baseline]: your uncommitted changes"
FALLBACK_NAME = "fixloop"
FALLBACK_EMAIL = "fixloop@localhost"
_SUBJECT_WIDTH = 72
_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
# Never part of a snapshot: fixloop's own directory, and bytecode that test runs leave behind
# in projects that do not ignore it (it would otherwise land in every iteration's commit).
# Each is a glob with no literal prefix: git add exits 1 when a literal pathspec names a path
# the project's .gitignore ignores, and many projects ignore `.fixloop/`.
_NEVER_STAGED = (
    f":(exclude,glob)[{FIXLOOP_DIR[0]}]{FIXLOOP_DIR[1:]}/**",
    ":(exclude,glob)**/__pycache__/**",
    ":(exclude,glob)**/*.py[co]",
)


def iteration_message(
    n: int, max_n: int, explanation: str, changes: Sequence[FileChange] = ()
) -> str:
    """`fixloop[iter N/M]: <first line of the explanation>`, one line, clipped to fit a log,
    as it is committed (`commit_message`: the model wrote the explanation). Without an
    explanation, what `changes` touched (`edit mean_word_length in textstats/core.py`)."""
    said = change_subject(changes) or "edits by the model"
    return commit_message(f"fixloop[iter {n}/{max_n}]: {_subject(explanation, said)}")


def accept_message(task: str, run_id: str, branch: str) -> str:
    """The squashed commit's message: the task as its subject (a task of several lines: the
    whole task in the body too), where it came from below."""
    subject = _subject(task, "fixloop run")
    whole = task.strip()
    body = f"{whole}\n\n" if "\n" in whole or len(whole) > len(subject) else ""
    return f"{subject}\n\n{body}Squashed from {branch} (fixloop run {run_id})."


def _subject(text: str, empty: str) -> str:
    """The first non-blank line of `text`, spaces collapsed, clipped to fit a log line."""
    lines = (line.strip() for line in text.splitlines())
    subject = " ".join(next((line for line in lines if line), "").split()) or empty
    if len(subject) > _SUBJECT_WIDTH:
        subject = subject[: _SUBJECT_WIDTH - 3].rstrip() + "..."
    return subject


class Workspace:
    """One run's worktree `.fixloop/worktrees/<run>` on branch `fixloop/<run>`."""

    def __init__(
        self,
        project: Path,
        run_id: str,
        *,
        start_head: str,
        user_branch: str | None,
        baseline: str,
        identity: Mapping[str, str] | None = None,
    ) -> None:
        self.project = project
        self.run_id = run_id
        self.root = worktree_path(project, run_id)
        self.branch = BRANCH_PREFIX + run_id
        self.start_head = start_head
        self.user_branch = user_branch
        self.baseline = baseline
        self.pins = TestPins.from_commit(project, baseline)  # same objects as the worktree
        self.identity = dict(_identity_env(project) if identity is None else identity)

    # -- starting a run -------------------------------------------------------------------

    @classmethod
    def create(cls, project: Path, run_id: str) -> Workspace:
        """A worktree on new branch `fixloop/<run_id>`: HEAD plus the user's uncommitted work."""
        project = project_root(project)
        _check_run_id(run_id)
        branch = BRANCH_PREFIX + run_id
        root = worktree_path(project, run_id)
        if git_ok(project, "show-ref", "--verify", "--quiet", f"refs/heads/{branch}"):
            raise WorkspaceError(
                f"branch {branch} already exists; pick another run id, or delete the old run's "
                f"branch (`git branch -D {branch}`)"
            )
        if root.exists() or root.is_symlink():
            raise WorkspaceError(
                f"{root} already exists; pick another run id, or remove it "
                f"(`git worktree remove --force {root}`)"
            )
        _refuse_required_filters(project)
        ensure_fixloop_dir(project)
        identity = _identity_env(project)
        start_head = git_text(project, "rev-parse", "--verify", "HEAD^{commit}")
        user_branch = _current_branch(project)
        baseline = _baseline_commit(project, start_head, identity)
        try:
            git_bytes(project, "worktree", "add", "--quiet", "-b", branch, str(root), baseline)
        except WorkspaceError:
            remove_worktree(project, root)
            delete_branch(project, branch)
            raise
        return cls(
            project,
            run_id,
            start_head=start_head,
            user_branch=user_branch,
            baseline=baseline,
            identity=identity,
        )

    @classmethod
    def reopen(
        cls,
        project: Path,
        run_id: str,
        *,
        start_head: str,
        user_branch: str | None,
        baseline: str,
    ) -> Workspace:
        """The workspace of a run whose process died: its worktree back at the branch tip.

        Committed iterations are kept; edits that were applied but never committed (the
        process died between writing and committing) were never verified and are dropped.
        """
        project = project_root(project)
        _check_run_id(run_id)
        branch = BRANCH_PREFIX + run_id
        if not git_ok(project, "show-ref", "--verify", "--quiet", f"refs/heads/{branch}"):
            raise WorkspaceError(f"run {run_id} has no branch {branch}: nothing to resume")
        workspace = cls(
            project,
            run_id,
            start_head=start_head,
            user_branch=user_branch,
            baseline=baseline,
            identity=_identity_env(project),
        )
        root = workspace.root
        if root.is_dir() and root.resolve() in registered_worktrees(project):
            git_bytes(root, "reset", "--quiet", "--hard", f"refs/heads/{branch}")
            git_bytes(root, "clean", "--quiet", "-fd")
        else:
            if root.exists():
                shutil.rmtree(root)
            git_bytes(project, "worktree", "prune")
            git_bytes(project, "worktree", "add", "--quiet", str(root), branch)
        return workspace

    # -- during a run ---------------------------------------------------------------------

    def commit(self, message: str) -> str | None:
        """Commit everything in the worktree (adds, edits, deletions); None if nothing changed."""
        self._require_worktree()
        message = commit_message(message)
        git_bytes(self.root, "add", "--all", "--", ".", *_NEVER_STAGED)
        tree = git_text(self.root, "write-tree")
        head = git_text(self.root, "rev-parse", "--verify", "HEAD^{commit}")
        if tree == git_text(self.root, "rev-parse", f"{head}^{{tree}}"):
            return None
        sha = git_text(
            self.root,
            *("commit-tree", "--no-gpg-sign", tree, "-p", head, "-m", message),
            env=self.identity,
        )
        reflog = f"fixloop: {message.splitlines()[0] if message else ''}"
        git_bytes(self.root, "update-ref", "-m", reflog, f"refs/heads/{self.branch}", sha, head)
        return sha

    def restore(self, paths: Sequence[str], message: str) -> str | None:
        """Put `paths` back as they were at the baseline (removed if they did not exist
        there) and commit that; None if they already were."""
        self._require_worktree()
        at_baseline = set(
            nul_paths(git_bytes(self.root, "ls-tree", "-r", "-z", "--name-only", self.baseline))
        )
        kept = [path for path in paths if path in at_baseline]
        if kept:
            git_bytes(self.root, "checkout", "--quiet", self.baseline, "--", *kept)
        for path in paths:
            if path not in at_baseline:
                (self.root / path).unlink(missing_ok=True)
        return self.commit(message)

    def unchanged(self) -> bool:
        """Whether the run's branch is still at its baseline: the run committed nothing."""
        return self.tip() == self.baseline

    def diff(self, rev: str, base: str | None = None) -> str:
        """The unified diff of `rev` against its parent (or against `base`), without colour.

        Read in the project, whose object store the worktree shares: the run's end removes the
        worktree while the app may still be reading the change it brings.
        """
        out = git_bytes(self.project, "diff-tree", *_DIFF_OPTIONS, *self._range(rev, base))
        return out.decode("utf-8", "replace")

    def changed_files(self, rev: str, base: str | None = None) -> list[str]:
        """Paths `rev` adds, changes or deletes relative to its parent (or to `base`)."""
        args = ("diff-tree", "-r", "--no-commit-id", "--name-only", "-z", "--no-renames")
        out = git_bytes(self.project, *args, *self._range(rev, base))
        return nul_paths(out)

    # -- ending a run ---------------------------------------------------------------------

    def keep(self) -> None:
        """Remove the worktree directory but keep branch `fixloop/<run>`. Idempotent."""
        remove_worktree(self.project, self.root)

    def discard(self) -> None:
        """Remove the worktree and delete branch `fixloop/<run>`. Idempotent."""
        remove_worktree(self.project, self.root)
        delete_branch(self.project, self.branch)

    # -- helpers --------------------------------------------------------------------------

    def tip(self) -> str:
        """The run branch's newest commit."""
        return git_text(
            self.project, "rev-parse", "--verify", f"refs/heads/{self.branch}^{{commit}}"
        )

    def _range(self, rev: str, base: str | None) -> tuple[str, ...]:
        if base is not None:
            return (commit_of(self.project, base), commit_of(self.project, rev))
        return ("--root", "--no-commit-id", commit_of(self.project, rev))

    def _require_worktree(self) -> None:
        if not self.root.is_dir():
            raise WorkspaceError(
                f"the worktree of run {self.run_id} was removed ({self.root}); "
                f"start a new run, or check out branch {self.branch} yourself"
            )


_DIFF_OPTIONS = (
    "-p",
    "-M",
    "--no-color",
    "--no-ext-diff",
    "--src-prefix=a/",
    "--dst-prefix=b/",
)


# -- checking the project -----------------------------------------------------------------


def project_root(project: Path) -> Path:
    """The project's resolved path, if it is the top level of a git work tree with commits;
    else a WorkspaceError that says what to do (the path to use, when it is a subdirectory).
    Cheap (a few git calls): the task screen asks it before checking the project."""
    if not project.is_dir():
        raise WorkspaceError(f"{project} is not a directory; point fixloop at the project's root")
    if not git_ok(project, "rev-parse", "--git-dir"):
        raise WorkspaceError(
            f"{project} is not a git repository; run `git init` and commit, "
            f"or point fixloop at the project's root"
        )
    if git_text(project, "rev-parse", "--is-bare-repository") == "true":
        raise WorkspaceError(
            f"{project} is a bare git repository (it has no working tree); "
            f"point fixloop at a clone with a working tree"
        )
    if git_text(project, "rev-parse", "--is-inside-work-tree") != "true":
        raise WorkspaceError(
            f"{project} is inside git's own directory; point fixloop at the project's root"
        )
    toplevel = Path(git_text(project, "rev-parse", "--show-toplevel")).resolve()
    superproject = git_text(project, "rev-parse", "--show-superproject-working-tree")
    if superproject:
        raise WorkspaceError(
            f"{project} is inside the submodule {toplevel}; point fixloop at the top level of "
            f"the superproject, {Path(superproject).resolve()} (or at a clone of the submodule)"
        )
    resolved = project.resolve()
    if resolved != toplevel:
        raise WorkspaceError(
            f"{project} is not the top level of its git work tree; point fixloop at {toplevel}"
        )
    if not git_ok(resolved, "rev-parse", "--verify", "--quiet", "HEAD^{commit}"):
        raise WorkspaceError(
            f"{project} has no commits yet; commit your work first "
            f"(`git add -A && git commit -m initial`), then start fixloop again"
        )
    return resolved


def _refuse_required_filters(project: Path) -> None:
    """A filter driver the repository's config names is never run on the host, so a file
    that needs one (`required`) would be committed unfiltered: refused before the run."""
    needed = required_filters(project)
    if needed:
        name = needed[0]
        raise WorkspaceError(
            f"files in HEAD need git filter {name!r}, which the repository's own config defines "
            f"as required, and fixloop never runs a program a repository's config names: "
            f"define the filter in your global git config (`git config --global "
            f"filter.{name}.clean ...`) and remove it from the repository's "
            f"(`git config --local --remove-section filter.{name}`)"
        )


def _check_run_id(run_id: str) -> None:
    if not _RUN_ID.fullmatch(run_id) or ".." in run_id or run_id.endswith(".lock"):
        raise WorkspaceError(
            f"{run_id!r} cannot name a run; use letters, digits, '.', '_' and '-' only"
        )


def _identity_env(project: Path) -> dict[str, str]:
    """A fixed identity for whatever the user has not configured (git refuses to commit without)."""
    env: dict[str, str] = {}
    name = git_ok(project, "config", "--get", "user.name")
    email = git_ok(project, "config", "--get", "user.email")
    for role in ("AUTHOR", "COMMITTER"):
        if not name and f"GIT_{role}_NAME" not in os.environ:
            env[f"GIT_{role}_NAME"] = FALLBACK_NAME
        if not email and f"GIT_{role}_EMAIL" not in os.environ and "EMAIL" not in os.environ:
            env[f"GIT_{role}_EMAIL"] = FALLBACK_EMAIL
    return env


def _current_branch(project: Path) -> str | None:
    status, out = run_git(project, "symbolic-ref", "--quiet", "--short", "HEAD", ok=(0, 1))
    return out.decode().strip() if status == 0 else None


def _baseline_commit(project: Path, head: str, identity: Mapping[str, str]) -> str:
    """HEAD plus everything `git status` shows, as a commit; HEAD itself if the tree is clean.

    A scratch copy of the user's index takes the snapshot (the copy knows which files are
    tracked, and their stat data spares rehashing), so the user's own index is only read.
    """
    user_index = Path(
        git_text(project, "rev-parse", "--path-format=absolute", "--git-path", "index")
    )
    with scratch_index(copy_of=user_index) as env:
        if not user_index.is_file():  # tracked files must stay tracked even if now ignored
            git_bytes(project, "read-tree", head, env=env)
        args = ("-c", "core.splitIndex=false", "add", "--all", "--", ".", *_NEVER_STAGED)
        git_bytes(project, *args, env=env)
        tree = git_text(project, "write-tree", env=env)
    if tree == tree_of(project, head):
        return head
    commit = ("commit-tree", "--no-gpg-sign", tree, "-p", head, "-m", BASELINE_MESSAGE)
    return git_text(project, *commit, env=identity)
