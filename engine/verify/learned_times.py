"""The project's passing test times, remembered across verifications in the person's cache
(`$XDG_CACHE_HOME/fixloop/test-times/<key>.json`), so a test that is only slow in the sandbox
gets the time it needs from the first check of the next run, not only after a baseline.

Why a hostile repository cannot raise or lower its own limits through this: the file is
written by fixloop alone, from what fixloop measured in the sandbox, and lives in the person's
cache, never in the repository (a cache directory inside the project is not used, so a planted
file is never read). Only tests that passed are remembered, from the person's own tree (`verify`,
`watch`, the app's first check, a run's baseline), never from a model's answer. A time is no
longer than the host's own clock says the stage that ran it took, and every limit a time gives
is still bounded by the stage's budget (`time_needs`): a remembered time can make a hanging
test cost more of the stage, never make anything pass.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from engine.verify.results import StageKind, StageResult
from engine.verify.time_needs import MAX_NODEID
from sandbox import Sandbox
from sandbox.contract import describe
from sandbox.host_trees import is_within, owned_by_user

FORMAT = 1
RECORD_S = 0.5  # the plugin reports call times from half a second; shorter ones are not kept
MAX_REMEMBERED = 1000  # the slowest this many tests, per backend
MAX_FILE_BYTES = 2_000_000  # a larger file is not read (fixloop never writes one)


class BackendTimes(BaseModel):
    """One backend's remembered times: the sandbox that measured them (and its runsc), and
    each test's call time in seconds."""

    model_config = ConfigDict(frozen=True)

    sandbox: str = ""
    runsc: str = ""
    times: dict[str, float] = Field(default_factory=dict)


class TimesFile(BaseModel):
    """The cache file: the project it is for (shown, not trusted) and its times by backend."""

    model_config = ConfigDict(frozen=True)

    format: int = FORMAT
    project: str = ""
    backends: dict[str, BackendTimes] = Field(default_factory=dict)


def times_home(environ: Mapping[str, str] | None = None) -> Path:
    """Where fixloop keeps test times: `$XDG_CACHE_HOME/fixloop/test-times` or `~/.cache/...`."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "fixloop" / "test-times"


def times_path(project: Path, environ: Mapping[str, str] | None = None) -> Path | None:
    """The project's times file (it may not exist yet); None when the person's cache lies
    inside the project, where the repository could have planted it."""
    root = project.resolve()
    home = times_home(environ)
    if is_within(home.resolve(), root):
        return None
    return home / f"{project_key(root)}.json"


def project_key(root: Path) -> str:
    """The project's absolute path and its git identity (origin's URL and root commits),
    hashed: a project cloned again at the same path keeps its times, another one does not."""
    identity = json.dumps([str(root), *_git_identity(root)])
    return hashlib.sha256(identity.encode()).hexdigest()[:24]


def _git_identity(root: Path) -> list[str]:
    """Origin's URL and the root commits, read with git under `host_git_env` (nothing the
    repository's config names runs); empty outside a repository or before its first commit.
    The repository chooses both, and they only go into the key beside the absolute path it
    does not choose: it can pick no other project's times, only lose its own."""
    from git import GitError  # GitPython: imported on use

    from engine.errors import WorkspaceError
    from engine.project.git_plumbing import run_git

    found = []
    try:
        status, url = run_git(root, "config", "--get", "remote.origin.url", ok=(0, 1, 128))
        if status == 0:
            found.append(url.decode(errors="replace").strip())
        status, roots = run_git(root, "rev-list", "--max-parents=0", "HEAD", ok=(0, 128))
        if status == 0:
            found.append(roots.decode(errors="replace").strip())
    except (WorkspaceError, GitError, OSError):
        return []
    return found


