"""What fixloop left behind, with sizes, and removing it (`fixloop-tui clean`): a project's runs
with their `fixloop/*` branches and worktrees, the demo's temporary copies, sandbox state of
dead sandboxes, and fixloop's own caches. Listing and removing only; the asking is the
command line's.

Why a hostile repository cannot turn this against the person: a repository controls files
inside the project (it can commit `.fixloop/runs/x -> /home`, or a run directory of its own
making), never the person's branches, caches or runtime directories. So nothing here follows a
symlink: entries are read with lstat, sizes are summed without following links, a link is
never entered and never removed (it is named and left alone: it is no trail fixloop wrote), and
trees are removed with `shutil.rmtree`, which refuses a link and never descends through one. A
run directory counts only when fixloop sealed its `run.json` for this user (`sealed_record`);
any other is left alone. The branch of a run is always `fixloop/<its directory's name>`, that
name checked as a run id and the branch deleted only when git lists it under
`refs/heads/fixloop/`: what a forged `run.json` names is never read for it. Branches and
worktrees go through git (`git worktree remove`, `git branch -D`), each git process with the
repository's hooks and programs off (`git_plumbing.run_git`). Work nobody has decided on (an
undecided, kept, stopped or cut-off run, a branch with no run) is removed only when asked by
name (`include_undecided`), and a run that may still be running never.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from engine.errors import CleanupError, WorkspaceError
from engine.project.git_plumbing import git_bytes, git_ok, registered_worktrees
from engine.project.paths import fixloop_dir, runs_dir, worktree_path, worktrees_dir

Group = Literal["runs", "demos", "sandbox", "caches"]
GROUPS: tuple[Group, ...] = ("runs", "demos", "sandbox", "caches")
BRANCH_PREFIX = "fixloop/"
DEMO_PREFIX = "fixloop-demo-"
# A run that wrote an event this recently may still be running (the embedded model can take
# minutes over one answer): it is never removed, whatever was asked.
MAY_BE_RUNNING_S = 30 * 60
_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
# What each directory of fixloop's cache holds, in the person's words.
CACHE_LABELS = {
    "models": "the embedded model, joined from its installed parts (`fixloop-tui model fetch`)",
    "go-build": "Go build-cache seeds, rebuilt on the next Go verification",
    "bench-projects": "projects `fixloop-tui bench` unpacked",
}


class Leftover(BaseModel):
    """One thing `clean` offers to remove: a run (its directory, worktree and branch go
    together), a branch or worktree with no run, a demo copy, sandbox state, a cache."""

    model_config = ConfigDict(frozen=True)

    group: Group
    name: str
    detail: str
    size: int
    age_s: float
    paths: tuple[str, ...] = ()  # removed as trees (or files), never followed
    worktree: str | None = None  # removed with `git worktree remove`
    branch: str | None = None  # deleted with `git branch -D`
    project: str | None = None  # where git runs for the worktree and branch
    holds_work: bool = False  # not decided on: removed only with include_undecided


class LeftAlone(BaseModel):
    """Something found and not offered, and why."""

    model_config = ConfigDict(frozen=True)

    name: str
    reason: str


class Survey(BaseModel):
    leftovers: list[Leftover]
    left_alone: list[LeftAlone]

    @property
    def size(self) -> int:
        return sum(item.size for item in self.leftovers)


def survey(
    project: Path | None,
    *,
    groups: Iterable[Group] = GROUPS,
    older_than_s: float = 0.0,
    include_undecided: bool = False,
    now: float | None = None,
) -> Survey:
    """Everything fixloop wrote that `groups` cover, oldest activity at least `older_than_s`
    ago; work nobody decided on only with `include_undecided` (else named in `left_alone`)."""
    now = time.time() if now is None else now
    wanted = set(groups)
    found: list[Leftover] = []
    alone: list[LeftAlone] = []
    if "runs" in wanted and project is not None:
        found_runs, alone_runs = project_leftovers(project, now)
        found += found_runs
        alone += alone_runs
    if "demos" in wanted:
        found_demos, alone_demos = demo_copies(now)
        found += found_demos
        alone += alone_demos
    if "sandbox" in wanted:
        found_state, alone_state = sandbox_state(now)
        found += found_state
        alone += alone_state
    if "caches" in wanted:
        found += caches(now)
        alone += engine_storage()
    offered: list[Leftover] = []
    for item in found:
        if item.age_s < older_than_s:
            continue
        if item.holds_work and not include_undecided:
            alone.append(
                LeftAlone(
                    name=item.name,
                    reason=f"{item.detail}: it holds work nobody accepted "
                    "(--include-undecided removes it)",
                )
            )
            continue
        offered.append(item)
    return Survey(leftovers=offered, left_alone=alone)


def remove(item: Leftover) -> None:
    """Remove one leftover: its worktree through git, its branch through git, its trees
    without following a link. CleanupError, in one line, for what could not be removed."""
    try:
        if item.project is not None and item.worktree is not None:
            _remove_worktree(Path(item.project), Path(item.worktree))
        if item.project is not None and item.branch is not None:
            _delete_branch(Path(item.project), item.branch)
        for path in item.paths:
            remove_tree(Path(path))
    except (OSError, WorkspaceError) as exc:
        raise CleanupError(f"could not remove {item.name}: {exc}") from None


def remove_tree(path: Path) -> None:
    """Remove a directory tree or a file that fixloop wrote; a link is refused, never
    followed (rmtree itself refuses a link and never descends through one)."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return
    if stat.S_ISLNK(info.st_mode):
        raise OSError(f"{path} is a link: left alone")
    if stat.S_ISDIR(info.st_mode):
        shutil.rmtree(path)
    else:
        path.unlink()


