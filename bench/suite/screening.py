"""Which seeded bugs a project's own suite sees: each candidate is written into a scratch copy
of the project, the suite run, and the candidate kept only when the suite passed before it,
fails with it, does not hang, and fails the same tests a second time (a bug the suite sees
only now and then would measure luck, not repair). What was kept is remembered in the
person's cache, so the screening, which runs the suite two or more times per bug, runs once.

Where the suite runs:
- `HostSuite`, for the pinned real projects of `bench/real_projects.py` only: their sdists
  are fixed by sha256 and their bare times are measured on the host already; the bugs are
  the bench's own operators. Nothing the user's repository or a model wrote runs there.
- `SandboxSuite`, for everything else (`bench --suite mutants --repo PATH`): the user's
  repository is hostile input, so its conftest and tests run only where fixloop runs tests,
  in the sandbox, through the engine's own verifier.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import stat
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, ValidationError

from bench.errors import ScreeningError
from bench.suite.project_mutants import ProjectMutant, read_source
from engine.feedback.tree import examine_tree
from engine.verify.execute import Verifier
from engine.verify.verdict import Verdict

# Bumped whenever the candidates or the screening's rules change: a cache from other rules
# would hand out other bugs for the same seed.
RULES = "project-mutants-3"
CACHE_DIR = ("fixloop", "bench-mutants")
MAX_CACHE_BYTES = 4_000_000
TRIES_PER_FUNCTION = 2


class SuiteOutcome(BaseModel):
    model_config = ConfigDict(frozen=True)

    verdict: Literal["ok", "failing", "broken"]
    failing: tuple[str, ...] = ()  # the failing tests' ids, sorted
    timed_out: bool = False
    detail: str = ""


class SuiteCheck(Protocol):
    """Runs a project's suite on a tree and says how it went."""

    where: str  # "host" or "sandbox", for the report

    async def check(self, root: Path) -> SuiteOutcome: ...


# pytest's short summary: `FAILED id`, `ERROR id`, and a failed subtest `SUBFAILED(params) id`
# (its parameters may hold spaces): the test id is the first word naming a file.
_SUMMARY_LINE = re.compile(r"^(?:FAILED|ERROR|SUBFAILED)\b")


def failing_ids(output: str) -> list[str]:
    """The test ids pytest's short summary (`-rfE`) names, sorted."""
    found = set()
    for line in output.splitlines():
        if _SUMMARY_LINE.match(line):
            words = line.split()[1:]
            nodeid = next((w for w in words if "::" in w or w.endswith(".py")), None)
            if nodeid is not None:
                found.add(nodeid)
    return sorted(found)


