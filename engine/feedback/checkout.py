"""The verifier a run's settings configure, and verifying the user's checkout as it is now:
the one path behind `fixloop-tui verify`, the app's check before a run, and `watch`."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import git

from engine.feedback.tree import Baseline, Verification, examine_tree, rendered, working_tree_diff
from engine.project.git_plumbing import open_repo
from engine.project.paths import project_python
from engine.project.settings import Settings
from engine.verify.execute import Verifier
from engine.verify.go_seed_job import start_seeding
from engine.verify.learned_times import LearnedTimes
from engine.verify.stages import Stage, configured_stages, fix_stage
from sandbox import BackendName, Limits, Sandbox, choose_backend, open_sandbox


def open_configured_sandbox(settings: Settings, backend: BackendName, *, warm: int = 0) -> Sandbox:
    """`backend` (`auto` already chosen) with the settings' engine, runc permission and image;
    `warm` sandboxes kept ready where the backend can keep any."""
    return open_sandbox(
        backend,
        pool_size=0 if backend == "unsafe-local" else warm,
        docker_url=settings.docker_url,
        allow_runc=settings.allow_runc,
        image=settings.image,
    )


def configured_verifier(
    sandbox: Sandbox,
    stages: list[Stage],
    settings: Settings,
    python: Path,
    project: Path,
    environ: Mapping[str, str] | None = None,
) -> Verifier:
    """The settings' verifier, its per-test limits sized from the project's remembered test
    times (the person's cache, found from `environ`, by default the process's own)."""
    verifier = Verifier(
        sandbox,
        stages,
        python=python,
        limits=Limits(timeout_s=settings.exec_timeout),
        project=project,
        test_timeout=settings.test_timeout or None,
        fix=fix_stage(settings),
        failing_first=settings.failing_first,
    )
    verifier.learned = LearnedTimes(project, sandbox.name, environ)
    verifier.allow_times()
    return verifier


async def verify_checkout(project: Path, settings: Settings) -> Verification:
    """Verify the user's checkout as it is now (uncommitted work included), sandboxed,
    against HEAD: what is red before the model is asked. Bad settings raise ConfigError
    before any sandbox starts."""
    stages = configured_stages(settings)
    backend = choose_backend(settings.sandbox, docker_url=settings.docker_url)
    baseline, diff, touched = _baseline(project)
    sandbox = open_configured_sandbox(settings, backend)
    python = settings.python or project_python(project)
    # Go's build-cache seed, for the next verification: finished before the sandbox closes.
    seeding = start_seeding(sandbox, [stage.cmd for stage in stages])
    verifier = configured_verifier(sandbox, stages, settings, python, project)
    try:
        examined = await examine_tree(
            project, verifier, baseline=baseline, touched=touched, last_diff=diff or None
        )
        verifier.learn(examined.stages)
    finally:
        if seeding is not None:
            await seeding
        await sandbox.close()
    return rendered(examined)


def _baseline(project: Path) -> tuple[Baseline | None, str, list[str]]:
    """HEAD of the project's repository, the uncommitted diff and the paths it touches;
    nothing to compare with outside a repository or before its first commit."""
    try:
        with open_repo(project) as repo:
            repo.head.commit  # noqa: B018 - raises without a commit
    except (git.InvalidGitRepositoryError, git.NoSuchPathError, ValueError):
        return None, "", []
    diff, touched = working_tree_diff(project)
    return Baseline(repo=project), diff, touched
