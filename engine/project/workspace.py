"""The run's git worktree: where the loop edits, commits and rolls back (ARCHITECTURE.md,
"Settings and files on disk").

The user's checkout, index and branch are never touched while a run is live; only `accept`
writes there, and only the files the run changed, after checking the user left them alone.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import git

from engine.project.paths import FIXLOOP_DIR, ensure_fixloop_dir, worktree_path, worktrees_dir
from engine.verify.pins import TestPins
from sandbox.errors import FixloopError

BRANCH_PREFIX = "fixloop/"
BASELINE_MESSAGE = "fixloop[baseline]: your uncommitted changes"
FALLBACK_NAME = "fixloop"
FALLBACK_EMAIL = "fixloop@localhost"
_SUBJECT_WIDTH = 72
_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
# The user's hooks must not run (or prompt) for the loop's own bookkeeping.
_NO_HOOKS = ("-c", f"core.hooksPath={os.devnull}")
# Never part of a snapshot: fixloop's own directory, and bytecode that test runs leave behind
# in projects that do not ignore it (it would otherwise land in every iteration's commit).
_NEVER_STAGED = (
    f":(exclude){FIXLOOP_DIR}",
    ":(exclude,glob)**/__pycache__/**",
    ":(exclude,glob)**/*.py[co]",
)
_IN_PROGRESS = ("MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD", "rebase-merge", "rebase-apply")


class WorkspaceError(FixloopError):
    """The project cannot host a run, or a run's result cannot be applied as asked."""


@dataclass(frozen=True)
class _Entry:
    """One path as git stores it: mode and object id."""

    mode: str
    sha: str


def iteration_message(n: int, max_n: int, explanation: str) -> str:
    """`fixloop[iter N/M]: <first line of the explanation>`, one line, clipped to fit a log."""
    return f"fixloop[iter {n}/{max_n}]: {_subject(explanation, '(no explanation)')}"


def accept_message(task: str, run_id: str, branch: str) -> str:
    """The squashed commit's message: the task as its subject, where it came from below."""
    return f"{_subject(task, 'fixloop run')}\n\nSquashed from {branch} (fixloop run {run_id})."


def _subject(text: str, empty: str) -> str:
    """The first non-blank line of `text`, spaces collapsed, clipped to fit a log line."""
    lines = (line.strip() for line in text.splitlines())
    subject = " ".join(next((line for line in lines if line), "").split()) or empty
    if len(subject) > _SUBJECT_WIDTH:
        subject = subject[: _SUBJECT_WIDTH - 3].rstrip() + "..."
    return subject


