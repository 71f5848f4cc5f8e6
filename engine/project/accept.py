"""Accepting a run: its changes squashed onto the user's branch as one commit, and written into
their checkout and index only where the run changed a file and the user did not.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from engine.errors import WorkspaceError
from engine.project.git_plumbing import (
    commit_message,
    git_bytes,
    git_ok,
    git_text,
    nul_paths,
    run_git,
    scratch_index,
    tree_of,
)
from engine.project.workspace import Workspace

_IN_PROGRESS = ("MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD", "rebase-merge", "rebase-apply")


_DISCARD = "use discard to drop the run"


@dataclass(frozen=True)
class _Entry:
    """One path as git stores it: mode and object id."""

    mode: str
    sha: str


@dataclass(frozen=True)
class _CheckoutUpdate:
    """A path the run changed: its new content in the user's working tree and index."""

    path: str
    file: _Entry | None  # None: delete the file
    index: _Entry | None  # None: drop the index entry


def accept_run(ws: Workspace, message: str) -> str:
    """Squash the run onto the user's branch as one commit; return that commit's sha.

    Only the run's own changes (baseline..tip) are committed: the user's uncommitted work
    stays uncommitted. The user's files are updated only where the run changed them and
    the user did not. Anything in the way refuses the whole accept and changes nothing.
    """
    keep_hint = f"the result stays on branch {ws.branch}"
    if not git_ok(ws.project, "show-ref", "--verify", "--quiet", f"refs/heads/{ws.branch}"):
        raise WorkspaceError(f"branch {ws.branch} is gone, so there is nothing to accept")
    if ws.user_branch is None:
        raise WorkspaceError(
            f"the run started on a detached HEAD, so there is no branch to accept onto; "
            f"use keep ({keep_hint}) and merge or cherry-pick it where you want it"
        )
    ref = f"refs/heads/{ws.user_branch}"
    _check_user_is_on(ws, ref, keep_hint)
    user_tip = git_text(ws.project, "rev-parse", "--verify", f"{ref}^{{commit}}")
    run_tip = ws.tip()
    if tree_of(ws.project, run_tip) == tree_of(ws.project, ws.baseline):
        raise WorkspaceError(f"the run changed nothing, so there is nothing to accept; {_DISCARD}")

    merged = _merge_onto(ws, user_tip, run_tip, keep_hint)
    if merged == tree_of(ws.project, user_tip):
        raise WorkspaceError(f"{ws.user_branch} already has all of the run's changes; {_DISCARD}")
    updates = _plan_checkout_updates(ws, user_tip, run_tip, merged, keep_hint)

    sha = git_text(
        *(ws.project, "commit-tree", merged, "-p", user_tip),
        *("-m", commit_message(message)),
        env=ws.identity,
    )
    reflog = f"fixloop: accept run {ws.run_id}"
    git_bytes(ws.project, "update-ref", "-m", reflog, ref, sha, user_tip)
    _apply_checkout_updates(ws.project, updates)
    ws.discard()
    return sha


def _check_user_is_on(ws: Workspace, ref: str, keep_hint: str) -> None:
    for marker in _IN_PROGRESS:
        where = git_text(ws.project, "rev-parse", "--path-format=absolute", "--git-path", marker)
        if Path(where).exists():
            raise WorkspaceError(
                f"a merge, rebase, cherry-pick or revert is in progress in {ws.project}; "
                f"finish or abort it, then accept again ({keep_hint})"
            )
    status, out = run_git(ws.project, "symbolic-ref", "--quiet", "HEAD", ok=(0, 1))
    now = out.decode().strip() if status == 0 else None
    if now != ref:
        where = f"on {now.removeprefix('refs/heads/')}" if now else "on a detached HEAD"
        raise WorkspaceError(
            f"you are now {where}, but the run started on {ws.user_branch}; switch back "
            f"(`git switch {ws.user_branch}`) and accept again, or use keep ({keep_hint})"
        )


