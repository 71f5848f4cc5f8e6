"""`fixloop-tui run --headless`: the loop without a screen, for CI and scripts.

Progress goes to stderr one line per step; with `--json` stdout gets exactly one
JSON object (ARCHITECTURE.md, "Guards and endings"). The exit code says how the run ended.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TextIO

from engine.model.client import ModelError
from engine.project.git_plumbing import WorkspaceError
from engine.project.settings import DEFAULT_TEST_CMD, DEFAULTS, ConfigError, Settings
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
from engine.run.exit_codes import EXIT_INFRA, EXIT_USAGE, RUN_EXIT_CODES
from engine.run.gate import PolicyGate
from engine.run.headless import headless_settings, result_json, run_headless
from engine.run.outcome import RunResult
from engine.run.resume import ResumeError
from engine.run.start import resume_run
from tui.lever_lines import (
    chosen_line,
    formatted_line,
    reasked_line,
    strategy_line,
    verified_line,
)

RUN_FLAGS = (
    "task",
    "spec",
    "files",
    "test_cmd",
    "test_report",
    "lint_cmd",
    "type_cmd",
    "format_cmd",
    "fix_cmd",
    "model",
    "model_path",
    "api_base",
    "edit_format",
    "feedback",
    "candidates",
    "prompt_profile",
    "runtime_values",
    "noop_retry",
    "restart_on_stall",
    "escalate_model",
    "max_iters",
    "exec_timeout",
    "test_timeout",
    "max_cost",
    "max_tokens",
    "wall_clock",
    "sandbox",
    "docker_url",
    "allow_runc",
    "image",
    "python",
    "approve",
    "accept_suspicious",
    "allow_test_edits",
    "theme",
)


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", nargs="?", type=Path, default=Path.cwd(), help="project root")
    parser.add_argument("--task", help='what to do (default: "Make the failing tests pass.")')
    parser.add_argument("--task-file", type=Path, help="read the task from a file")
    parser.add_argument(
        "--file", dest="files", action="append", help="a file the model must see (repeatable)"
    )
    parser.add_argument(
        "--spec",
        type=Path,
        help="spec mode: write a new module and its tests from a spec TOML (examples/specs/)",
    )
    parser.add_argument("--test-cmd", help=f"default: {DEFAULT_TEST_CMD}")
    parser.add_argument(
        "--test-report",
        metavar="GLOB",
        help="JUnit XML files the test command writes, read as its report (any runner)",
    )
    parser.add_argument("--lint-cmd")
    parser.add_argument("--type-cmd")
    parser.add_argument("--format-cmd")
    parser.add_argument(
        "--fix-cmd",
        help="a formatter that writes, run before the checks, its changes committed on their "
        "own, e.g. 'ruff format .' or 'gofmt -w .'",
    )
    parser.add_argument("--model", help="any litellm model name; default: the embedded one")
    parser.add_argument("--model-path", type=Path, help="a local GGUF file for local/<name>")
    parser.add_argument("--api-base", help="an OpenAI-compatible endpoint (Ollama, vLLM ...)")
    parser.add_argument("--edit-format", choices=["json", "whole"])
    parser.add_argument(
        "--feedback",
        choices=["packet", "raw"],
        help="what the model is told after a failure: the distilled packet (default) or the "
        "raw output's tail, as a naive loop would (for A/B runs)",
    )
    parser.add_argument(
        "--candidates",
        type=int,
        metavar="N",
        help="answers asked for per iteration, verified side by side, the best kept "
        "(default: per model)",
    )
    parser.add_argument(
        "--prompt-profile",
        choices=["auto", "small", "full"],
        help="small: the file under repair and the failure first; full (auto, the default): "
        "the test files and pointers too",
    )
    parser.add_argument(
        "--runtime-values",
        action=argparse.BooleanOptionalAction,
        help="the failing frame's local variables in the packet (default off: no gain measured)",
    )
    parser.add_argument(
        "--noop-retry",
        action=argparse.BooleanOptionalAction,
        help="re-ask once, in the same iteration, an answer that changes nothing (default on)",
    )
    parser.add_argument(
        "--restart-on-stall",
        action=argparse.BooleanOptionalAction,
        help="on a repeated failure, start once more from the baseline (default on)",
    )
    parser.add_argument(
        "--escalate-model",
        metavar="MODEL",
        help="a stronger model that takes over after a stall and for the last iteration",
    )
    parser.add_argument(
        "--max-iters", type=int, help=f"proposals before giving up (default {DEFAULTS.max_iters})"
    )
    parser.add_argument(
        "--exec-timeout", type=float, help=f"seconds per stage (default {DEFAULTS.exec_timeout:g})"
    )
    parser.add_argument(
        "--test-timeout",
        type=float,
        help=f"seconds per pytest test, 0 for none (default {DEFAULTS.test_timeout:g})",
    )
    parser.add_argument("--max-cost", type=float, help="USD")
    parser.add_argument("--max-tokens", type=int)
    parser.add_argument("--wall-clock", type=float, help="seconds for the whole run")
    parser.add_argument(
        "--sandbox",
        choices=["auto", "gvisor", "docker", "unsafe-local"],
        help="auto (default): docker if an engine runs gVisor, else gvisor",
    )
    add_docker_arguments(parser)
    parser.add_argument(
        "--image",
        help="the docker backend's image, from `sandbox build-image` (default: the host's "
        "interpreter mounted into a skeleton image)",
    )
    parser.add_argument("--python", type=Path, help="interpreter whose environment runs tests")
    parser.add_argument("--approve", choices=["step", "auto"])
    parser.add_argument(
        "--accept-suspicious",
        action="store_const",
        const=True,
        help="accept a suspicious pass (recorded)",
    )
    parser.add_argument(
        "--allow-test-edits",
        action="store_const",
        const=True,
        help="let the model edit pinned tests (a pass is then suspicious)",
    )
    parser.add_argument("--headless", action="store_true", help="no screen: for CI and scripts")
    parser.add_argument("--json", action="store_true", help="print one JSON object (headless)")
    parser.add_argument("--theme")


def add_docker_arguments(parser: argparse.ArgumentParser) -> None:
    """The docker backend's flags, shared by `run`, `watch`, `verify` and `sandbox run`."""
    parser.add_argument(
        "--docker-url",
        metavar="URL",
        help="the Docker-compatible engine (default: FIXLOOP_DOCKER_URL, DOCKER_HOST, "
        "else the first of fixloop's Podman socket, /var/run/docker.sock, /run/podman/podman.sock)",
    )
    parser.add_argument(
        "--allow-runc",
        action="store_const",
        const=True,
        help="let the docker backend run jobs in containers NOT under gVisor (warns every run)",
    )


