"""One iteration's artifacts for display: its packet, patch and answer from the run
directory, and the files under repair as the run's branch holds them."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import git
from pydantic import BaseModel, ConfigDict, Field

from engine.feedback.packet import RepairPacket
from engine.feedback.prompts import relevant_paths
from engine.project.git_plumbing import open_repo
from engine.project.paths import run_path, worktree_path
from engine.project.pins import is_test_file

MAX_CODE_FILES = 6


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
    # With candidates: each one's answer (`candidates/K/response.txt`), by K; `response` is "".
    candidates: dict[int, str] = Field(default_factory=dict)
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
    paths = under_repair_first(paths, packet, named=named, touched=touched)
    return IterationArtifacts(
        packet_text=_read(directory / "packet.txt") or "",
        diff=_read(directory / "patch.diff") or "",
        response=_read(directory / "response.txt") or "",
        candidates=candidate_answers(directory),
        files=files_at(project, rev, paths) if rev else [],
    )


def under_repair_first(
    paths: list[str],
    packet: RepairPacket | None,
    *,
    named: Sequence[str] = (),
    touched: Sequence[str] = (),
) -> list[str]:
    """`paths` with the file being repaired first, which the code pane opens on: the first
    file of a failure's traceback that is not a test file (where the code failed), else the
    first file the person named (`--file`), else the first the iteration's proposal edited
    (or the last one before it, as its packet says), else the first code file that is no
    package's `__init__.py` (which mostly re-exports)."""
    frames = [f.frame.file for f in packet.failures if f.frame] if packet is not None else []
    edited = list(packet.last_edit.files) if packet is not None and packet.last_edit else []
    choices = [
        *(path for path in frames if not is_test_file(path)),
        *named,
        *touched,
        *edited,
        *(p for p in paths if not is_test_file(p) and Path(p).name != "__init__.py"),
    ]
    first = next((path for path in choices if path in paths), None)
    if first is None:
        return list(paths)
    return [first, *(path for path in paths if path != first)]


def files_at(project: Path, rev: str, paths: list[str]) -> list[CodeFile]:
    """Files' texts at a revision (None: absent there, or not text)."""
    with open_repo(project) as repo:
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


def candidate_answers(directory: Path) -> dict[int, str]:
    """Each candidate's answer under the iteration's `candidates/K/`, by K (only directories
    named by a number; an answer not written, or not text, is left out)."""
    try:
        entries = list((directory / "candidates").iterdir())
    except OSError:
        return {}
    found = {
        int(entry.name): text
        for entry in entries
        if entry.name.isdigit() and (text := _read(entry / "response.txt")) is not None
    }
    return dict(sorted(found.items()))


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
