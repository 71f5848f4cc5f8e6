"""The batch file: JSONL, one task a line — `repo` (a path or a git URL), optional `id`, `ref`
and `trust` (obey the repo's restricted settings), and any run setting under its
`[tool.fixloop]` name, checked the same way. A bad line is one error naming the file, the
line and the problem, before any task runs."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from engine.errors import BatchFileError, ConfigError
from engine.project.git_plumbing import git_ok
from engine.project.settings import settings_layer

TASK_KEYS = ("id", "repo", "ref", "trust")
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
# ssh://, https://, file:// ... or git's scp-like user@host:path
_URL = re.compile(r"^([a-z][a-z0-9+.-]*://|[\w.-]+@[\w.-]+:)", re.I)


class BatchTask(BaseModel):
    """One line of the batch file, checked. It crosses the network to a worker as it is:
    plain JSON values, never a key (workers read their own environment)."""

    model_config = ConfigDict(frozen=True)

    id: str
    line: int
    repo: str  # a git URL, or an absolute path the workers can reach
    ref: str | None = None  # a branch, tag or commit; None: the clone's default branch
    # Whether the repo's own restricted settings (engine/project/trust.py) are obeyed: the
    # batch file is the user's word, the repository is not.
    trust: bool = False
    settings: dict[str, Any]  # run settings as written, checked like [tool.fixloop]


def is_url(repo: str) -> bool:
    return bool(_URL.match(repo))


def load_batch(path: Path) -> list[BatchTask]:
    """Every task of the file, or BatchFileError for the first bad line."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BatchFileError(f"{path}: cannot read it: {exc}") from None
    tasks: list[BatchTask] = []
    seen: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        task = parse_line(raw, number, path)
        if task.id in seen:
            raise BatchFileError(
                f"{path} line {number}: id {task.id!r} is already line {seen[task.id]}'s"
            )
        seen[task.id] = number
        tasks.append(task)
    if not tasks:
        raise BatchFileError(f"{path}: no task in it (one JSON object a line)")
    return tasks


def parse_line(raw: str, number: int, path: Path) -> BatchTask:
    where = f"{path} line {number}"
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise BatchFileError(f"{where}: not JSON: {exc.msg} (column {exc.colno})") from None
    if not isinstance(value, dict):
        raise BatchFileError(f"{where}: a task is a JSON object, not {type(value).__name__}")
    repo = _text(value, "repo", where, required=True)
    assert repo is not None
    task_id = _text(value, "id", where) or f"task-{number}"
    if not _ID.fullmatch(task_id):
        raise BatchFileError(
            f"{where}: id {task_id!r} must be letters, digits, '.', '_' or '-' (64 at most)"
        )
    settings = {key: item for key, item in value.items() if key not in TASK_KEYS}
    try:
        settings_layer(settings, where)
    except ConfigError as exc:
        raise BatchFileError(str(exc)) from None
    if not is_url(repo) and not Path(repo).is_absolute():
        repo = str((path.parent / repo).resolve())  # relative to the batch file
    ref = _text(value, "ref", where)
    if ref is not None and (ref.startswith("-") or not ref.strip()):
        raise BatchFileError(f"{where}: ref {ref!r} is not a branch, tag or commit")
    trust = value.get("trust", False)
    if not isinstance(trust, bool):
        raise BatchFileError(f"{where}: 'trust' must be true or false")
    return BatchTask(id=task_id, line=number, repo=repo, ref=ref, trust=trust, settings=settings)


def _text(value: dict[str, Any], key: str, where: str, *, required: bool = False) -> str | None:
    item = value.get(key)
    if item is None and not required:
        return None
    if not isinstance(item, str) or not item.strip():
        problem = "is missing" if item is None else "must be a non-empty string"
        raise BatchFileError(f"{where}: {key!r} {problem}")
    return item


def check_local_repos(tasks: list[BatchTask], path: Path) -> None:
    """On this machine a repo path must be a git checkout here (a URL is tried by the clone).
    On a cluster it is the workers' path, not checked here."""
    for task in tasks:
        here = Path(task.repo)
        if not is_url(task.repo) and not (here.is_dir() and git_ok(here, "rev-parse", "--git-dir")):
            raise BatchFileError(
                f"{path} line {task.line}: repo {task.repo} is not a git repository here"
            )
