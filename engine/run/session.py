"""What an interactive front end needs around a run, beyond the loop itself: the project's
state before a run, a proposal previewed without touching the worktree, the test diff behind
a doubtful pass, one iteration's artifacts for display, and ending a run (accept/keep/discard)
from nothing but the project and the run id.
"""

from __future__ import annotations

import difflib
import json
import shutil
import tempfile
from pathlib import Path, PurePosixPath
from typing import Literal

import git
from pydantic import BaseModel, ConfigDict, Field

from engine.edits.apply import apply
from engine.edits.diff import parse_diff
from engine.edits.paths import safe_path
from engine.edits.proposal import EditFormatError, Proposal
from engine.feedback.packet import RepairPacket
from engine.feedback.prompts import relevant_paths
from engine.project.git_plumbing import WorkspaceError
from engine.project.run_directory import FIXLOOP_DIR, RUNS_DIR
from engine.project.settings import ConfigError, Settings
from engine.project.workspace import Workspace
from engine.verify.pins import is_test_file
from engine.verify.stages import StageConfigError, configured_stages
from engine.verify.tree import Baseline, Verification, verify_tree, working_tree_diff

Finish = Literal["accept", "keep", "discard"]
# Files whose change alters which tests pytest runs, or how: shown with the tests.
TEST_CONFIG_FILES = frozenset({"pyproject.toml", "setup.cfg", "pytest.ini", "tox.ini"})
MAX_CODE_FILES = 6
_SUBJECT_WIDTH = 72


def run_path(project: Path, run_id: str) -> Path:
    """The run directory `.fixloop/runs/<run>`."""
    return project / FIXLOOP_DIR / RUNS_DIR / run_id


def worktree_path(project: Path, run_id: str) -> Path:
    """Where the run's worktree is (or was) while it runs: `.fixloop/worktrees/<run>`."""
    return project / FIXLOOP_DIR / "worktrees" / run_id


# -- before a run ---------------------------------------------------------------------------


async def check_project(project: Path, settings: Settings) -> Verification:
    """Verify the user's checkout as it is now (uncommitted work included), sandboxed,
    against HEAD: what is red before the model is asked."""
    from engine.doctor import project_python
    from engine.verify.execute import Verifier
    from sandbox import Limits, choose_backend, open_sandbox

    try:
        stages = configured_stages(
            project,
            test_cmd=settings.test_cmd,
            lint_cmd=settings.lint_cmd,
            type_cmd=settings.type_cmd,
            format_cmd=settings.format_cmd,
        )
        for stage in stages:
            stage.argv()
    except StageConfigError as exc:
        raise ConfigError(str(exc)) from None
    baseline: Baseline | None = None
    diff = ""
    touched: list[str] = []
    try:
        with git.Repo(project) as repo:
            repo.head.commit  # noqa: B018 - raises without a commit
    except (git.InvalidGitRepositoryError, git.NoSuchPathError, ValueError):
        pass
    else:
        baseline = Baseline(repo=project)
        diff, touched = working_tree_diff(project)
    sandbox = open_sandbox(
        choose_backend(settings.sandbox or "auto", docker_url=settings.docker_url)
    )
    verifier = Verifier(
        sandbox,
        stages,
        python=settings.python or project_python(project),
        limits=Limits(timeout_s=settings.exec_timeout or 300),
    )
    try:
        return await verify_tree(
            project, verifier, baseline=baseline, touched=touched, last_diff=diff or None
        )
    finally:
        await sandbox.close()


# -- during a run ---------------------------------------------------------------------------


class FilePreview(BaseModel):
    """One file a proposal touches: its text now and after the proposal (None: absent)."""

    model_config = ConfigDict(frozen=True)

    path: str
    before: str | None
    after: str | None
    pinned: bool = False  # a pinned test file: held back unless the person allows it


class ProposalPreview(BaseModel):
    """A proposal as it would change the worktree, computed on copies of its files."""

    model_config = ConfigDict(frozen=True)

    files: list[FilePreview]
    diff: str
    error: str | None = None  # the edits do not apply; the loop will tell the model why


def preview_proposal(
    proposal: Proposal, root: Path, held_back: list[str] | tuple[str, ...] = ()
) -> ProposalPreview:
    """The unified diff `proposal` would make under `root`, without writing there."""
    paths: dict[str, None] = {}
    for edit in proposal.edits:
        try:
            paths[safe_path(root, edit.path)] = None
        except EditFormatError:
            continue  # refused: `apply` below names it
    error: str | None = None
    after: dict[str, str | None] = {}
    with tempfile.TemporaryDirectory(prefix="fixloop-preview-") as scratch:
        copy = Path(scratch)
        for path in paths:
            source = root / path
            if source.is_file():
                target = copy / path
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, target)
        try:
            apply(proposal, copy)
        except EditFormatError as exc:
            error = str(exc)
        else:
            after = {path: _read(copy / path) for path in paths}
    files = [
        FilePreview(
            path=path,
            before=_read(root / path),
            after=after.get(path) if error is None else None,
            pinned=path in held_back,
        )
        for path in paths
    ]
    diff = "" if error else "".join(file_diff(f.path, f.before, f.after) for f in files)
    return ProposalPreview(files=files, diff=diff, error=error)


