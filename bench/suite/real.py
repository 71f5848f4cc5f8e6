"""Repairs on real code: seeded bugs in whole projects, each a task for the real loop.

`bench --suite real`: the pinned projects of `bench/real_projects.py`, set up as there (their
own `.venv`, installed editable). `bench --suite mutants --repo PATH`: the person's own
project, its settings as `run` reads them. Either way the bugs are the bench's mutant
operators inside functions the project's suite covers (a bug is kept only when the suite
fails with it, the same way twice: `bench.suite.screening`), chosen by the seed and
remembered in the person's cache. Each task is a fresh copy of the project at that bug
(`bench.suite.project_tasks`), asked what a person would ask ("the tests fail; fix the bug",
no file named), run through `start_run` with one model client and one warm sandbox; after
it, whether its last commit touched the function the bug is in.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from bench.errors import ScreeningError
from bench.suite.arms import arm_settings
from bench.suite.bench_run import (
    ArmFinished,
    ArmResult,
    BenchConfig,
    BenchRun,
    ItemFinished,
    ItemResult,
    ItemStarted,
    Listener,
    Preparing,
    SkippedTask,
    arm_result,
    machine,
)
from bench.suite.project_mutants import ProjectMutant, seeded_candidates, source_files
from bench.suite.project_tasks import (
    VENVS,
    base_commit,
    copy_project,
    make_task,
    task_python,
    touched_function,
)
from bench.suite.runner import HeardModel, RunWatch, run_task
from bench.suite.screening import (
    HostSuite,
    SandboxSuite,
    cache_file,
    cached,
    remember,
    screen,
)
from engine.feedback.checkout import configured_verifier
from engine.model.types import ModelClient
from engine.project.paths import project_python
from engine.project.settings import Settings
from engine.verify.stages import configured_stages
from sandbox import Sandbox

TASK_TEXT = "The tests fail; fix the bug."
BUGS_PER_PROJECT = 10
# Candidates tried per wanted bug before a project is given up on: most seeded changes in a
# well-tested project fail its suite; those that do not are uncovered or change nothing.
TRIES_PER_BUG = 4
HOST_SUITE_TIMEOUT_S = 600.0
# What a real project's suite needs in the sandbox beyond the bench's defaults: more-itertools
# runs 765 tests in about three minutes there, and two of them take over 20 s each.
REAL_LIMITS: dict[str, dict[str, float]] = {
    "more-itertools": {"exec_timeout": 900.0, "test_timeout": 0.0},
    "boltons": {"exec_timeout": 300.0},
    "cachetools": {"exec_timeout": 300.0},
}


class BenchProject(BaseModel):
    """A project the bench seeds bugs in: its checkout (only read), how its tests run, the
    bugs kept for it, and where they were screened."""

    model_config = ConfigDict(frozen=True)

    name: str
    source: Path
    settings: Settings  # what each of its runs shares (test command, limits ...)
    bugs: list[ProjectMutant]
    screened_on: str  # host | sandbox
    from_cache: bool = False


class RealItem(BaseModel):
    model_config = ConfigDict(frozen=True)

    item_id: str
    project: BenchProject
    bug: ProjectMutant


def spread(projects: Sequence[BenchProject], limit: int | None) -> list[RealItem]:
    """The tasks: each project's bugs in their seeded order, taken a round at a time across
    the projects, so `--limit N` covers every project before any gets a second bug."""
    items: list[RealItem] = []
    for round_ in range(max((len(p.bugs) for p in projects), default=0)):
        for project in projects:
            if round_ < len(project.bugs):
                bug = project.bugs[round_]
                items.append(RealItem(item_id=f"{project.name}#{bug.id}", project=project, bug=bug))
    return items[:limit] if limit is not None else items


def bugs_wanted(projects: int, limit: int | None) -> int:
    """Bugs to screen for per project: enough for `limit` spread over them."""
    if limit is None:
        return BUGS_PER_PROJECT
    return max(1, -(-limit // max(projects, 1)))


def tree_identity(root: Path) -> str:
    """A digest of the project's files as they are now (source, tests, config), its venvs and
    caches aside: a changed file is a new screening."""
    digest = hashlib.sha256()
    for directory, dirs, files in os.walk(root):
        dirs[:] = sorted(
            d
            for d in dirs
            if d not in (".git", ".fixloop", "__pycache__", ".pytest_cache", *VENVS)
            and not d.endswith(".egg-info")
        )
        for name in sorted(files):
            path = Path(directory) / name
            if path.is_symlink() or not path.is_file():
                continue
            digest.update(path.relative_to(root).as_posix().encode() + b"\0")
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


async def screened(
    name: str,
    source: Path,
    identity: str,
    seed: int,
    want: int,
    suite_for: SuiteFactory,
    listener: Listener,
) -> tuple[list[ProjectMutant], bool]:
    """The project's kept bugs: from the person's cache, or screened now (and remembered)."""
    where = cache_file(identity, seed, want)
    if (known := cached(where)) is not None:
        listener(Preparing(detail=f"{name}: {len(known)} bugs from {where}"))
        return known, True
    listener(Preparing(detail=f"{name}: screening seeded bugs against its suite (once)"))
    scratch_top = await asyncio.to_thread(_scratch_top)
    try:
        scratch = await asyncio.to_thread(copy_project, source, scratch_top / source.name)
        suite = suite_for(scratch)
        kept = await screen(
            seeded_candidates(source, seed),
            suite,
            scratch,
            want=want,
            max_tries=want * TRIES_PER_BUG,
            progress=lambda line: listener(Preparing(detail=f"{name}: {line}")),
        )
    finally:
        await asyncio.to_thread(shutil.rmtree, scratch_top, True)
    await asyncio.to_thread(remember, where, kept)
    return kept, False


def _scratch_top() -> Path:
    top = Path(tempfile.mkdtemp(prefix="fixloop-screen-"))
    top.chmod(0o755)  # the sandbox runs as nobody and must reach the copy
    return top


class SuiteFactory:
    """Makes the suite check for a scratch copy: on the host for the pinned projects, in the
    sandbox for anyone else's."""

    def __init__(
        self, where: str, settings: Settings, sandbox: Sandbox | None, env: dict[str, str]
    ) -> None:
        self.where, self.settings, self.sandbox, self.env = where, settings, sandbox, env

    def __call__(self, scratch: Path) -> HostSuite | SandboxSuite:
        if self.where == "host":
            python = task_python(scratch)
            assert python is not None  # the pinned projects are set up with a .venv
            return HostSuite(python, HOST_SUITE_TIMEOUT_S, self.env)
        assert self.sandbox is not None
        verifier = configured_verifier(
            self.sandbox,
            configured_stages(self.settings),
            self.settings,
            self.settings.python or project_python(scratch),
            scratch,
        )
        return SandboxSuite(verifier)


