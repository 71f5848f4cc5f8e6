"""`fixloop-tui run --headless`: the loop without a screen, for CI and scripts.

Progress goes to stderr one line per step; with `--json` stdout gets exactly one
JSON object (ARCHITECTURE.md, "Guards and endings"). The exit code says how the run ended.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shlex
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TextIO

from engine.errors import ConfigError, ModelError, ResumeError, WorkspaceError
from engine.project.pins import pinned_role
from engine.project.settings import Settings
from engine.run.events import (
    AnswerReasked,
    BaseEvent,
    CandidateChosen,
    CandidateVerified,
    Committed,
    EditsApplied,
    Formatted,
    GuardTripped,
    IterationStarted,
    ModelGivenUp,
    ModelRequested,
    ModelResponded,
    ModelRetrying,
    PacketReady,
    ProposalReady,
    ReferencesChecked,
    RunFinished,
    RunStarted,
    SpecPrepared,
    StageStarted,
    StrategyChanged,
    TestEditsRefused,
    TestsLatched,
)
from engine.run.exit_codes import EXIT_INFRA, EXIT_INTERRUPTED, EXIT_USAGE, RUN_EXIT_CODES
from engine.run.gate import PolicyGate
from engine.run.guards import SIGHUP_HUNG_UP, ModelUnreachable, RunInterrupted, stop_message
from engine.run.no_change import held_back_summary
from engine.run.outcome import RunResult, result_json
from engine.run.start import resume_run, run_headless
from engine.text.durations import said_duration
from engine.text.redact import redact
from engine.text.untrusted import printable
from tui.lever_lines import (
    chosen_line,
    formatted_line,
    reasked_line,
    sampled_line,
    strategy_line,
    together_line,
    verified_line,
)
from tui.signals import run_stoppable


class ProgressPrinter:
    """One short line per step on stderr."""

    def __init__(self, stream: TextIO, run_id: str = "") -> None:
        self.stream = stream
        self.run_id = run_id  # the run's, once it started (or the one resumed)
        self.max_n = 0
        self.candidates: dict[int, int] = {}  # candidates seen per iteration, for "2 of 3"

    def emit(self, event: BaseEvent) -> None:
        if isinstance(event, RunStarted):
            self.run_id = event.run_id
        line = self.line(event)
        if line:
            say(f"fixloop: {line}", self.stream)

    def line(self, event: BaseEvent) -> str | None:
        if isinstance(event, RunStarted):
            self.max_n = event.max_iterations
            return f"run {event.run_id} on {event.branch} with {event.model} ({event.sandbox})"
        if isinstance(event, IterationStarted):  # a resumed run has no RunStarted to read
            self.max_n = event.max_n
        if isinstance(event, StageStarted) and event.n == 0:  # the commands, said once
            return f"stage {event.stage}: {event.cmd}"
        prefix = f"[{getattr(event, 'n', 0)}/{self.max_n}]"
        if isinstance(event, ModelRetrying):
            return f"{prefix} {event.said}"
        if isinstance(event, ModelResponded):
            tokens = event.prompt_tokens + event.completion_tokens
            who = f"candidate {event.candidate}" if event.candidate else "model"
            return f"{prefix} {who} answered: {tokens} tokens in {said_duration(event.duration_s)}"
        if isinstance(event, ModelGivenUp):
            return f"{prefix} candidate {event.candidate} not waited for: another verified ok"
        if isinstance(event, ProposalReady):
            if event.format_error:
                return f"{prefix} unusable answer: {event.format_error.splitlines()[1:2]}"
            return f"{prefix} proposal: {event.explanation or '(no explanation)'}"
        if isinstance(event, EditsApplied) and not event.files and not event.held_back:
            return f"{prefix} {event.because or 'the answer changed no file'}: nothing to commit"
        if isinstance(event, EditsApplied) and event.held_back:
            named = [
                path + (f" ({role})" if (role := pinned_role(path)) else "")
                for path in event.held_back
            ]
            nothing = "" if event.files else ": nothing else to commit"
            return f"{prefix} {held_back_summary(named)}{nothing}"
        if isinstance(event, Committed):
            return f"{prefix} committed {event.sha[:10]}"
        if isinstance(event, PacketReady):
            tests = event.tests or {}
            counts = (
                f"{tests.get('passed', 0)} passed, {tests.get('failed', 0)} failed"
                if tests
                else "no test report"
            )
            if event.new_tests:
                counts += f", {event.new_tests} new by the model"
            label = "baseline" if event.n == 0 else prefix
            return f"{label} verified: {event.verdict} ({counts}; {event.error_class})"
        if isinstance(event, GuardTripped):
            return f"{prefix} {event.guard}: {event.detail}"
        return self.lever_line(event, prefix) or self.spec_line(event, prefix)

    def lever_line(self, event: BaseEvent, prefix: str) -> str | None:
        """A re-asked answer, each candidate, the chosen one, a change of strategy."""
        if isinstance(event, AnswerReasked):
            return f"{prefix} {reasked_line(event)} at temperature {event.temperature:g}"
        if isinstance(event, ModelRequested) and (
            line := sampled_line(event) or together_line(event)
        ):
            return f"{prefix} {line}"
        if isinstance(event, CandidateVerified):
            self.candidates[event.n] = self.candidates.get(event.n, 0) + 1
            return f"{prefix} {verified_line(event)}"
        if isinstance(event, CandidateChosen):
            return f"{prefix} {chosen_line(event, self.candidates.get(event.n, 0))}"
        if isinstance(event, StrategyChanged):
            return f"{prefix} {strategy_line(event)}"
        if isinstance(event, Formatted) and (line := formatted_line(event)):
            label = "baseline" if event.n == 0 else prefix
            return f"{label} {line}"
        return None

    def spec_line(self, event: BaseEvent, prefix: str) -> str | None:
        if isinstance(event, SpecPrepared):
            return (
                f"spec {event.name}: its {event.examples} examples are tests in "
                f"{event.examples_file}, committed and frozen"
            )
        if isinstance(event, TestsLatched) and event.n > 0:
            return f"{prefix} tests frozen: {', '.join(event.files) or 'no change'}"
        if isinstance(event, TestEditsRefused):
            return f"{prefix} refused edits to frozen tests: {', '.join(event.files)}"
        if isinstance(event, ReferencesChecked) and event.problems:
            more = f" (and {len(event.problems) - 1} more)" if len(event.problems) > 1 else ""
            return f"{prefix} reference error, not run: {event.problems[0]}{more}"
        if isinstance(event, RunFinished):
            kept = f"; the result is on branch {event.branch}" if event.branch else ""
            return f"finished: {event.status} — {event.reason}{kept}"
        return None


def run_headless_command(args: argparse.Namespace, project: Path, settings: Settings) -> int:
    """`run --headless` over `project` with `settings` (tui/cli.py, `settings_from_args`)."""
    printer = ProgressPrinter(sys.stderr)
    return _complete(args, project, printer, run_headless(project, settings, [printer]))


def resume_headless(args: argparse.Namespace) -> int:
    from tui.trail import named_project, named_run

    project = named_project(args.path)
    run_id = named_run(project, args.run) if project else None
    if project is None or run_id is None:
        return EXIT_USAGE
    gate = PolicyGate(accept_suspicious=bool(args.accept_suspicious))
    printer = ProgressPrinter(sys.stderr, run_id)
    resumed = resume_run(
        project,
        run_id,
        gate=gate,
        sinks=[printer],
        model=args.model,
        api_base=args.api_base,
        files=args.files or (),
    )
    return _complete(args, project, printer, resumed)


def _complete(
    args: argparse.Namespace,
    project: Path,
    printer: ProgressPrinter,
    run: Coroutine[Any, Any, RunResult],
) -> int:
    """Run to the end; user-fixable problems are usage errors, a dead model exit 6. SIGHUP
    (the terminal closed) stops the run as the app does: resumable, the reason in its trail."""
    try:
        result = run_stoppable(run, hang_up=stop_message(f"stopped: {SIGHUP_HUNG_UP}"))
    except (ConfigError, WorkspaceError, ResumeError) as exc:
        say(f"fixloop-tui: error: {exc}", sys.stderr)
        return EXIT_USAGE
    except ModelError as exc:
        say(f"fixloop-tui: error: {exc}", sys.stderr)
        return EXIT_INFRA
    except RunInterrupted as stop:
        from tui.screens.quit import resume_command

        resume = resume_command(printer.run_id, str(project))
        if args.json:  # one JSON object for every ending a caller can act on
            from engine.project.paths import run_path

            stopped = {"run_id": printer.run_id, "status": "stopped", "reason": stop.reason}
            run_dir = str(run_path(project, printer.run_id)) if printer.run_id else None
            say(json.dumps({**stopped, "run_dir": run_dir, "resume": resume}), sys.stdout)
        if isinstance(stop, ModelUnreachable):
            say(
                f"fixloop-tui: {stop.reason}; the run is kept: once the server is back, "
                f"{resume} (or add --api-base URL / --model NAME to ask another)",
                sys.stderr,
            )
            return EXIT_INFRA
        say(f"fixloop-tui: {stop.reason}; continue it: {resume}", sys.stderr)
        return EXIT_INTERRUPTED
    if args.json:
        say(json.dumps(result_json(result)), sys.stdout)
    elif result.report:
        say(f"report: {result.report}", sys.stderr)
    if result.status.value == "error":
        say(f"fixloop-tui: error: {result.reason}", sys.stderr)
    if result.branch:
        for line in next_commands(result.run_id, project):
            say(line, sys.stderr)
    return RUN_EXIT_CODES[result.status]


def next_commands(run_id: str, project: Path) -> list[str]:
    """What to do with a run that ended with a branch, as the commands to type (stderr: a
    `--json` stdout stays one object)."""
    what = (
        ("accept", "squash the branch onto yours"),
        ("keep", "keep the branch, merge it yourself"),
        ("discard", "delete the branch"),
        ("report", "what the run did"),
    )
    commands = [shlex.join(["fixloop-tui", verb, run_id, str(project)]) for verb, _ in what]
    width = max(len(command) for command in commands)
    lines = [
        f"{command:{width}}  # {why}" for command, (_, why) in zip(commands, what, strict=True)
    ]
    return ["next: " + lines[0], *("      " + line for line in lines[1:])]


def say(line: str, stream: TextIO) -> None:
    """`line` on `stream`, or nowhere once its terminal has gone (EIO after a hang-up): a run
    goes on, or ends as it was told, without its progress lines. Lines quote the model (its
    explanation, its paths): keys are redacted and no escape sequence reaches the terminal."""
    with contextlib.suppress(OSError):
        print(redact(printable(line)), file=stream, flush=True)