def pass_test_diff(root: Path, baseline: str) -> str:
    """What the run changed in test files and pytest's configuration since the baseline."""
    with git.Repo(root) as repo:
        text = repo.git.diff(baseline, "HEAD", "--no-color", "--no-ext-diff", "--no-renames")
    files = parse_diff(text).files
    return "".join(file.text for file in files if _tests_or_config(file.path)).rstrip("\n")


# -- showing an iteration -------------------------------------------------------------------


class CodeFile(BaseModel):
    model_config = ConfigDict(frozen=True)

    path: str
    text: str | None  # None: the file does not exist at that revision


class IterationArtifacts(BaseModel):
    """What the run directory and the branch hold for one iteration."""

    model_config = ConfigDict(frozen=True)

    packet_text: str = ""
    diff: str = ""
    response: str = ""
    files: list[CodeFile] = Field(default_factory=list)


def iteration_artifacts(
    project: Path,
    run_id: str,
    n: int,
    *,
    rev: str | None,
    touched: list[str] | tuple[str, ...] = (),
    named: list[str] | tuple[str, ...] = (),
) -> IterationArtifacts:
    """Iteration n's packet, patch and answer from the run directory, and the files under
    repair as they are at `rev` (the iteration's commit, or the latest one before it)."""
    directory = run_path(project, run_id) / "iterations" / f"{n:02d}"
    # The packet the model answered in iteration n came from iteration n-1's verification.
    packet = _packet(run_path(project, run_id) / "iterations" / f"{max(n - 1, 0):02d}")
    root = worktree_path(project, run_id)
    tree = root if root.is_dir() else project
    paths = relevant_paths(tree, packet, named=[*touched, *named])[:MAX_CODE_FILES]
    for path in touched:  # a file the iteration deleted is not on disk, yet it was repaired
        if path not in paths:
            paths.insert(0, path)
    return IterationArtifacts(
        packet_text=_read(directory / "packet.txt") or "",
        diff=_read(directory / "patch.diff") or "",
        response=_read(directory / "response.txt") or "",
        files=files_at(project, rev, paths) if rev else [],
    )


def files_at(project: Path, rev: str, paths: list[str]) -> list[CodeFile]:
    """Files' texts at a revision (None: absent there, or not text)."""
    # Closed here, in the caller's thread: a Repo left to the garbage collector stops its git
    # helper processes, and waits for them, in whichever thread collects it (the UI's).
    with git.Repo(project) as repo:
        try:
            tree = repo.commit(rev).tree
        except (ValueError, git.BadName):
            return [CodeFile(path=path, text=None) for path in paths]
        return [CodeFile(path=path, text=_blob_text(tree, path)) for path in paths]


def _blob_text(tree: git.Tree, path: str) -> str | None:
    try:
        data: bytes = (tree / path).data_stream.read()
        return data.decode("utf-8")
    except (KeyError, UnicodeDecodeError):
        return None


# -- ending a run ---------------------------------------------------------------------------


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
    record = json.loads((run_path(project, run_id) / "run.json").read_text(encoding="utf-8"))
    workspace = Workspace(
        project,
        run_id,
        start_head=record["start_head"],
        user_branch=record["user_branch"],
        baseline=record["baseline"],
    )
    if choice == "keep":
        workspace.keep()
        return Finished(choice=choice, done=True, detail=f"kept on branch {workspace.branch}")
    if choice == "discard":
        workspace.discard()
        return Finished(
            choice=choice, done=True, detail=f"discarded: branch {workspace.branch} deleted"
        )
    task = str(record.get("config", {}).get("task", ""))
    try:
        sha = workspace.accept(accept_message(task, run_id, workspace.branch))
    except WorkspaceError as exc:
        return Finished(choice=choice, done=False, detail=str(exc))
    return Finished(
        choice=choice,
        done=True,
        commit=sha,
        detail=f"accepted as {sha[:10]} on {workspace.user_branch}",
    )


def accept_message(task: str, run_id: str, branch: str) -> str:
    """The squashed commit's message: the task as its subject, where it came from below."""
    subject = " ".join(next((ln for ln in task.splitlines() if ln.strip()), "").split())
    subject = subject or "fixloop run"
    if len(subject) > _SUBJECT_WIDTH:
        subject = subject[: _SUBJECT_WIDTH - 3].rstrip() + "..."
    return f"{subject}\n\nSquashed from {branch} (fixloop run {run_id})."


# -- helpers --------------------------------------------------------------------------------


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _packet(directory: Path) -> RepairPacket | None:
    text = _read(directory / "packet.json")
    if text is None:
        return None
    try:
        return RepairPacket.model_validate_json(text)
    except ValueError:
        return None


def file_diff(path: str, before: str | None, after: str | None) -> str:
    """A unified diff of one file's text (None: the file is absent), git-style names."""
    if before == after:
        return ""
    old = (before or "").splitlines(keepends=True)
    new = (after or "").splitlines(keepends=True)
    lines = difflib.unified_diff(
        old,
        new,
        "/dev/null" if before is None else f"a/{path}",
        "/dev/null" if after is None else f"b/{path}",
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _tests_or_config(path: str) -> bool:
    return is_test_file(path) or PurePosixPath(path).name in TEST_CONFIG_FILES