async def real_projects(
    names: Sequence[str],
    seed: int,
    limit: int | None,
    base: Settings,
    listener: Listener,
) -> list[BenchProject]:
    """The pinned real projects, set up as `bench/real_projects.py` sets them up, each with
    its screened bugs."""
    from bench.real_projects import PROJECTS, TEST_CMD, cache_root, clean_env, set_up

    want = bugs_wanted(len(names), limit)
    found = []
    for name in names:
        project = PROJECTS[name]
        listener(Preparing(detail=f"{project.slug}: setting up (once: sdist, .venv, editable)"))
        checkout = await asyncio.to_thread(set_up, project, Path(sys.executable), cache_root())
        settings = base.model_copy(update={"test_cmd": TEST_CMD, **REAL_LIMITS.get(name, {})})
        identity = f"real:{project.slug}:{sys.version_info[:2]}"
        factory = SuiteFactory("host", settings, None, clean_env())
        bugs, hit = await screened(project.slug, checkout, identity, seed, want, factory, listener)
        found.append(
            BenchProject(
                name=project.slug,
                source=checkout,
                settings=settings,
                bugs=bugs,
                screened_on="host",
                from_cache=hit,
            )
        )
    return found


async def repo_project(
    repo: Path,
    settings: Settings,
    sandbox: Sandbox,
    seed: int,
    limit: int | None,
    listener: Listener,
) -> BenchProject:
    """The person's own project (only ever read), its bugs screened in the sandbox."""
    if not source_files(repo):
        raise ScreeningError(f"{repo} has no Python source outside its tests to seed bugs in")
    if settings.python is None:
        project_python(repo)  # a venv the repository brought is refused as `run` refuses it
    elif settings.python.is_relative_to(repo):  # the copies' own venv stands in for it
        settings = settings.model_copy(update={"python": None})
    identity = f"repo:{repo}:{await asyncio.to_thread(tree_identity, repo)}"
    factory = SuiteFactory("sandbox", settings, sandbox, {})
    want = bugs_wanted(1, limit)
    bugs, hit = await screened(repo.name, repo, identity, seed, want, factory, listener)
    return BenchProject(
        name=repo.name,
        source=repo,
        settings=settings,
        bugs=bugs,
        screened_on="sandbox",
        from_cache=hit,
    )