def list_worktrees(project: Path) -> list[str]:
    """Run ids that still have a live worktree under `<project>/.fixloop/worktrees`."""
    home = worktrees_dir(project).resolve()
    return sorted(
        path.name
        for path in _registered_worktrees(project)
        if path.parent == home and path.is_dir()
    )


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
        self._identity = dict(_identity_env(project) if identity is None else identity)

    # -- starting a run -------------------------------------------------------------------

    @classmethod
    def create(cls, project: Path, run_id: str) -> Workspace:
        """A worktree on new branch `fixloop/<run_id>`: HEAD plus the user's uncommitted work."""
        project = _check_project(project)
        _check_run_id(run_id)
        branch = BRANCH_PREFIX + run_id
        root = worktree_path(project, run_id)
        if _ok(project, "show-ref", "--verify", "--quiet", f"refs/heads/{branch}"):
            raise WorkspaceError(
                f"branch {branch} already exists; pick another run id, or delete the old run's "
                f"branch (`git branch -D {branch}`)"
            )
        if root.exists() or root.is_symlink():
            raise WorkspaceError(
                f"{root} already exists; pick another run id, or remove it "
                f"(`git worktree remove --force {root}`)"
            )
        ensure_fixloop_dir(project)
        identity = _identity_env(project)
        start_head = _out(project, "rev-parse", "--verify", "HEAD^{commit}")
        user_branch = _current_branch(project)
        baseline = _baseline_commit(project, start_head, identity)
        try:
            _git(project, "worktree", "add", "--quiet", "-b", branch, str(root), baseline)
        except WorkspaceError:
            _remove_worktree(project, root)
            _delete_branch(project, branch)
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
        project = _check_project(project)
        _check_run_id(run_id)
        branch = BRANCH_PREFIX + run_id
        if not _ok(project, "show-ref", "--verify", "--quiet", f"refs/heads/{branch}"):
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
        if root.is_dir() and root.resolve() in _registered_worktrees(project):
            _git(root, "reset", "--quiet", "--hard", f"refs/heads/{branch}")
            _git(root, "clean", "--quiet", "-fd")
        else:
            if root.exists():
                shutil.rmtree(root)
            _git(project, "worktree", "prune")
            _git(project, "worktree", "add", "--quiet", str(root), branch)
        return workspace

    # -- during a run ---------------------------------------------------------------------

    def commit(self, message: str) -> str | None:
        """Commit everything in the worktree (adds, edits, deletions); None if nothing changed."""
        self._require_worktree()
        _git(self.root, "add", "--all", "--", ".", *_NEVER_STAGED)
        tree = _out(self.root, "write-tree")
        head = _out(self.root, "rev-parse", "--verify", "HEAD^{commit}")
        if tree == _out(self.root, "rev-parse", f"{head}^{{tree}}"):
            return None
        sha = _out(
            self.root,
            *("commit-tree", "--no-gpg-sign", tree, "-p", head, "-m", message),
            env=self._identity,
        )
        reflog = f"fixloop: {message.splitlines()[0] if message else ''}"
        _git(self.root, "update-ref", "-m", reflog, f"refs/heads/{self.branch}", sha, head)
        return sha

    def diff(self, rev: str, base: str | None = None) -> str:
        """The unified diff of `rev` against its parent (or against `base`), without colour."""
        out = _git(self._cwd(), "diff-tree", *_DIFF_OPTIONS, *self._range(rev, base))
        return out.decode("utf-8", "replace")

    def changed_files(self, rev: str, base: str | None = None) -> list[str]:
        """Paths `rev` adds, changes or deletes relative to its parent (or to `base`)."""
        args = ("diff-tree", "-r", "--no-commit-id", "--name-only", "-z", "--no-renames")
        out = _git(self._cwd(), *args, *self._range(rev, base))
        return _paths(out)

    def rollback(self, to: str) -> str:
        """Make the worktree equal to commit `to` again, recorded as a new commit."""
        self._require_worktree()
        sha = _resolve(self.root, to)
        tip = self._tip()
        if not (_is_ancestor(self.root, self.baseline, sha) and _is_ancestor(self.root, sha, tip)):
            raise WorkspaceError(
                f"{to} is not a commit of this run (branch {self.branch} since its baseline "
                f"{self.baseline[:12]}); roll back to one of the run's own commits"
            )
        _git(self.root, "read-tree", "-u", "--reset", sha)
        _git(self.root, "clean", "-d", "--force", "--quiet")  # files the run added since `to`
        short = _out(self.root, "rev-parse", "--short", sha)
        return self.commit(f"fixloop[rollback]: back to {short}") or tip

    # -- ending a run ---------------------------------------------------------------------

    def accept(self, message: str) -> str:
        """Squash the run onto the user's branch as one commit; return that commit's sha.

        Only the run's own changes (baseline..tip) are committed: the user's uncommitted work
        stays uncommitted. The user's files are updated only where the run changed them and
        the user did not. Anything in the way refuses the whole accept and changes nothing.
        """
        keep_hint = f"the result stays on branch {self.branch}"
        if not _ok(self.project, "show-ref", "--verify", "--quiet", f"refs/heads/{self.branch}"):
            raise WorkspaceError(f"branch {self.branch} is gone, so there is nothing to accept")
        if self.user_branch is None:
            raise WorkspaceError(
                f"the run started on a detached HEAD, so there is no branch to accept onto; "
                f"use keep ({keep_hint}) and merge or cherry-pick it where you want it"
            )
        ref = f"refs/heads/{self.user_branch}"
        self._check_user_is_on(ref, keep_hint)
        user_tip = _out(self.project, "rev-parse", "--verify", f"{ref}^{{commit}}")
        run_tip = self._tip()
        if _tree(self.project, run_tip) == _tree(self.project, self.baseline):
            raise WorkspaceError(
                f"the run changed nothing, so there is nothing to accept; {_DISCARD}"
            )

        merged = self._merge_onto(user_tip, run_tip, keep_hint)
        if merged == _tree(self.project, user_tip):
            raise WorkspaceError(
                f"{self.user_branch} already has all of the run's changes; {_DISCARD}"
            )
        updates = self._plan_checkout_updates(user_tip, run_tip, merged, keep_hint)

        sha = _out(
            self.project, "commit-tree", merged, "-p", user_tip, "-m", message, env=self._identity
        )
        reflog = f"fixloop: accept run {self.run_id}"
        _git(self.project, "update-ref", "-m", reflog, ref, sha, user_tip)
        _apply_checkout_updates(self.project, updates)
        self.discard()
        return sha

    def keep(self) -> None:
        """Remove the worktree directory but keep branch `fixloop/<run>`. Idempotent."""
        _remove_worktree(self.project, self.root)

    def discard(self) -> None:
        """Remove the worktree and delete branch `fixloop/<run>`. Idempotent."""
        _remove_worktree(self.project, self.root)
        _delete_branch(self.project, self.branch)

    # -- helpers --------------------------------------------------------------------------

    def _cwd(self) -> Path:
        return self.root if self.root.is_dir() else self.project

    def _tip(self) -> str:
        return _out(self.project, "rev-parse", "--verify", f"refs/heads/{self.branch}^{{commit}}")

    def _range(self, rev: str, base: str | None) -> tuple[str, ...]:
        if base is not None:
            return (_resolve(self._cwd(), base), _resolve(self._cwd(), rev))
        return ("--root", "--no-commit-id", _resolve(self._cwd(), rev))

    def _require_worktree(self) -> None:
        if not self.root.is_dir():
            raise WorkspaceError(
                f"the worktree of run {self.run_id} was removed ({self.root}); "
                f"start a new run, or check out branch {self.branch} yourself"
            )

    def _check_user_is_on(self, ref: str, keep_hint: str) -> None:
        for marker in _IN_PROGRESS:
            where = _out(self.project, "rev-parse", "--path-format=absolute", "--git-path", marker)
            if Path(where).exists():
                raise WorkspaceError(
                    f"a merge, rebase, cherry-pick or revert is in progress in {self.project}; "
                    f"finish or abort it, then accept again ({keep_hint})"
                )
        status, out = _run(self.project, "symbolic-ref", "--quiet", "HEAD", ok=(0, 1))
        now = out.decode().strip() if status == 0 else None
        if now != ref:
            where = f"on {now.removeprefix('refs/heads/')}" if now else "on a detached HEAD"
            raise WorkspaceError(
                f"you are now {where}, but the run started on {self.user_branch}; switch back "
                f"(`git switch {self.user_branch}`) and accept again, or use keep ({keep_hint})"
            )

    def _merge_onto(self, user_tip: str, run_tip: str, keep_hint: str) -> str:
        """The tree of the run's changes (baseline..run_tip) applied to `user_tip`."""
        # git 2.39's merge-tree has no --merge-base: a throwaway commit with the user's tree on
        # top of the baseline makes the baseline the merge base, so the user's uncommitted
        # changes (which the baseline holds) count as theirs to drop, not the run's to keep.
        helper = _out(
            self.project,
            *("commit-tree", "--no-gpg-sign", _tree(self.project, user_tip), "-p", self.baseline),
            *("-m", "fixloop: merge helper"),
            env=self._identity,
        )
        status, out = _run(
            self.project,
            *("merge-tree", "--write-tree", "--name-only", "--no-messages", "-z", helper, run_tip),
            ok=(0, 1),
        )
        tree, *conflicts = _paths(out)
        if status == 0:
            return tree
        files = _names(dict.fromkeys(conflicts))
        if user_tip == self.start_head:
            raise WorkspaceError(
                f"the run's changes to {files} build on your uncommitted changes there; commit "
                f"those first, then accept again ({keep_hint})"
            )
        raise WorkspaceError(
            f"your branch {self.user_branch} moved and conflicts with the run in {files}; "
            f"{keep_hint} (merge it yourself, or use keep)"
        )

    def _plan_checkout_updates(
        self, user_tip: str, run_tip: str, merged: str, keep_hint: str
    ) -> list[_CheckoutUpdate]:
        """What to write to the user's files and index for each path the run changed."""
        paths = self.changed_files(run_tip, self.baseline)
        at_start = _tree_entries(self.project, self.start_head, paths)
        at_tip = _tree_entries(self.project, user_tip, paths)
        baseline = _tree_entries(self.project, self.baseline, paths)
        run = _tree_entries(self.project, run_tip, paths)
        new = _tree_entries(self.project, merged, paths)
        index = _index_entries(self.project, paths)
        files = _working_entries(self.project, paths)
        updates: list[_CheckoutUpdate] = []
        edited: list[str] = []
        moved: list[str] = []
        staged: list[str] = []
        for path in paths:
            was, now, entries = baseline.get(path), files.get(path), index.get(path, ())
            if len(entries) > 1 or (len(entries) == 1 and entries[0][1] != 0):
                staged.append(path)  # unmerged
                continue
            in_index = entries[0][0] if entries else None
            if now == in_index == at_tip.get(path):  # clean now: take the merged result
                updates.append(_CheckoutUpdate(path, new.get(path), new.get(path)))
            elif now != was:
                edited.append(path)
            elif at_tip.get(path) != at_start.get(path):
                moved.append(path)
            elif in_index not in (at_start.get(path), was):
                staged.append(path)  # partly staged: no single right answer
            else:  # untouched since the start: the run's file; the index keeps what was staged
                index_to = new.get(path) if in_index == at_start.get(path) else run.get(path)
                updates.append(_CheckoutUpdate(path, run.get(path), index_to))
        if edited:
            raise WorkspaceError(
                f"you changed {_names(edited)} since the run started, and the run changed "
                f"{'it' if len(edited) == 1 else 'them'} too; nothing was changed: save your "
                f"edits elsewhere and accept again, or use keep ({keep_hint})"
            )
        if moved:
            raise WorkspaceError(
                f"your branch {self.user_branch} changed {_names(moved)} since the run started, "
                f"and you have uncommitted changes there; commit or stash them and accept "
                f"again, or use keep ({keep_hint})"
            )
        if staged:
            raise WorkspaceError(
                f"your index has changes to {_names(staged)} that cannot be combined with the "
                f"run's; commit or unstage them (`git restore --staged <file>`) and accept "
                f"again, or use keep ({keep_hint})"
            )
        return updates


