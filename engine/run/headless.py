"""A run with no person at the screen: the settings as `run --headless` resolves them, the
policy gate, the run to its end, and its JSON result. `run --headless` (tui/headless.py) and
each task of `batch` (engine/batch/run_task.py) go through here, so a batch task runs exactly as
the command would."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.project.settings import Settings, load_settings
from engine.project.trust import RepoTrust

# The run's machinery is imported by the functions that run: `headless_settings` is also how the
# app reads its flags before its first frame, which needs none of it.
if TYPE_CHECKING:
    from engine.run.events import EventSink
    from engine.run.outcome import RunResult


def headless_settings(
    project: Path,
    flags: Mapping[str, Any],
    trust: RepoTrust | None = None,
    *,
    drop_untrusted: bool = False,
) -> Settings:
    """Every settings layer over `project`, `flags` the highest; a spec is checked here, so a
    bad one stops the run before anything is written. Raises ConfigError (UntrustedSettings
    for a restricted key of the project's config that `trust`, by default the user's trust
    store, does not allow; with `drop_untrusted` they are left out instead)."""
    settings = load_settings(project, flags, trust=trust, drop_untrusted=drop_untrusted)
    if settings.spec is None:
        return settings
    from engine.run.start import resolve_spec

    spec = resolve_spec(project, settings)
    if spec is not None:  # the spec is the task
        settings = settings.model_copy(update={"task": spec.task})
    return settings


async def run_headless(
    project: Path, settings: Settings, sinks: Sequence[EventSink] = ()
) -> RunResult:
    """The whole run, every proposal approved by the policy gate."""
    from engine.run.gate import PolicyGate
    from engine.run.start import start_run

    gate = PolicyGate(accept_suspicious=settings.accept_suspicious)
    return await start_run(project, settings, gate=gate, sinks=sinks)


def result_json(result: RunResult) -> dict[str, Any]:
    """The run's result as `--json` prints it (ARCHITECTURE.md, "Guards and endings").
    `duration_s` is the wall time from the run's start to its verdict, `time_per_iteration_s`
    the mean of its iterations' (None before the first)."""
    durations = [record.duration_s for record in result.iterations]
    return {
        "run_id": result.run_id,
        "status": result.status.value,
        "reason": result.reason,
        "accepted_suspicious": result.accepted_suspicious,
        "iterations": [
            {
                "n": record.n,
                "status": record.status,
                "tests": (
                    record.tests.model_dump(
                        include={"collected", "passed", "failed", "errors", "skipped"}
                    )
                    if record.tests
                    else None
                ),
                "error_class": record.error_class,
                "commit": record.commit,
                "duration_s": round(record.duration_s, 3),
                "tokens": record.tokens,
                "cost_usd": record.cost_usd,
            }
            for record in result.iterations
        ],
        "branch": result.branch,
        "final_commit": result.final_commit,
        "run_dir": result.run_dir,
        "report": result.report,
        "tokens": result.tokens,
        "cost_usd": result.cost_usd,
        "duration_s": result.duration_s,
        "time_per_iteration_s": round(sum(durations) / len(durations), 3) if durations else None,
    }