class ProgressPrinter:
    """One short line per step on stderr."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.max_n = 0
        self.candidates: dict[int, int] = {}  # candidates seen per iteration, for "2 of 3"

    def emit(self, event: BaseEvent) -> None:
        line = self.line(event)
        if line:
            print(f"fixloop: {line}", file=self.stream, flush=True)

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
            return f"{prefix} {who} answered: {tokens} tokens in {event.duration_s:.1f} s"
        if isinstance(event, ProposalReady):
            if event.format_error:
                return f"{prefix} unusable answer: {event.format_error.splitlines()[1:2]}"
            return f"{prefix} proposal: {event.explanation or '(no explanation)'}"
        if isinstance(event, EditsApplied) and not event.files and not event.held_back:
            return f"{prefix} the answer changed no file: nothing to commit"
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


def settings_from_args(args: argparse.Namespace) -> tuple[Path, Settings] | int:
    """(project, settings) for `run`, headless or not; or the usage exit code, said why."""
    project: Path = args.path.resolve()
    if not project.is_dir():
        print(f"fixloop-tui: error: {args.path} is not a directory", file=sys.stderr)
        return EXIT_USAGE
    flags: dict[str, Any] = {key: getattr(args, key, None) for key in RUN_FLAGS}
    if args.spec is not None:
        if args.task is not None or args.task_file is not None:
            print("fixloop-tui: error: --spec takes no --task or --task-file", file=sys.stderr)
            return EXIT_USAGE
        flags["spec"] = args.spec.resolve()  # relative to where the command runs
    if args.task_file is not None:
        try:
            flags["task"] = args.task_file.read_text(encoding="utf-8")
        except OSError as exc:
            print(f"fixloop-tui: error: --task-file: {exc.strerror}", file=sys.stderr)
            return EXIT_USAGE
    try:
        return project, headless_settings(project, flags)
    except ConfigError as exc:
        print(f"fixloop-tui: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


def run_headless_command(args: argparse.Namespace) -> int:
    prepared = settings_from_args(args)
    if isinstance(prepared, int):
        return prepared
    project, settings = prepared
    return _complete(args, run_headless(project, settings, [ProgressPrinter(sys.stderr)]))


def resume_headless(args: argparse.Namespace) -> int:
    project: Path = args.path.resolve()
    if not project.is_dir():
        print(f"fixloop-tui: error: {args.path} is not a directory", file=sys.stderr)
        return EXIT_USAGE
    gate = PolicyGate(accept_suspicious=bool(args.accept_suspicious))
    sinks = [ProgressPrinter(sys.stderr)]
    return _complete(args, resume_run(project, args.run, gate=gate, sinks=sinks))


def _complete(args: argparse.Namespace, run: Coroutine[Any, Any, RunResult]) -> int:
    """Run to the end; user-fixable problems are usage errors, a dead model exit 6."""
    try:
        result = asyncio.run(run)
    except (ConfigError, WorkspaceError, ResumeError) as exc:
        print(f"fixloop-tui: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except ModelError as exc:
        print(f"fixloop-tui: error: {exc}", file=sys.stderr)
        return EXIT_INFRA
    if args.json:
        print(json.dumps(result_json(result)))
    elif result.report:
        print(f"report: {result.report}", file=sys.stderr)
    if result.status.value == "error":
        print(f"fixloop-tui: error: {result.reason}", file=sys.stderr)
    return RUN_EXIT_CODES[result.status]