_DISCARD = "use discard to drop the run"
_DIFF_OPTIONS = (
    "-p",
    "-M",
    "--no-color",
    "--no-ext-diff",
    "--src-prefix=a/",
    "--dst-prefix=b/",
)


@dataclass(frozen=True)
class _CheckoutUpdate:
    """A path the run changed: its new content in the user's working tree and index."""

    path: str
    file: _Entry | None  # None: delete the file
    index: _Entry | None  # None: drop the index entry


# -- checking the project -----------------------------------------------------------------


def _check_project(project: Path) -> Path:
    """The project's resolved path, if it is the top level of a git work tree with commits."""
    if not project.is_dir():
        raise WorkspaceError(f"{project} is not a directory; point fixloop at the project's root")
    if not _ok(project, "rev-parse", "--git-dir"):
        raise WorkspaceError(
            f"{project} is not a git repository; run `git init` and commit, "
            f"or point fixloop at the project's root"
        )
    if _out(project, "rev-parse", "--is-bare-repository") == "true":
        raise WorkspaceError(
            f"{project} is a bare git repository (it has no working tree); "
            f"point fixloop at a clone with a working tree"
        )
    if _out(project, "rev-parse", "--is-inside-work-tree") != "true":
        raise WorkspaceError(
            f"{project} is inside git's own directory; point fixloop at the project's root"
        )
    toplevel = Path(_out(project, "rev-parse", "--show-toplevel")).resolve()
    superproject = _out(project, "rev-parse", "--show-superproject-working-tree")
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
    if not _ok(resolved, "rev-parse", "--verify", "--quiet", "HEAD^{commit}"):
        raise WorkspaceError(
            f"{project} has no commits yet; commit your work first "
            f"(`git add -A && git commit -m initial`), then start fixloop again"
        )
    return resolved