class LearnedTimes:
    """One project's remembered times for one backend: read before a verification sizes its
    limits, written after a verification of the person's tree."""

    def __init__(self, project: Path, backend: str, environ: Mapping[str, str] | None = None):
        self.backend = backend
        self.path = times_path(project, environ)
        self.project = project

    def remembered(self) -> dict[str, float]:
        """Each remembered test's call time; none without a readable file."""
        backend = _read(self.path).backends.get(self.backend)
        return dict(backend.times) if backend is not None else {}

    def remember(self, sandbox: Sandbox, stages: Sequence[StageResult]) -> None:
        """Merge what `stages` measured of their passing tests into the file (`merged`). A
        cache that cannot be written costs the learning, never the verification."""
        if self.path is None:
            return
        measured = passing_times(stages)
        if not measured:
            return
        data = _read(self.path)
        old = data.backends.get(self.backend, BackendTimes())
        times = merged(old.times, measured)
        if times == old.times:
            return
        entry = BackendTimes(sandbox=describe(sandbox), runsc=_runsc(self.backend), times=times)
        data = TimesFile(
            project=str(self.project.resolve()), backends={**data.backends, self.backend: entry}
        )
        try:
            _write(self.path, data.model_dump_json(indent=1))
        except OSError:
            return


def passing_times(stages: Sequence[StageResult]) -> dict[str, float]:
    """What a verification measured of each test that passed: its call time from the report,
    0.0 for a test that passed quicker than the plugin reports, never longer than the host
    measured the whole stage to take. Stages narrowed to some tests count as well; a report
    that did not list its tests says nothing. Pure."""
    measured: dict[str, float] = {}
    for stage in stages:
        report = stage.report
        if stage.kind is not StageKind.TESTS or report is None or report.truncated:
            continue
        if stage.timed_out or stage.infrastructure_error:
            continue
        not_passed = {case.nodeid for case in report.tests}
        passed = [nodeid for nodeid in report.nodeids if nodeid not in not_passed]
        # Collected but never run (`-x`, a session stopped early) looks like passed: unless
        # the count of passed tests says each of them ran, only measured times are taken.
        every_one_ran = len(passed) == report.counts.passed and not report.not_run
        longest = stage.duration_ms / 1000
        for nodeid in passed:
            if len(nodeid) > MAX_NODEID:
                continue
            if nodeid not in report.durations and not every_one_ran:
                continue
            seconds = report.durations.get(nodeid, 0.0)
            if not math.isfinite(seconds) or seconds < 0:
                continue
            measured[nodeid] = min(seconds, longest)
    return measured


def merged(old: Mapping[str, float], measured: Mapping[str, float]) -> dict[str, float]:
    """The times to keep: a test just measured keeps the larger of the new time and half its
    old one (one quick run under a light load does not undo a slow one at once; a test that
    got faster is forgotten in a few runs); times under `RECORD_S` are dropped; the slowest
    `MAX_REMEMBERED` stay. Pure."""
    times = dict(old)
    for nodeid, seconds in measured.items():
        times[nodeid] = round(max(seconds, times.get(nodeid, 0.0) / 2), 2)
    kept = {nodeid: seconds for nodeid, seconds in times.items() if seconds >= RECORD_S}
    ranked = sorted(kept.items(), key=lambda item: item[1], reverse=True)
    return dict(ranked[:MAX_REMEMBERED])


def longest(*sources: Mapping[str, float]) -> dict[str, float]:
    """Each test's largest time over `sources` (the baseline's and the remembered ones)."""
    times: dict[str, float] = {}
    for source in sources:
        for nodeid, seconds in source.items():
            times[nodeid] = max(seconds, times.get(nodeid, 0.0))
    return times


def _read(path: Path | None) -> TimesFile:
    """The file's contents; an empty record when there is none, or it is no regular file of
    a sane size, or it or its directory is not the person's own (or root's) or is writable by
    others (nobody else can have put times there), or it does not parse."""
    if path is None:
        return TimesFile()
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_FILE_BYTES:
            return TimesFile()
        if not (owned_by_user(path.parent.resolve()) and owned_by_user(path)):
            return TimesFile()
        return TimesFile.model_validate_json(path.read_bytes())
    except (OSError, ValidationError, ValueError):
        return TimesFile()


def _write(path: Path, text: str) -> None:
    """Write through a temporary file renamed over the old one: concurrent verifications of
    one project leave one whole file, never a torn one."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(prefix=".times-", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(name, path)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise


@functools.lru_cache(maxsize=1)
def _runsc_said() -> str:
    from sandbox.choose import runsc_version
    from sandbox.errors import SandboxError

    try:
        return runsc_version()[1]
    except SandboxError:
        return ""


def _runsc(backend: str) -> str:
    """The runsc the gvisor backend runs (a docker engine's own runsc is in `sandbox`)."""
    return _runsc_said() if backend == "gvisor" else ""
