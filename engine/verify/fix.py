"""The fix pass (`fix_cmd`): a formatter that writes (`ruff format .`, `gofmt -w .`, any
command) runs in the sandbox on a copy of the tree, and the files it changed come back
and are written to the tree, before the check stages run on it (ARCHITECTURE.md, "One
iteration, step by step"). The check pass alone decides the verdict: what a formatter
fixes never reaches the model.

Tool-agnostic: the command is run as any stage is (`Verifier.request`), with the
sandbox's `return_changes`. A pinned test file (the baseline's) is never rewritten by a
formatter: its change is held back and said, the rest applies. A formatter rewrites files
in place; one that would create or delete a file is not doing that (and its commit is
never reviewed at the gate), so such changes are refused and said. A fix command that
fails applies nothing; its result then counts as a failing stage of the verification.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Collection, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from engine.edits.safe_paths import clean_path
from engine.errors import EditFormatError
from engine.verify.execute import Verifier, parse_stage
from engine.verify.results import StageResult
from sandbox import FileChange, SandboxError

FIX_STAGE = "fix"


class FixRun(BaseModel):
    """What one fix pass did to a tree: for the trail (`format.json`), the event and notes."""

    model_config = ConfigDict(frozen=True)

    stage: StageResult  # the fix command's own result
    applied: list[str] = Field(default_factory=list)  # written (or deleted) in the tree
    held_back: list[str] = Field(default_factory=list)  # pinned test files it would change
    refused: list[str] = Field(default_factory=list)  # created, deleted, or a link in the way
    truncated: bool = False  # more than the sandbox's changes cap: nothing applied

    @property
    def failed(self) -> bool:
        return not self.stage.succeeded

    def notes(self) -> list[str]:
        """What the next packet says about the fix pass (nothing when it just worked)."""
        notes = []
        if self.held_back:
            notes.append(
                "The formatter would have changed these test files or their data; they are "
                "pinned, so "
                f"their formatting was not applied: {_listed(self.held_back)}."
            )
        if self.truncated:
            notes.append("The formatter changed too much to bring back: nothing was applied.")
        if self.refused:
            notes.append(
                "The formatter's changes to these paths were not applied (a formatter only "
                f"rewrites existing files): {', '.join(self.refused)}."
            )
        return notes


async def run_fix(verifier: Verifier, tree: Path, pinned: Collection[str]) -> FixRun | None:
    """The verifier's fix command over a copy of `tree`, its changes written to `tree` (but
    `pinned` paths'); None when no fix command is configured."""
    stage = verifier.fix
    if stage is None:
        return None
    try:  # a host tree refused for the job (MountRefused) fails the stage like the sandbox
        request = verifier.request(stage, tree, nonce="")
        result = await verifier.sandbox.run(request.model_copy(update={"return_changes": True}))
    except SandboxError as exc:
        return FixRun(
            stage=StageResult(
                name=stage.name,
                kind=stage.kind,
                cmd=stage.cmd,
                exit_code=-1,
                duration_ms=0,
                infrastructure_error=str(exc),
            )
        )
    parsed = parse_stage(stage, result, "")
    if not parsed.succeeded or result.changes is None:
        return FixRun(stage=parsed)
    if result.changes_truncated:
        return FixRun(stage=parsed, truncated=True)
    held = sorted(change.path for change in result.changes if change.path in pinned)
    wanted = [change for change in result.changes if change.path not in pinned]
    applied, refused = write_changes(tree, wanted)
    return FixRun(stage=parsed, applied=applied, held_back=held, refused=refused)


def write_changes(root: Path, changes: Sequence[FileChange]) -> tuple[list[str], list[str]]:
    """Each change to an existing regular file written under `root` (its content and
    executable bit), never through a symlink and never into .git or .fixloop; a file
    created or deleted is refused: (written, refused) paths."""
    written, refused = [], []
    for change in changes:
        target = _plain_target(root, change.path)
        if target is None or change.content is None or not target.is_file():
            refused.append(change.path)
            continue
        mode = target.stat().st_mode
        fd = os.open(target, os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW)
        with os.fdopen(fd, "wb") as handle:
            handle.write(change.content)
        executable = stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH
        target.chmod((mode | executable) if change.executable else (mode & ~executable))
        written.append(change.path)
    return written, refused


def _plain_target(root: Path, path: str) -> Path | None:
    """`root / path` when neither it nor a directory on the way is a symlink (or not a
    directory), it is no directory itself, and the path is one an edit could name."""
    try:
        clean = clean_path(path)  # absolute, `..`, .git and .fixloop are refused here
    except EditFormatError:
        return None
    current = root
    parts = clean.split("/")
    for part in parts[:-1]:
        current = current / part
        if current.is_symlink() or (current.exists() and not current.is_dir()):
            return None
    target = current / parts[-1]
    if target.is_symlink() or target.is_dir():
        return None
    return target


def _listed(paths: list[str], shown: int = 5) -> str:
    """The first `shown` paths, and how many more: a formatter run over a folder of fixtures
    must not fill the packet."""
    more = f" and {len(paths) - shown} more" if len(paths) > shown else ""
    return ", ".join(paths[:shown]) + more