class HostSuite:
    """The suite on the host, as `bench/real_projects.py` times it bare: the project's venv
    python, `-m pytest -q -p no:cacheprovider`, stopped at the first failure (`-x`, the same
    one twice is what "the same way" means here) and killed at `timeout_s`. For the pinned
    real projects only (the module's docstring says why)."""

    where = "host"

    def __init__(self, python: Path, timeout_s: float, env: dict[str, str]) -> None:
        self.python, self.timeout_s, self.env = python, timeout_s, env

    async def check(self, root: Path) -> SuiteOutcome:
        # -B: no bytecode is written. The bugs follow one another in the same file, often of
        # the same size within the same second, and Python would take a stale .pyc for the next.
        argv = [str(self.python), "-B", "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider"]
        process = await asyncio.create_subprocess_exec(
            *argv, "-rfE", "--tb=no",
            cwd=root, env=self.env,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        try:
            out, _ = await asyncio.wait_for(process.communicate(), self.timeout_s)
        except TimeoutError:
            os.killpg(process.pid, 9)
            await process.wait()
            return SuiteOutcome(verdict="broken", timed_out=True, detail="timed out")
        text = out.decode("utf-8", "replace")
        failing = failing_ids(text)
        if process.returncode == 0:
            return SuiteOutcome(verdict="ok")
        if process.returncode in (1, 2) and failing:
            return SuiteOutcome(verdict="failing", failing=tuple(failing))
        return SuiteOutcome(verdict="broken", detail=text[-500:])


class SandboxSuite:
    """The suite in the sandbox, through the engine's verifier (the stages a run would
    verify with); a test's failure or error, or a file that fails to collect, is failing."""

    where = "sandbox"

    def __init__(self, verifier: Verifier) -> None:
        self.verifier = verifier

    async def check(self, root: Path) -> SuiteOutcome:
        examined = await examine_tree(root, self.verifier, baseline=None)
        verdict = examined.judgement.verdict
        failing = sorted(
            {
                *(
                    test.nodeid
                    for stage in examined.stages
                    if stage.report
                    for test in stage.report.tests
                    if test.outcome in ("failed", "error")
                ),
                *(
                    error.nodeid
                    for stage in examined.stages
                    if stage.report
                    for error in stage.report.collection_errors
                ),
            }
        )
        timed_out = any(stage.timed_out for stage in examined.stages)
        if verdict is Verdict.OK:
            return SuiteOutcome(verdict="ok")
        if verdict is Verdict.FAILING and failing and not timed_out:
            return SuiteOutcome(verdict="failing", failing=tuple(failing))
        reasons = "; ".join(examined.judgement.reasons)
        return SuiteOutcome(verdict="broken", timed_out=timed_out, detail=reasons[:500])


Progress = Callable[[str], None]


async def screen(
    candidates: Iterable[ProjectMutant],
    suite: SuiteCheck,
    scratch: Path,
    *,
    want: int,
    max_tries: int,
    progress: Progress | None = None,
) -> list[ProjectMutant]:
    """Up to `want` candidates (in their order) the suite fails twice the same way, each tried
    in `scratch` (a copy of the project, restored after each); ScreeningError when the suite
    does not pass on the copy as it is. A function gives one bug at most, so a handful spreads
    over the project instead of piling into its longest function, and is tried
    `TRIES_PER_FUNCTION` times at most (a function the suite never calls would eat them all)."""
    say = progress or (lambda _: None)
    first = await suite.check(scratch)
    if first.verdict != "ok":
        raise ScreeningError(
            f"the suite of {scratch.name} does not pass before any bug ({first.verdict}: "
            f"{first.detail or ', '.join(first.failing[:3])}): make it pass first"
        )
    kept: list[ProjectMutant] = []
    tries: dict[tuple[str, str], int] = {}
    tried = 0
    for candidate in candidates:
        if len(kept) >= want or tried >= max_tries:
            break
        where = (candidate.path, candidate.function)
        if tries.get(where, 0) >= TRIES_PER_FUNCTION or any(
            (m.path, m.function) == where for m in kept
        ):
            continue
        tries[where] = tries.get(where, 0) + 1
        tried += 1
        path = scratch / candidate.path
        original = read_source(scratch, candidate.path)
        mutated = candidate.applied(original) if original is not None else None
        if original is None or mutated is None:
            continue
        path.write_text(mutated, encoding="utf-8")
        try:
            once = await suite.check(scratch)
            again = await suite.check(scratch) if once.verdict == "failing" else None
        finally:
            path.write_text(original, encoding="utf-8")
        seen = "kept" if again is not None and again.failing == once.failing else "left out"
        if again is not None and again.verdict == "failing" and again.failing == once.failing:
            kept.append(candidate.model_copy(update={"failing": list(once.failing)}))
        elif once.verdict == "ok":
            seen = "left out (the suite still passes)"
        elif once.verdict == "broken":
            seen = f"left out ({'it hangs' if once.timed_out else 'the suite breaks'})"
        else:
            seen = "left out (fails differently the second time)"
        say(f"{candidate.describe()}: {seen} ({len(kept)}/{want} after {tried} tried)")
    return kept


# --- the cache ------------------------------------------------------------------------------


def cache_file(identity: str, seed: int, want: int, environ: dict[str, str] | None = None) -> Path:
    """Where the screening of `identity` (a project and its state) with this seed is kept:
    `$XDG_CACHE_HOME/fixloop/bench-mutants/<sha256>.json`."""
    env = os.environ if environ is None else environ
    base = Path(env.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    key = hashlib.sha256(json.dumps([RULES, identity, seed, want]).encode()).hexdigest()
    return base.joinpath(*CACHE_DIR, f"{key[:32]}.json")


def cached(path: Path) -> list[ProjectMutant] | None:
    """The kept bugs a screening remembered, or None: a file that is a link, not this user's,
    writable by others, too large or unreadable is not used (another user could plant one)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if (
            not stat.S_ISREG(info.st_mode)
            or info.st_uid != os.getuid()
            or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
            or info.st_size > MAX_CACHE_BYTES
        ):
            return None
        data = handle.read()
    try:
        return [ProjectMutant.model_validate(item) for item in json.loads(data)]
    except (ValueError, TypeError, ValidationError):
        return None


def remember(path: Path, kept: list[ProjectMutant]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    text = json.dumps([m.model_dump(mode="json") for m in kept], indent=1)
    fd, scratch = tempfile.mkstemp(dir=path.parent, prefix=".screening-")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(scratch, path)