def tree_size(path: Path) -> int:
    """Bytes in the regular files under `path` (hard links counted once), links not followed."""
    seen: set[tuple[int, int]] = set()
    total = 0
    stack = [path]
    while stack:
        current = stack.pop()
        try:
            info = current.lstat()
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode):
            try:
                with os.scandir(current) as entries:
                    stack.extend(Path(entry.path) for entry in entries)
            except OSError:
                continue
        elif stat.S_ISREG(info.st_mode) and (info.st_dev, info.st_ino) not in seen:
            seen.add((info.st_dev, info.st_ino))
            total += info.st_size
    return total


def _mtime(path: Path) -> float:
    try:
        return path.lstat().st_mtime
    except OSError:
        return 0.0


def _real_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(path.lstat().st_mode)
    except OSError:
        return False


def _is_link(path: Path) -> bool:
    return path.is_symlink()


def _link_note(path: Path) -> LeftAlone:
    try:
        target = os.readlink(path)
    except OSError:
        target = "?"
    return LeftAlone(name=str(path), reason=f"a link to {target}: never followed, left alone")


# A project's runs, branches and worktrees.


def project_leftovers(project: Path, now: float) -> tuple[list[Leftover], list[LeftAlone]]:
    """The project's runs (each with its worktree and branch), branches `fixloop/*` with no run
    directory, and worktrees under `.fixloop/worktrees/` with no run directory."""
    found: list[Leftover] = []
    alone: list[LeftAlone] = []
    in_git = _is_repository(project)
    branches = _fixloop_branches(project) if in_git else set()
    registered = set(registered_worktrees(project)) if in_git else set()
    seen: set[str] = set()
    top = fixloop_dir(project)
    for directory in (top, runs_dir(project), worktrees_dir(project)):
        if _is_link(directory):
            alone.append(_link_note(directory))
            return found, alone  # nothing under a link is fixloop's to read
    runs = runs_dir(project)
    for path in sorted(runs.iterdir()) if _real_dir(runs) else []:
        seen.add(path.name)
        if _is_link(path):
            alone.append(_link_note(path))
            continue
        if not _real_dir(path):
            continue
        run = _run_leftover(project, path, branches, registered, now)
        if isinstance(run, LeftAlone):
            alone.append(run)
        else:
            found.append(run)
    worktrees = worktrees_dir(project)
    left = {name.removeprefix(BRANCH_PREFIX) for name in branches}
    left |= {p.name for p in worktrees.iterdir()} if _real_dir(worktrees) else set()
    for name in sorted(left - seen):
        stray = _stray(project, name, branches, registered, now)
        if isinstance(stray, LeftAlone):
            alone.append(stray)
        elif stray is not None:
            found.append(stray)
    return found, alone


