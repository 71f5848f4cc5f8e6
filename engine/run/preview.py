"""What a person reviews before deciding: a proposal's diff, computed on copies of its files
without touching the worktree, and the test changes behind a doubtful pass."""

from __future__ import annotations

import difflib
import shutil
import tempfile
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, ConfigDict

from engine.edits.apply import apply
from engine.edits.diff import parse_diff
from engine.edits.proposal import Proposal
from engine.edits.safe_paths import safe_path
from engine.errors import EditFormatError
from engine.project.git_plumbing import open_repo
from engine.project.pins import is_pinned, is_test_infrastructure

# Files whose change alters which tests pytest runs, or how: shown with the tests.
TEST_CONFIG_FILES = frozenset({"pyproject.toml", "setup.cfg", "pytest.ini", "tox.ini"})


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


def pass_test_diff(root: Path, baseline: str) -> str:
    """What the run changed in test files, their data, pytest's configuration and the rest
    of the test infrastructure (Jest's and Vitest's config, package.json, go.mod) since the
    baseline."""
    with open_repo(root) as repo:
        text = repo.git.diff(
            baseline, "HEAD", "--no-color", "--no-ext-diff", "--no-textconv", "--no-renames"
        )
    files = parse_diff(text).files
    return "".join(file.text for file in files if _tests_or_config(file.path)).rstrip("\n")


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _tests_or_config(path: str) -> bool:
    return (
        is_pinned(path)
        or is_test_infrastructure(path)
        or PurePosixPath(path).name in TEST_CONFIG_FILES
    )
