"""One batch task, wherever it runs: clone the repo into a scratch directory, run the loop there
exactly as `run --headless` would (engine/run/start.py, `run_headless`), and pack what comes
back — the run directory and the run's branch as a git bundle — into the task's outcome."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from engine.batch.batch_file import BatchTask
from engine.batch.task_outcome import Attempt, TaskOutcome, pack
from engine.errors import CloneError, ConfigError, ResumeError, WorkspaceError
from engine.project.git_plumbing import git_ok, host_git_env
from engine.project.paths import run_path
from engine.project.settings import load_settings
from engine.project.trust import RepoTrust, Trusted, Untrusted
from engine.run.exit_codes import EXIT_INFRA, EXIT_USAGE, RUN_EXIT_CODES
from engine.run.outcome import RunResult, result_json
from engine.run.start import run_headless, with_spec
from engine.text.redact import redact

BUNDLE = "branch.bundle"
RUN = "run"  # the run directory, under the task's output directory
CLONE_TIMEOUT_S = 600.0


def run_task(task: BatchTask, defaults: Mapping[str, Any], attempt: Attempt) -> TaskOutcome:
    """The task from clone to packed outcome. It never raises for the task's own failures:
    a run that could not start is an `error` outcome with its cause, like a run that ended
    in one (a batch goes on past any one task)."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"fixloop-batch-{task.id}-") as scratch:
        Path(scratch).chmod(0o755)  # the sandbox runs as nobody, as for `bench`'s repositories
        clone_dir = Path(scratch) / "repo"
        try:
            clone(task, clone_dir)
            flags = {**defaults, **task.settings}
            settings = with_spec(clone_dir, load_settings(clone_dir, flags, trust=repo_trust(task)))
            result = asyncio.run(run_headless(clone_dir, settings))
        except (ConfigError, WorkspaceError, ResumeError) as exc:
            return _failed(task, attempt, str(exc), EXIT_USAGE, started)
        except Exception as exc:  # a dead model, a sandbox that is missing, a crash: the cause
            cause = redact(f"{type(exc).__name__}: {exc}")  # it travels and is written
            return _failed(task, attempt, cause, EXIT_INFRA, started)
        return _finished(task, attempt, result, clone_dir, Path(scratch) / "out", started)


def repo_trust(task: BatchTask) -> RepoTrust:
    """A task's repository is cloned from anywhere: its restricted settings are refused unless
    the batch file (the user's own) says `"trust": true` on the task's line. The user's trust
    store is not asked: the clone's path is new each time."""
    if task.trust:
        return Trusted()
    return Untrusted(f'add "trust": true to line {task.line} of the batch file if you trust it')


def clone(task: BatchTask, into: Path) -> None:
    """A clone of the task's repo at its ref; never prompting for credentials (a worker has no
    one to ask: it fails instead)."""
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true"}
    steps = [(f"clone {task.repo}", ["git", "clone", "--quiet", task.repo, str(into)])]
    if task.ref is not None:
        steps.append(
            (f"check out {task.ref}", ["git", "-C", str(into), "checkout", "-q", task.ref])
        )
    for what, argv in steps:
        # The clone's checkout and the ref's run git in the new repository: nothing its config
        # names may run (`host_git_env`; before the clone exists, only the user's config).
        where = into if into.is_dir() else into.parent
        try:
            done = subprocess.run(
                argv,
                capture_output=True,
                text=True,
                env={**env, **host_git_env(where)},
                timeout=CLONE_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise CloneError(f"cannot {what}: no answer in {CLONE_TIMEOUT_S:g} s") from None
        if done.returncode != 0:
            said = done.stderr.strip().splitlines()[-1:] or [f"exit {done.returncode}"]
            raise CloneError(f"cannot {what}: {said[0]}")


def _finished(
    task: BatchTask,
    attempt: Attempt,
    result: RunResult,
    clone_dir: Path,
    staged: Path,
    started: float,
) -> TaskOutcome:
    staged.mkdir()
    shutil.copytree(run_path(clone_dir, result.run_id), staged / RUN)
    bundle = None
    if result.branch and git_ok(clone_dir, "rev-parse", "--verify", f"refs/heads/{result.branch}"):
        git_ok(clone_dir, "bundle", "create", str(staged / BUNDLE), result.branch)
        bundle = BUNDLE if (staged / BUNDLE).is_file() else None
    run = result_json(result)
    # Where the run's files are once gathered: relative to the task's output directory.
    run["run_dir"] = RUN
    run["report"] = f"{RUN}/{Path(result.report).name}" if result.report else None
    return TaskOutcome(
        id=task.id,
        line=task.line,
        repo=task.repo,
        status=result.status.value,
        reason=result.reason,
        exit_code=RUN_EXIT_CODES[result.status],
        attempts=[attempt],
        run=run,
        bundle=bundle,
        tokens=result.tokens,
        cost_usd=result.cost_usd,
        duration_s=round(time.monotonic() - started, 3),  # clone to packed, not the run alone
        archive=pack(staged),
    )


def _failed(
    task: BatchTask, attempt: Attempt, cause: str, exit_code: int, started: float
) -> TaskOutcome:
    return TaskOutcome(
        id=task.id,
        line=task.line,
        repo=task.repo,
        status="error",
        reason=cause,
        exit_code=exit_code,
        attempts=[attempt],
        duration_s=round(time.monotonic() - started, 3),
    )
