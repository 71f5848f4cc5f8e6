"""The flags of the commands whose work is heavy (`run` and `watch`, headless or in the app;
`bench`; `batch`), apart from that work, and the settings the run's flags make. Light on
purpose: tui/cli.py builds every command's parser on each start, and the app reads its flags
and settings before its first frame.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path
from typing import Any

from bench.suite.arms import ARMS, DEFAULT_ARMS, FEEDBACK_ARMS, describe
from engine.project.settings import DEFAULT_TEST_CMD, DEFAULTS, ConfigError, Settings
from engine.run.exit_codes import EXIT_USAGE
from engine.run.headless import headless_settings

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
    "test_focus",
    "repeat_called",
    "called_code",
    "code_last",
    "noop_retry",
    "reask_candidates",
    "code_noop",
    "docs_noop",
    "sample_after_noop",
    "restart_on_stall",
    "keep_asking",
    "escalate_model",
    "max_iters",
    "exec_timeout",
    "test_timeout",
    "failing_first",
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
    parser.add_argument("--lint-cmd", metavar="CMD", help="a linter stage, e.g. 'ruff check .'")
    parser.add_argument("--type-cmd", metavar="CMD", help="a type-checker stage, e.g. 'mypy .'")
    parser.add_argument(
        "--format-cmd", metavar="CMD", help="a format check stage, e.g. 'ruff format --check .'"
    )
    parser.add_argument(
        "--fix-cmd",
        help="a formatter that writes, run before the checks, its changes committed on their "
        "own, e.g. 'ruff format .' or 'gofmt -w .'",
    )
    parser.add_argument("--model", help="any litellm model name; default: the embedded one")
    parser.add_argument("--model-path", type=Path, help="a local GGUF file for local/<name>")
    parser.add_argument("--api-base", help="an OpenAI-compatible endpoint (Ollama, vLLM ...)")
    parser.add_argument(
        "--edit-format",
        choices=["json", "whole"],
        help="how the model answers: json (search/replace edits, hosted models) or whole "
        "(each file complete, small local models); default: per model",
    )
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
        help="the failing frame's local variables in the packet (default on: more bench fixes "
        "where the failing line names no input)",
    )
    parser.add_argument(
        "--test-focus",
        action=argparse.BooleanOptionalAction,
        help="the full prompt's test files cut to their failing tests and what those use "
        "(default off: fewer bench fixes measured)",
    )
    parser.add_argument(
        "--repeat-called",
        action=argparse.BooleanOptionalAction,
        help="the full prompt shows the functions a failing assertion calls again after the "
        "failure, even when their whole file is shown (default on: without it the embedded "
        "model echoed more)",
    )
    parser.add_argument(
        "--called-code",
        action=argparse.BooleanOptionalAction,
        help="a function a failing assertion calls is shown again without its docstring, so "
        "its code is what the 15 lines hold (default off: fewer bench fixes measured)",
    )
    parser.add_argument(
        "--code-last",
        action=argparse.BooleanOptionalAction,
        help="the full prompt shows the test files, the failure, then the code to fix "
        "(default off: the code first fixed more bench tasks)",
    )
    parser.add_argument(
        "--noop-retry",
        action=argparse.BooleanOptionalAction,
        help="re-ask once, in the same iteration, an answer that changes nothing (default on)",
    )
    parser.add_argument(
        "--reask-candidates",
        action=argparse.BooleanOptionalAction,
        help="with --candidates N: when none could be verified because they changed nothing, "
        "tell the model so and ask once more, in the same iteration (default off: not measured)",
    )
    parser.add_argument(
        "--code-noop",
        action=argparse.BooleanOptionalAction,
        help="an answer that changes only comments, layout or string statements that are no "
        "docstring (they run as nothing) of Python code changes nothing: not applied, re-asked "
        "(default on)",
    )
    parser.add_argument(
        "--docs-noop",
        action=argparse.BooleanOptionalAction,
        help="an answer that changes only docstrings, comments or layout of Python code "
        "changes nothing: not applied, re-asked (off by default; never where doctests run)",
    )
    parser.add_argument(
        "--sample-after-noop",
        action=argparse.BooleanOptionalAction,
        help="once an answer changed nothing, sample each later iteration's first answer "
        "instead of taking the greedy one (default on)",
    )
    parser.add_argument(
        "--restart-on-stall",
        action=argparse.BooleanOptionalAction,
        help="on a repeated failure, start once more from the baseline (default on)",
    )
    parser.add_argument(
        "--keep-asking",
        action=argparse.BooleanOptionalAction,
        help="with --restart-on-stall: answers that left the code as it was at the start use "
        "no restart; the model is asked on while iterations are left (default off: on "
        "QuixBugs one more fix for 29%% more tokens)",
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
    parser.add_argument(
        "--failing-first",
        action=argparse.BooleanOptionalAction,
        help="after a failed check, run the tests that failed first, alone, and the whole "
        "command once they pass (default on; green always comes from the whole command)",
    )
    parser.add_argument("--max-cost", type=float, help="USD")
    parser.add_argument(
        "--max-tokens", type=int, metavar="N", help="the run's budget of model tokens, all calls"
    )
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
    parser.add_argument(
        "--approve",
        choices=["step", "auto"],
        help="step: you review each proposal before it applies (the app's default); auto: "
        "every proposal applies (headless)",
    )
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
    add_theme_argument(parser)


# The app's own themes (themes/: dark, light, high contrast), as `--theme` takes them.
THEME_CHOICES = ("dark", "light", "high-contrast")


def add_theme_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--theme",
        choices=THEME_CHOICES,
        help=f"the app's colours: {', '.join(THEME_CHOICES)} (default: the last one chosen, "
        "else dark)",
    )


def add_docker_arguments(parser: argparse.ArgumentParser) -> None:
    """The docker backend's flags, shared by `run`, `watch`, `verify` and `sandbox run`."""
    parser.add_argument(
        "--docker-url",
        metavar="URL",
        help="the Docker-compatible engine (default: FIXLOOP_DOCKER_URL, DOCKER_HOST, "
        "else the first of fixloop's Podman and Docker sockets, /var/run/docker.sock, "
        "/run/podman/podman.sock)",
    )
    parser.add_argument(
        "--allow-runc",
        action="store_const",
        const=True,
        help="let the docker backend run jobs in containers NOT under gVisor (warns every run)",
    )


