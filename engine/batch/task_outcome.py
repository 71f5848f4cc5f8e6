"""What one batch task came back with, and the batch's totals: values that cross the
network from a worker (the run directory and the branch travel as one archive)."""

from __future__ import annotations

import io
import json
import tarfile
from collections import Counter
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

ARCHIVE_LIMIT = 256 * 1024 * 1024  # what a task may send back: an audit trail, not a dataset


class Attempt(BaseModel):
    """Where one attempt of a task ran: a Ray node (its id, host), or this machine."""

    model_config = ConfigDict(frozen=True)

    node: str  # a Ray node id, or "local"
    host: str
    lost: bool = False  # its worker or node died; the task was retried elsewhere


class TaskOutcome(BaseModel):
    """A task's ending: the run's own status, or `error` when it could not run (a clone that
    failed, a bad setting, a dead model, a worker lost on every retry) with the cause."""

    model_config = ConfigDict(frozen=True)

    id: str
    line: int
    repo: str
    status: str  # a RunStatus value
    reason: str
    exit_code: int  # what `run --headless` would have exited with
    attempts: list[Attempt] = Field(default_factory=list)  # the last one is where it ended
    run: dict[str, Any] | None = None  # `run --headless --json`'s object; None: no run
    bundle: str | None = None  # the run's branch as a git bundle, in the task's directory
    tokens: int = 0
    cost_usd: float = 0.0
    duration_s: float = 0.0
    archive: bytes = Field(default=b"", exclude=True)  # run/ and branch.bundle, tar.gz

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def gather(self, out: Path) -> Path:
        """Unpack the archive into `out/<id>/` beside result.json; the task's directory."""
        where = out / self.id
        where.mkdir(parents=True, exist_ok=True)
        if self.archive:
            with tarfile.open(fileobj=io.BytesIO(self.archive), mode="r:gz") as tar:
                if hasattr(tarfile, "data_filter"):
                    tar.extractall(where, filter="data")
                else:  # a Python before 3.11.4 (Debian 12's 3.11.2) has no filters
                    tar.extractall(where, members=plain_members(tar))
        (where / "result.json").write_text(self.model_dump_json(indent=2) + "\n")
        return where


def plain_members(tar: tarfile.TarFile) -> list[tarfile.TarInfo]:
    """The archive's directories and regular files under relative paths that stay inside,
    without set-id bits: what the "data" extraction filter lets through, for a Python that
    has none. An archive comes from a worker, so nothing in it may write outside `out/<id>/`
    or leave a link there."""
    kept = []
    for member in tar.getmembers():
        parts = PurePosixPath(member.name).parts
        if member.name.startswith("/") or ".." in parts or not (member.isfile() or member.isdir()):
            continue
        # as the data filter: a directory gets the default mode, a file loses set-id bits and
        # group or other write
        member.mode = 0o755 if member.isdir() else member.mode & 0o755
        kept.append(member)
    return kept


def pack(directory: Path) -> bytes:
    """`directory`'s contents as tar.gz bytes (paths relative to it)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for item in sorted(directory.iterdir()):
            tar.add(item, arcname=item.name)
    data = buffer.getvalue()
    if len(data) > ARCHIVE_LIMIT:
        raise ValueError(f"the task's run directory is {len(data) >> 20} MB packed")
    return data


class StatusTotals(BaseModel):
    status: str
    tasks: int
    tokens: int
    cost_usd: float
    wall_s: float  # the sum of the tasks' own durations


class BatchSummary(BaseModel):
    """The whole batch: per status, and the batch's own wall time (tasks overlap)."""

    tasks: int
    ok: int
    by_status: list[StatusTotals]
    tokens: int
    cost_usd: float
    wall_s: float
    tasks_per_minute: float
    retried: int  # tasks with a lost attempt


def summarize(outcomes: list[TaskOutcome], wall_s: float) -> BatchSummary:
    counts = Counter(outcome.status for outcome in outcomes)
    by_status = [
        StatusTotals(
            status=status,
            tasks=count,
            tokens=sum(o.tokens for o in outcomes if o.status == status),
            cost_usd=round(sum(o.cost_usd for o in outcomes if o.status == status), 6),
            wall_s=round(sum(o.duration_s for o in outcomes if o.status == status), 1),
        )
        for status, count in sorted(counts.items(), key=lambda item: (item[0] != "ok", item[0]))
    ]
    return BatchSummary(
        tasks=len(outcomes),
        ok=counts["ok"],
        by_status=by_status,
        tokens=sum(o.tokens for o in outcomes),
        cost_usd=round(sum(o.cost_usd for o in outcomes), 6),
        wall_s=round(wall_s, 1),
        tasks_per_minute=round(len(outcomes) / wall_s * 60, 2) if wall_s > 0 else 0.0,
        retried=sum(1 for o in outcomes if any(a.lost for a in o.attempts)),
    )


def batch_json(outcomes: list[TaskOutcome], summary: BatchSummary) -> str:
    return json.dumps(
        {"summary": summary.model_dump(), "tasks": [o.model_dump() for o in outcomes]}
    )