def _check_run_id(run_id: str) -> None:
    if not _RUN_ID.fullmatch(run_id) or ".." in run_id or run_id.endswith(".lock"):
        raise WorkspaceError(
            f"{run_id!r} cannot name a run; use letters, digits, '.', '_' and '-' only"
        )


def _identity_env(project: Path) -> dict[str, str]:
    """A fixed identity for whatever the user has not configured (git refuses to commit without)."""
    env: dict[str, str] = {}
    name = _ok(project, "config", "--get", "user.name")
    email = _ok(project, "config", "--get", "user.email")
    for role in ("AUTHOR", "COMMITTER"):
        if not name and f"GIT_{role}_NAME" not in os.environ:
            env[f"GIT_{role}_NAME"] = FALLBACK_NAME
        if not email and f"GIT_{role}_EMAIL" not in os.environ and "EMAIL" not in os.environ:
            env[f"GIT_{role}_EMAIL"] = FALLBACK_EMAIL
    return env


def _current_branch(project: Path) -> str | None:
    status, out = _run(project, "symbolic-ref", "--quiet", "--short", "HEAD", ok=(0, 1))
    return out.decode().strip() if status == 0 else None


def _baseline_commit(project: Path, head: str, identity: Mapping[str, str]) -> str:
    """HEAD plus everything `git status` shows, as a commit; HEAD itself if the tree is clean.

    A scratch copy of the user's index takes the snapshot (the copy knows which files are
    tracked, and their stat data spares rehashing), so the user's own index is only read.
    """
    user_index = Path(_out(project, "rev-parse", "--path-format=absolute", "--git-path", "index"))
    with _scratch_index(copy_of=user_index) as env:
        if not user_index.is_file():  # tracked files must stay tracked even if now ignored
            _git(project, "read-tree", head, env=env)
        args = ("-c", "core.splitIndex=false", "add", "--all", "--", ".", *_NEVER_STAGED)
        _git(project, *args, env=env)
        tree = _out(project, "write-tree", env=env)
    if tree == _tree(project, head):
        return head
    commit = ("commit-tree", "--no-gpg-sign", tree, "-p", head, "-m", BASELINE_MESSAGE)
    return _out(project, *commit, env=identity)