def _merge_onto(ws: Workspace, user_tip: str, run_tip: str, keep_hint: str) -> str:
    """The tree of the run's changes (baseline..run_tip) applied to `user_tip`."""
    # git 2.39's merge-tree has no --merge-base: a throwaway commit with the user's tree on
    # top of the baseline makes the baseline the merge base, so the user's uncommitted
    # changes (which the baseline holds) count as theirs to drop, not the run's to keep.
    helper = git_text(
        ws.project,
        *("commit-tree", "--no-gpg-sign", tree_of(ws.project, user_tip), "-p", ws.baseline),
        *("-m", "fixloop: merge helper"),
        env=ws.identity,
    )
    status, out = run_git(
        ws.project,
        *("merge-tree", "--write-tree", "--name-only", "--no-messages", "-z", helper, run_tip),
        ok=(0, 1),
    )
    tree, *conflicts = nul_paths(out)
    if status == 0:
        return tree
    files = _names(dict.fromkeys(conflicts))
    if user_tip == ws.start_head:
        raise WorkspaceError(
            f"the run's changes to {files} build on your uncommitted changes there; commit "
            f"those first, then accept again ({keep_hint})"
        )
    raise WorkspaceError(
        f"your branch {ws.user_branch} moved and conflicts with the run in {files}; "
        f"{keep_hint} (merge it yourself, or use keep)"
    )


def _plan_checkout_updates(
    ws: Workspace, user_tip: str, run_tip: str, merged: str, keep_hint: str
) -> list[_CheckoutUpdate]:
    """What to write to the user's files and index for each path the run changed."""
    paths = ws.changed_files(run_tip, ws.baseline)
    at_start = _tree_entries(ws.project, ws.start_head, paths)
    at_tip = _tree_entries(ws.project, user_tip, paths)
    baseline = _tree_entries(ws.project, ws.baseline, paths)
    run = _tree_entries(ws.project, run_tip, paths)
    new = _tree_entries(ws.project, merged, paths)
    index = _index_entries(ws.project, paths)
    files = _working_entries(ws.project, paths)
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
            f"your branch {ws.user_branch} changed {_names(moved)} since the run started, "
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


# -- reading and writing the user's checkout ----------------------------------------


def _tree_entries(cwd: Path, rev: str, paths: Sequence[str]) -> dict[str, _Entry]:
    if not paths:
        return {}
    out = git_bytes(
        cwd, "--literal-pathspecs", "ls-tree", "-r", "-z", "--full-tree", rev, "--", *paths
    )
    entries: dict[str, _Entry] = {}
    for record in nul_paths(out):
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
    out = git_bytes(cwd, "--literal-pathspecs", "ls-files", "--stage", "-z", "--", *paths, env=env)
    wanted = set(paths)
    entries: dict[str, tuple[tuple[_Entry, int], ...]] = {}
    for record in nul_paths(out):
        meta, path = record.split("\t", 1)
        if path not in wanted:  # a pathspec also matches files below a directory
            continue
        mode, sha, stage = meta.split(" ")
        entries[path] = (*entries.get(path, ()), (_Entry(mode, sha), int(stage)))
    return entries


def _working_entries(project: Path, paths: Sequence[str]) -> dict[str, _Entry]:
    """How git would store each path as it is in the user's working tree now (absent: missing)."""
    with scratch_index() as env:
        args = ("--literal-pathspecs", "update-index", "--add", "--remove", "--", *paths)
        git_bytes(project, *args, env=env)
        entries = _index_entries(project, paths, env=env)
    return {path: staged[0][0] for path, staged in entries.items()}


def _apply_checkout_updates(project: Path, updates: Iterable[_CheckoutUpdate]) -> None:
    updates = list(updates)
    writes = [u for u in updates if u.file is not None]
    if writes:  # checkout-index from a scratch index applies modes, symlinks and smudge filters
        with scratch_index() as env:
            for u in writes:
                assert u.file is not None
                cacheinfo = f"{u.file.mode},{u.file.sha},{u.path}"
                git_bytes(project, "update-index", "--add", "--cacheinfo", cacheinfo, env=env)
            paths = (u.path for u in writes)
            git_bytes(
                project, "--literal-pathspecs", "checkout-index", "--force", "--", *paths, env=env
            )
    for u in updates:
        if u.file is None:
            _remove_file(project, u.path)
        if u.index == u.file:  # take stat data from the file just written: shows as clean
            git_bytes(
                project, "--literal-pathspecs", "update-index", "--add", "--remove", "--", u.path
            )
        elif u.index is None:
            git_bytes(
                project, "--literal-pathspecs", "update-index", "--force-remove", "--", u.path
            )
        else:
            cacheinfo = f"{u.index.mode},{u.index.sha},{u.path}"
            git_bytes(project, "update-index", "--add", "--cacheinfo", cacheinfo)


def _remove_file(project: Path, path: str) -> None:
    """Delete a file and the directories it leaves empty, as git does."""
    target = project / path
    if target.is_symlink() or target.is_file():
        target.unlink()
    parent = target.parent
    while parent != project and parent.is_dir() and not any(parent.iterdir()):
        parent.rmdir()
        parent = parent.parent


def _names(paths: Iterable[str]) -> str:
    return ", ".join(paths)