def settings_from_args(args: argparse.Namespace) -> tuple[Path, Settings] | int:
    """(project, settings) for `run`, headless or not; or the usage exit code, said why. A
    project config's untrusted security settings refuse the run (UntrustedSettings)."""
    prepared = _run_flags(args)
    if isinstance(prepared, int):
        return prepared
    project, flags = prepared
    try:
        return project, headless_settings(project, flags)
    except ConfigError as exc:
        print(f"fixloop-tui: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


def app_settings_from_args(args: argparse.Namespace) -> tuple[Path, Settings, str | None] | int:
    """As `settings_from_args`, for the app: a project config's untrusted security settings
    are left out instead, and the refusal returned third, for the task screen to show (the
    person is there to read it; a headless run has no one, so it refuses)."""
    from engine.project.settings import UntrustedSettings

    prepared = _run_flags(args)
    if isinstance(prepared, int):
        return prepared
    project, flags = prepared
    refusal = None
    try:
        try:
            return project, headless_settings(project, flags), None
        except UntrustedSettings as exc:
            refusal = str(exc)
        return project, headless_settings(project, flags, drop_untrusted=True), refusal
    except ConfigError as exc:
        print(f"fixloop-tui: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


def _run_flags(args: argparse.Namespace) -> tuple[Path, dict[str, Any]] | int:
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
    return project, flags


DEFAULT_OUT = Path("fixloop-batch")


def add_batch_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("tasks", type=Path, help="the batch file: JSONL, one task a line")
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        metavar="DIR",
        help=f"where each task's result.json, run/ and branch.bundle go (default {DEFAULT_OUT})",
    )
    parser.add_argument(
        "--jobs", type=int, default=2, metavar="N", help="tasks at once on this machine (default 2)"
    )
    add_ray_arguments(parser, "task")
    # Defaults for every task; a task's own line overrides them.
    parser.add_argument("--model", help="every task's model unless its line names one")
    parser.add_argument("--api-base", help="every task's endpoint unless its line names one")
    parser.add_argument(
        "--sandbox",
        choices=["auto", "gvisor", "docker", "unsafe-local"],
        help="every task's sandbox unless its line names one",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def add_ray_arguments(parser: argparse.ArgumentParser, unit: str) -> None:
    """`--ray` and the resources of each Ray task, for `batch` (a task) and `bench` (a run)."""
    parser.add_argument(
        "--ray",
        nargs="?",
        const="auto",
        metavar="ADDRESS",
        help=f"run each {unit} as a Ray task: on the cluster at ADDRESS (host:port, "
        "ray://...), or auto: the one running here (needs fixloop-tui[ray])",
    )
    parser.add_argument(
        "--num-cpus", type=float, default=1.0, metavar="N", help=f"Ray: CPUs per {unit} (default 1)"
    )
    parser.add_argument(
        "--memory",
        type=int,
        default=1024,
        metavar="MB",
        help=f"Ray: memory reserved per {unit} (default 1024)",
    )
    parser.add_argument(
        "--max-retries",
        type=int,
        default=2,
        metavar="N",
        help=f"Ray: attempts after a {unit}'s worker or node died (default 2)",
    )


def add_bench_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = "arms (run options of the loop):\n" + "\n".join(
        textwrap.fill(
            describe(name), 79, initial_indent=f"  {name:<9} ", subsequent_indent=" " * 12
        )
        for name in ARMS
    )
    parser.add_argument(
        "--suite", default="humaneval", help="humaneval (default), examples, or a DIR of *.jsonl"
    )
    parser.add_argument(
        "--mode",
        choices=["generate", "repair"],
        default="generate",
        help="generate: complete each prompt (default); repair: fix a seeded mutant of each task",
    )
    parser.add_argument("--model", help="any litellm model name; default: the embedded one")
    parser.add_argument("--model-path", type=Path, help="a local GGUF file for local/<name>")
    parser.add_argument("--api-base", help="an OpenAI-compatible endpoint (Ollama, vLLM ...)")
    parser.add_argument(
        "--max-iters",
        type=int,
        default=2,
        metavar="K",
        help="repair rounds after the first answer (default 2): the loop gets K + 1 iterations",
    )
    parser.add_argument("--limit", type=int, metavar="N", help="tasks to run (default: all)")
    parser.add_argument("--seed", type=int, default=0, help="which tasks (default 0)")
    chosen = parser.add_mutually_exclusive_group()
    chosen.add_argument(
        "--arms",
        metavar="A,B",
        help=f"arms to compare, comma-separated (default {','.join(DEFAULT_ARMS)}; see below)",
    )
    chosen.add_argument(
        "--feedback",
        choices=list(FEEDBACK_ARMS),
        help="the older way to name arms: packet = today, raw = raw, both = today,raw",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--plot", type=Path, metavar="FILE", help="also write the chart as a PNG")
    parser.add_argument(
        "--sandbox",
        choices=["gvisor", "docker", "auto", "unsafe-local"],
        default="gvisor",
        help="where each task's tests run (default gvisor)",
    )
    parser.add_argument(
        "--exec-timeout", type=float, default=30.0, metavar="S", help="per test run (default 30)"
    )
    parser.add_argument(
        "--test-layout",
        choices=["literal", "table", "data"],
        default="literal",
        help="how the hidden tests are written: literal, one test per assert with its "
        "arguments in the failing line (default); table, one test parametrized over "
        "(arguments, expected), as many projects write them; data, that test with its table "
        "in a file beside it, as projects that test from recorded cases do",
    )
    parser.add_argument(
        "--keep",
        action="store_true",
        help="keep the task repositories and their runs' audit trails (default: removed)",
    )
    parser.add_argument(
        "--ledger",
        type=Path,
        metavar="FILE",
        help="append each finished run to FILE (JSONL) and skip the runs it already holds "
        "for the same suite, mode, model, rounds, seed, timeout and test layout: a long bench over "
        "several sittings",
    )
    parser.add_argument(
        "--report-only",
        action="store_true",
        help="print the report over the runs --ledger FILE holds for these conditions; run nothing",
    )
    add_ray_arguments(parser, "run")