# -- reading and writing the user's checkout at accept ------------------------------------


def _tree_entries(cwd: Path, rev: str, paths: Sequence[str]) -> dict[str, _Entry]:
    if not paths:
        return {}
    out = _git(cwd, "--literal-pathspecs", "ls-tree", "-r", "-z", "--full-tree", rev, "--", *paths)
    entries: dict[str, _Entry] = {}
    for record in _paths(out):
        meta, path = record.split("\t", 1)
        mode, _, sha = meta.split(" ")
        entries[path] = _Entry(mode, sha)
    return entries


def _index_entries(
    cwd: Path, paths: Sequence[str], env: Mapping[str, str] | None = None
) -> dict[str, tuple[tuple[_Entry, int], ...]]:
    """Index entries per path, with their stage (more than one, or stage > 0: unmerged)."""
    if not paths:
        return {}
    out = _git(cwd, "--literal-pathspecs", "ls-files", "--stage", "-z", "--", *paths, env=env)
    wanted = set(paths)
    entries: dict[str, tuple[tuple[_Entry, int], ...]] = {}
    for record in _paths(out):
        meta, path = record.split("\t", 1)
        if path not in wanted:  # a pathspec also matches files below a directory
            continue
        mode, sha, stage = meta.split(" ")
        entries[path] = (*entries.get(path, ()), (_Entry(mode, sha), int(stage)))
    return entries


def _working_entries(project: Path, paths: Sequence[str]) -> dict[str, _Entry]:
    """How git would store each path as it is in the user's working tree now (absent: missing)."""
    with _scratch_index() as env:
        args = ("--literal-pathspecs", "update-index", "--add", "--remove", "--", *paths)
        _git(project, *args, env=env)
        entries = _index_entries(project, paths, env=env)
    return {path: staged[0][0] for path, staged in entries.items()}