def _stray(
    project: Path, name: str, branches: set[str], registered: set[Path], now: float
) -> Leftover | LeftAlone | None:
    """A branch `fixloop/<name>` or a worktree `.fixloop/worktrees/<name>` with no run
    directory, together. A worktree made in the last minutes is a run starting (its worktree
    comes before its run directory): left alone, with its branch."""
    branch = BRANCH_PREFIX + name if BRANCH_PREFIX + name in branches else None
    path = worktree_path(project, name)
    if _is_link(path):
        return _link_note(path)
    worktree = path if _real_dir(path) else None
    if worktree is not None and now - _mtime(worktree) < MAY_BE_RUNNING_S:
        return LeftAlone(name=str(worktree), reason="a run may be starting in it: left alone")
    if branch is None and worktree is None:
        return None
    registered_here = worktree is not None and worktree.resolve() in registered
    what = " and its worktree" if branch and worktree else ""
    return Leftover(
        group="runs",
        name=branch or str(worktree),
        detail=f"{'a branch' if branch else 'a worktree'}{what} with no run directory",
        size=tree_size(worktree) if worktree else 0,
        age_s=now - (_mtime(worktree) if worktree else _branch_time(project, branch or "")),
        worktree=str(worktree) if registered_here else None,
        paths=(str(worktree),) if worktree and not registered_here else (),
        branch=branch,
        project=str(project),
        holds_work=branch is not None,  # its commits may be all that is left of a run
    )


def _run_leftover(
    project: Path, path: Path, branches: set[str], registered: set[Path], now: float
) -> Leftover | LeftAlone:
    from engine.run.run_directory import summarize

    if not _RUN_ID.fullmatch(path.name) or not _sealed(path):
        return LeftAlone(name=str(path), reason="not a run fixloop recorded for you: left alone")
    summary = summarize(path)
    age = now - max(_mtime(path / "events.jsonl"), _mtime(path))
    branch = BRANCH_PREFIX + path.name
    worktree = worktree_path(project, path.name)
    size = tree_size(path)
    paths = [str(path)]
    git_worktree = None
    if _is_link(worktree):
        return _link_note(worktree)
    if _real_dir(worktree):
        size += tree_size(worktree)
        if worktree.resolve() in registered:
            git_worktree = str(worktree)
        else:
            paths.insert(0, str(worktree))
    outcome = summary.outcome
    holds_work = True
    if summary.status == "unfinished" and age < MAY_BE_RUNNING_S:
        return LeftAlone(name=path.name, reason="it may still be running: left alone")
    if summary.status == "unfinished":
        detail = "cut off (resumable)"
    elif summary.status == "stopped":
        detail = "stopped (resumable)"
    elif outcome == "kept":
        detail = f"kept (its branch {branch} is yours)"
    elif outcome == "undecided":
        detail = f"ended {summary.status_label}, undecided"
    else:
        detail = f"{summary.status_label}, {outcome}"
        holds_work = False
    return Leftover(
        group="runs",
        name=path.name,
        detail=detail,
        size=size,
        age_s=age,
        paths=tuple(paths),
        worktree=git_worktree,
        branch=branch if branch in branches else None,
        project=str(project),
        holds_work=holds_work,
    )


def _sealed(path: Path) -> bool:
    """Whether fixloop wrote this run's record for this user (a repository cannot seal one)."""
    from engine.errors import UnsealedRecord
    from engine.run.run_directory import RUN_RECORD, RunDirectory

    try:
        if not stat.S_ISREG((path / RUN_RECORD).lstat().st_mode):
            return False  # a link (to /dev/zero, say) is never read
        RunDirectory(path).sealed_record()
    except (UnsealedRecord, OSError, ValueError):
        return False
    return True


def _is_repository(project: Path) -> bool:
    return _real_dir(project) and git_ok(project, "rev-parse", "--git-dir")


def _fixloop_branches(project: Path) -> set[str]:
    out = git_bytes(project, "for-each-ref", "--format=%(refname)", "refs/heads/fixloop/")
    names = (os.fsdecode(line).removeprefix("refs/heads/") for line in out.splitlines())
    return {name for name in names if _RUN_ID.fullmatch(name.removeprefix(BRANCH_PREFIX))}


def _branch_time(project: Path, branch: str) -> float:
    out = git_bytes(project, "log", "-1", "--format=%ct", f"refs/heads/{branch}", "--")
    text = out.decode("ascii", "replace").strip()
    return float(text) if text.isdigit() else 0.0


def _remove_worktree(project: Path, root: Path) -> None:
    if _real_dir(root) and root.resolve() in registered_worktrees(project):
        git_bytes(project, "worktree", "remove", "--force", "--force", str(root))
    else:
        remove_tree(root)
    git_bytes(project, "worktree", "prune")


def _delete_branch(project: Path, branch: str) -> None:
    if branch in _fixloop_branches(project):
        git_bytes(project, "branch", "--quiet", "-D", branch)


