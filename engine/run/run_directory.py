"""The run directory: `.fixloop/runs/<run>/`, the audit trail of one run (ARCHITECTURE.md,
"Events and the audit trail").

`run.json` (`RunRecord`: where the run started, its config, settings and versions),
`events.jsonl` (append-only, flushed and synced per event), `iterations/NN/` (prompt,
response, edits, patch, stage results, packet), `report.md` and `finish.json` (what the
person did with the branch). Files are written
atomically; everything written passes through `redact`, so no API key reaches the disk.
"""

from __future__ import annotations

import json
import os
import secrets
import stat
import tempfile
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_serializer
from pydantic_core import PydanticSerializationError

from engine.errors import RunNotNamed, UnsealedRecord
from engine.project.paths import ensure_fixloop_dir, run_path, runs_dir
from engine.project.settings import Settings
from engine.project.trust import is_sealed, seal
from engine.run.events import BaseEvent, Event, RunFinished, RunStarted, RunStopped, parse_event
from engine.run.outcome import RunConfig
from engine.text.redact import redact
from engine.text.untrusted import valid_unicode

RUN_RECORD = "run.json"
RUN_SEAL = "run.seal"  # the record's HMAC with the user's own key: see sealed_record


FINISH_RECORD = "finish.json"
FinishChoice = Literal["accept", "keep", "discard"]


class RunRecord(BaseModel):
    """`run.json`: what a run started from, enough to resume it or end it later."""

    model_config = ConfigDict(frozen=True)

    project: str
    run_id: str
    branch: str
    start_head: str
    user_branch: str | None
    baseline: str
    config: RunConfig
    settings: Settings
    python: Path
    versions: dict[str, str]
    argv: list[str]

    @field_serializer("settings")
    def _only_what_is_set(self, settings: Settings) -> dict[str, Any]:
        return settings.model_dump(mode="json", exclude_none=True)


class FinishRecord(BaseModel):
    """`finish.json`: what the person did with the run's branch once it ended (the last
    choice that took effect; a refused accept is not one)."""

    model_config = ConfigDict(frozen=True)

    choice: FinishChoice
    commit: str | None = None  # accept: the squashed commit on the person's branch
    ts: float = Field(default_factory=time.time)


def new_run_id(now: float | None = None) -> str:
    """Sortable, unique, and valid as a git branch name: 20261202-141503-a1b2."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    return f"{stamp}-{secrets.token_hex(2)}"


def write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _json_text(value: BaseModel | dict[str, Any] | list[Any], indent: int | None = 1) -> str:
    """`value` as JSON; a string in it that UTF-8 cannot encode (a lone surrogate that got
    past `valid_unicode` at the door) is U+FFFD rather than the end of the run."""
    if isinstance(value, BaseModel):
        try:
            return value.model_dump_json(indent=indent)
        except PydanticSerializationError:
            value = value.model_dump(mode="json")
    text = json.dumps(value, indent=indent, default=str, ensure_ascii=False)
    return valid_unicode(text)


class RunDirectory:
    """Writes one run's audit trail. Also an `EventSink`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.events_path = path / "events.jsonl"

    @classmethod
    def create(cls, project: Path, run_id: str) -> RunDirectory:
        ensure_fixloop_dir(project)
        path = run_path(project, run_id)
        path.mkdir(parents=True, exist_ok=False)
        return cls(path)

    @property
    def run_id(self) -> str:
        return self.path.name

    def write_text(self, relative: str, text: str) -> Path:
        target = self.path / relative
        write_atomic(target, redact(valid_unicode(text)))
        return target

    def write_json(self, relative: str, value: BaseModel | dict[str, Any] | list[Any]) -> Path:
        return self.write_text(relative, _json_text(value) + "\n")

    def iteration(self, n: int) -> str:
        """The relative directory of iteration n's artifacts: `iterations/01`."""
        return f"iterations/{n:02d}"

    def emit(self, event: BaseEvent) -> None:
        line = redact(_json_text(event, indent=None)) + "\n"
        with open(self.events_path, "a", encoding="utf-8") as stream:
            stream.write(line)
            stream.flush()
            os.fsync(stream.fileno())

    def events(self) -> list[Event]:
        return read_events(self.events_path)

    def has_record(self) -> bool:
        return (self.path / RUN_RECORD).is_file()

    def record(self) -> RunRecord:
        return RunRecord.model_validate_json((self.path / RUN_RECORD).read_text(encoding="utf-8"))

    def sealed_record(self) -> RunRecord:
        """The record, if fixloop wrote it for this user (`run.seal`, engine/project/trust.py):
        what `resume` obeys. UnsealedRecord otherwise, e.g. a run.json a repository committed."""
        text = record_bytes(self.path / RUN_RECORD)
        try:
            mark = (self.path / RUN_SEAL).read_text(encoding="ascii")
        except (OSError, UnicodeDecodeError):
            mark = ""
        if not is_sealed(text, mark):
            raise UnsealedRecord(
                f"{self.path / RUN_RECORD} was not written by fixloop for you (its seal does not "
                "match): resume does not obey it; start a new run instead"
            )
        return RunRecord.model_validate_json(text)

    def write_record(self, record: RunRecord) -> Path:
        path = self.write_json(RUN_RECORD, record)
        write_atomic(self.path / RUN_SEAL, seal(path.read_bytes()) + "\n")
        return path

    def finish(self) -> FinishRecord | None:
        """What the person did with the branch; None while undecided (or unreadable)."""
        return read_finish(self.path)

    def write_finish(self, finish: FinishRecord) -> Path:
        return self.write_json(FINISH_RECORD, finish)