def _apply_checkout_updates(project: Path, updates: Iterable[_CheckoutUpdate]) -> None:
    updates = list(updates)
    writes = [u for u in updates if u.file is not None]
    if writes:  # checkout-index from a scratch index applies modes, symlinks and smudge filters
        with _scratch_index() as env:
            for u in writes:
                assert u.file is not None
                cacheinfo = f"{u.file.mode},{u.file.sha},{u.path}"
                _git(project, "update-index", "--add", "--cacheinfo", cacheinfo, env=env)
            paths = (u.path for u in writes)
            _git(project, "--literal-pathspecs", "checkout-index", "--force", "--", *paths, env=env)
    for u in updates:
        if u.file is None:
            _remove_file(project, u.path)
        if u.index == u.file:  # take stat data from the file just written: shows as clean
            _git(project, "--literal-pathspecs", "update-index", "--add", "--remove", "--", u.path)
        elif u.index is None:
            _git(project, "--literal-pathspecs", "update-index", "--force-remove", "--", u.path)
        else:
            cacheinfo = f"{u.index.mode},{u.index.sha},{u.path}"
            _git(project, "update-index", "--add", "--cacheinfo", cacheinfo)


def _remove_file(project: Path, path: str) -> None:
    """Delete a file and the directories it leaves empty, as git does."""
    target = project / path
    if target.is_symlink() or target.is_file():
        target.unlink()
    parent = target.parent
    while parent != project and parent.is_dir() and not any(parent.iterdir()):
        parent.rmdir()
        parent = parent.parent


# -- running git ---------------------------------------------------------------------------


@contextmanager
def _scratch_index(copy_of: Path | None = None) -> Iterator[dict[str, str]]:
    """An environment pointing git at a throwaway index file (optionally a copy of another)."""
    with tempfile.TemporaryDirectory(prefix="fixloop-index-") as scratch:
        index = Path(scratch) / "index"
        if copy_of is not None and copy_of.is_file():
            shutil.copyfile(copy_of, index)
        yield {"GIT_INDEX_FILE": str(index)}


def _run(
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


def _git(cwd: Path, *args: str, env: Mapping[str, str] | None = None) -> bytes:
    return _run(cwd, *args, env=env)[1]


def _out(cwd: Path, *args: str, env: Mapping[str, str] | None = None) -> str:
    return os.fsdecode(_git(cwd, *args, env=env)).rstrip("\n")


def _ok(cwd: Path, *args: str) -> bool:
    """Whether a git query answers yes (exit 0); any other status means no."""
    return _run(cwd, *args, ok=tuple(range(256)))[0] == 0


def _paths(out: bytes) -> list[str]:
    """NUL-separated git output as paths (undecodable bytes survive a round trip)."""
    return [os.fsdecode(item) for item in out.split(b"\0") if item]


def _names(paths: Iterable[str]) -> str:
    return ", ".join(paths)


def _resolve(cwd: Path, rev: str) -> str:
    status, out = _run(cwd, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", ok=(0, 1))
    if status != 0:
        raise WorkspaceError(f"{rev!r} is not a commit in {cwd}; name a commit of the run")
    return out.decode().strip()


def _tree(cwd: Path, rev: str) -> str:
    return _out(cwd, "rev-parse", "--verify", f"{rev}^{{tree}}")


def _is_ancestor(cwd: Path, ancestor: str, rev: str) -> bool:
    return _ok(cwd, "merge-base", "--is-ancestor", ancestor, rev)


def _remove_worktree(project: Path, root: Path) -> None:
    if root.is_dir() and root.resolve() in _registered_worktrees(project):
        _git(project, "worktree", "remove", "--force", "--force", str(root))
    elif root.exists():  # a leftover directory git no longer knows about
        shutil.rmtree(root)
    _git(project, "worktree", "prune")


def _delete_branch(project: Path, branch: str) -> None:
    if _ok(project, "show-ref", "--verify", "--quiet", f"refs/heads/{branch}"):
        _git(project, "branch", "--quiet", "-D", branch)


def _registered_worktrees(project: Path) -> list[Path]:
    out = _git(project, "worktree", "list", "--porcelain", "-z")
    return [
        Path(os.fsdecode(line.removeprefix(b"worktree "))).resolve()
        for line in out.split(b"\0")
        if line.startswith(b"worktree ")
    ]