# The demo's copies.


def demo_copies(now: float) -> tuple[list[Leftover], list[LeftAlone]]:
    """`fixloop-demo-*` directories of this user's in the temporary directory, each holding a
    copy of a bundled example and its runs. One whose run wrote lately may be in use."""
    found: list[Leftover] = []
    alone: list[LeftAlone] = []
    base = Path(tempfile.gettempdir())
    for path in sorted(base.glob(DEMO_PREFIX + "*")):
        try:
            info = path.lstat()
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
            continue  # a link, or another user's: not ours
        latest = max(
            [info.st_mtime, *(_mtime(p) for p in path.glob("*/.fixloop/runs/*/events.jsonl"))]
        )
        if now - latest < MAY_BE_RUNNING_S:
            alone.append(LeftAlone(name=str(path), reason="a demo may be running in it"))
            continue
        found.append(
            Leftover(
                group="demos",
                name=str(path),
                detail="a copy `fixloop-tui demo` made",
                size=tree_size(path),
                age_s=now - latest,
                paths=(str(path),),
            )
        )
    return found, alone


# Sandbox state.


def sandbox_state(now: float) -> tuple[list[Leftover], list[LeftAlone]]:
    """Bundles of sandboxes whose fixloop process died, and the skeleton roots (made again on
    demand) when no fixloop sandbox is running; only in fixloop's own runtime and cache dirs."""
    from sandbox.owners import left_by_dead_process, runtime_dir, skeleton_dir

    found: list[Leftover] = []
    alone: list[LeftAlone] = []
    bundles_dir = runtime_dir() / "bundles"
    dead: list[Path] = []
    live = 0
    for path in sorted(bundles_dir.iterdir()) if _real_dir(bundles_dir) else []:
        if not _real_dir(path):
            continue
        if left_by_dead_process(path.name):
            dead.append(path)
        else:
            live += 1
    if dead:
        found.append(
            _bundle_of("sandbox bundles", f"{len(dead)} left by dead processes", dead, now)
        )
    for base in dict.fromkeys([skeleton_dir(), runtime_dir(), cache_home() / "sandbox"]):
        roots = (
            [p for p in sorted(base.glob("rootfs-*")) if _real_dir(p)] if _real_dir(base) else []
        )
        if not roots:
            continue
        if live:
            alone.append(
                LeftAlone(
                    name=f"{base}/rootfs-*",
                    reason=f"{live} sandboxes are running: their skeleton roots are kept",
                )
            )
            continue
        found.append(
            _bundle_of(
                f"{base}/rootfs-*", f"{len(roots)} skeleton roots, made again on demand", roots, now
            )
        )
    return found, alone


def _bundle_of(name: str, detail: str, paths: list[Path], now: float) -> Leftover:
    return Leftover(
        group="sandbox",
        name=name,
        detail=detail,
        size=sum(tree_size(p) for p in paths),
        age_s=now - max(_mtime(p) for p in paths),
        paths=tuple(str(p) for p in paths),
    )


# Caches.


def cache_home() -> Path:
    """fixloop's cache directory: `$XDG_CACHE_HOME/fixloop`, else `~/.cache/fixloop`."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    root = Path(base) if base and Path(base).is_absolute() else Path.home() / ".cache"
    return root / "fixloop"


def caches(now: float) -> list[Leftover]:
    """Each directory in fixloop's cache but the skeleton roots (sandbox state), with size."""
    home = cache_home()
    if not _real_dir(home):
        return []
    found = []
    for path in sorted(home.iterdir()):
        if path.name == "sandbox" or _is_link(path):
            continue
        found.append(
            Leftover(
                group="caches",
                name=str(path),
                detail=CACHE_LABELS.get(path.name, "fixloop's cache"),
                size=tree_size(path),
                age_s=now - _mtime(path),
                paths=(str(path),),
            )
        )
    return found


def engine_storage() -> list[LeftAlone]:
    """fixloop's own Podman and Docker data (images): a running service uses it, so `clean`
    names it and leaves it to the person."""
    data = os.environ.get("XDG_DATA_HOME", "")
    user = Path(data) if data and Path(data).is_absolute() else Path.home() / ".local" / "share"
    places = [Path("/var/lib/fixloop/podman"), Path("/var/lib/fixloop/docker"), user / "fixloop"]
    return [
        LeftAlone(
            name=str(path),
            reason="the docker backend's own engine data: stop its service, then remove it",
        )
        for path in places
        if _real_dir(path)
    ]