def refused(reason: str) -> bool:
    """A request the model's server refused for what it held (HTTP 400: a prompt past the
    model's context, say): that task's failure, not the model's absence. Any other error
    before the model ever answered stops the bench, as a wrong key or endpoint would."""
    return "HTTP 400" in reason


class RealBenchRunner:
    """Each item under each arm: a fresh task copy, the loop, whether the fix touched the
    bug's function; the copy removed after unless `keep`."""

    def __init__(
        self,
        config: BenchConfig,
        model: ModelClient,
        sandbox: Sandbox,
        workdir: Path,
        *,
        listener: Listener,
        keep: bool = False,
    ) -> None:
        self.config, self.model, self.sandbox = config, HeardModel(model), sandbox
        self.workdir, self.listener, self.keep = workdir, listener, keep

    async def run(self, projects: Sequence[BenchProject]) -> BenchRun:
        started_at = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())
        started = time.monotonic()
        items = spread(projects, self.config.limit)
        results = []
        for index, item in enumerate(items, start=1):
            self.listener(ItemStarted(index=index, total=len(items), item_id=item.item_id))
            arms = {arm: await self.run_arm(index, item, arm) for arm in self.config.arms}
            result = ItemResult(
                item_id=item.item_id,
                task_id=item.project.name,
                mutant=item.bug.describe(),
                arms=arms,
            )
            results.append(result)
            self.listener(ItemFinished(index=index, total=len(items), result=result))
        skipped = [
            SkippedTask(task_id=p.name, reason="no seeded bug fails its suite the same way twice")
            for p in projects
            if not p.bugs
        ]
        return BenchRun(
            config=self.config,
            started=started_at,
            machine=machine(),
            duration_s=time.monotonic() - started,
            items=results,
            skipped=skipped,
            trails=str(self.workdir) if self.keep else "",
        )

    async def run_arm(self, index: int, item: RealItem, arm: str) -> ArmResult:
        slug = re.sub(r"[^A-Za-z0-9]+", "-", item.project.name).strip("-")
        root = self.workdir / f"{index:03d}-{slug}-{arm}"
        await asyncio.to_thread(make_task, item.project.source, root, item.bug)
        base = await asyncio.to_thread(base_commit, root)
        settings = arm_settings(arm, item.project.settings).model_copy(
            update={
                "model": self.config.model,
                "task": TASK_TEXT,
                "files": [],
                "python": item.project.settings.python,  # None: the copy's own venv
                "max_iters": self.config.max_rounds + 1,
                "approve": "auto",
            }
        )
        watch = RunWatch(item.item_id, arm, self.listener)
        result, seconds = await run_task(root, settings, watch, self.model, self.sandbox, refused)
        done = arm_result(arm, result, watch.spend, seconds)
        touched = await asyncio.to_thread(
            touched_function, root, base, result.final_commit, item.bug
        )
        done = done.model_copy(update={"touched_bug": touched})
        self.listener(ArmFinished(item_id=item.item_id, result=done))
        if not self.keep:
            await asyncio.to_thread(shutil.rmtree, root, True)
        return done