# The most a run.json fixloop wrote can hold (its settings and config: a few KB).
RECORD_BYTES_MAX = 1 << 20


def record_bytes(path: Path) -> bytes:
    """A run record's bytes, read only when it is a regular file of sensible size, opened
    without following a link: a run directory a repository committed may hold `run.json ->
    /dev/zero` or a fifo, and the seal check must not read forever before it refuses it."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise UnsealedRecord(
            f"{path}: cannot read it ({exc.strerror}): not a run fixloop wrote"
        ) from None
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > RECORD_BYTES_MAX:
            raise UnsealedRecord(f"{path} is not a record fixloop wrote: start a new run instead")
        return file.read(RECORD_BYTES_MAX + 1)


def read_finish(run: Path) -> FinishRecord | None:
    try:
        return FinishRecord.model_validate_json((run / FINISH_RECORD).read_text(encoding="utf-8"))
    except (OSError, ValidationError):
        return None


def read_events(path: Path) -> list[Event]:
    """Every event of an events.jsonl; a torn last line (a crash mid-write) is skipped."""
    if not path.is_file():
        return []
    events = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if not line.strip():
            continue
        try:
            events.append(parse_event(line))
        except ValidationError:
            continue
    return events


class RunSummary(BaseModel):
    """One line of `fixloop-tui runs`."""

    model_config = ConfigDict(frozen=True)

    id: str
    task: str
    status: str
    iterations: int
    started: str
    path: str
    # An ok that rests on a suspicious pass the person accepted (RunFinished.accepted_suspicious).
    accepted_suspicious: bool = False
    branch: str = ""  # the run's branch when it ended; "" = it committed nothing
    finish: FinishChoice | None = None  # what the person did with it; None = undecided
    stopped_because: str = ""  # a stopped run's reason ("stopped: the terminal closed")
    duration_s: float | None = None  # how long it ran, once it ended

    def task_line(self, width: int) -> str:
        """The task on one line of at most `width` characters (a task may have several)."""
        line = " ".join(self.task.split())
        return line if len(line) <= width else line[: width - 1] + "…"

    @property
    def status_label(self) -> str:
        """The status in words; an accepted suspicious pass never reads as plain ok."""
        if self.status == "ok" and self.accepted_suspicious:
            return "ok (accepted suspicious)"
        return self.status.replace("_", " ")

    @property
    def outcome(self) -> str:
        """What became of the run's branch: accepted, kept, discarded, undecided, or none."""
        if self.finish is not None:
            return {"accept": "accepted", "keep": "kept", "discard": "discarded"}[self.finish]
        if self.status != "unfinished" and not self.branch:
            return "no branch"
        return "undecided"


def _unfinished(events: list[Event]) -> str:
    """A run with no ending: stopped by the person to resume (its last word), or cut off."""
    return "stopped" if events and isinstance(events[-1], RunStopped) else "unfinished"


def run_ids(project: Path) -> list[str]:
    """The ids of the project's runs (their directories' names), oldest first."""
    runs = runs_dir(project)
    if not runs.is_dir():
        return []
    return sorted(path.name for path in runs.iterdir() if path.is_dir())


def resolve_run(project: Path, given: str) -> str:
    """The id of the one run `given` names, as git names a commit: the whole id, or a unique
    prefix of the id or of its last part (`0f5c` for `20261207-121744-0f5c`). Only names read
    from the runs directory come back, never `given` itself, so no typed path (`../x`) reaches a
    file name. RunNotNamed, in one line, for none or several (those listed)."""
    ids = run_ids(project)
    if given in ids:
        return given
    found = [
        run
        for run in ids
        if given and (run.startswith(given) or run.rsplit("-", 1)[-1].startswith(given))
    ]
    if len(found) == 1:
        return found[0]
    if not found:
        raise RunNotNamed(f"no run {given!r} in {project} (see `fixloop-tui runs`)")
    shown = ", ".join(reversed(found[-5:])) + (
        f" and {len(found) - 5} more" if len(found) > 5 else ""
    )
    raise RunNotNamed(
        f"{given!r} names {len(found)} runs in {project}: {shown}; type more of the id"
    )


def list_runs(project: Path) -> list[RunSummary]:
    """The project's runs, newest first. A run without an end is `running` or was cut off."""
    runs = runs_dir(project)
    if not runs.is_dir():
        return []
    return [summarize(path) for path in sorted(runs.iterdir(), reverse=True) if path.is_dir()]


def summarize(path: Path) -> RunSummary:
    """The run in the directory `path`, read back from its trail."""
    events = read_events(path / "events.jsonl")
    started = next((e for e in events if isinstance(e, RunStarted)), None)
    finished = next((e for e in reversed(events) if isinstance(e, RunFinished)), None)
    iterations = max((getattr(e, "n", 0) for e in events), default=0)
    finish = read_finish(path)
    stopped = events[-1] if events and isinstance(events[-1], RunStopped) else None
    return RunSummary(
        id=path.name,
        task=started.task if started else "",
        status=finished.status if finished else _unfinished(events),
        iterations=finished.iterations if finished else iterations,
        started=time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started.ts if started else 0)),
        path=str(path),
        accepted_suspicious=bool(finished and finished.accepted_suspicious),
        branch=finished.branch if finished else (started.branch if started else ""),
        finish=finish.choice if finish else None,
        stopped_because=stopped.reason if stopped and not finished else "",
        duration_s=finished.duration_s if finished else None,
    )
