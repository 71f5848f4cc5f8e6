"""The flags of the commands whose work is heavy (`run` and `watch`, headless or in the app;
`bench`; `batch`), apart from that work, and the settings the run's flags make. Light on
purpose: tui/cli.py builds every command's parser on each start, and the app reads its flags
and settings before its first frame.
"""

from __future__ import annotations

import argparse
import textwrap
from pathlib import Path

from bench.suite.arms import ARMS, DEFAULT_ARMS, FEEDBACK_ARMS, describe
from engine.project.settings import DEFAULT_TEST_CMD, DEFAULTS
from engine.project.strategy import FLAGGED_LEVERS, PRESETS, Strategy

# The settings `run` and `watch` take as flags (the strategy's levers too: LEVERS).
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
    "candidates",
    "strategy",
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
    """`run`'s and `watch`'s flags in groups, the common ones first. The repair levers are
    the strategy's keys (`--strategy`, `--set strategy.KEY=VALUE`); their old flags still work,
    out of the help, each saying once what replaced it (`deprecated_lever_flags`)."""
    parser.usage = "%(prog)s [PATH] [options]"
    task = parser.add_argument_group("task")
    task.add_argument("path", nargs="?", type=Path, default=Path.cwd(), help="project root")
    if parser.add_help is False:  # its own -h in the first group: the help fits a screen
        task.add_argument("-h", "--help", action="help", help="show this help and exit")
    task.add_argument("--task", help='what to do (default: "Make the failing tests pass.")')
    task.add_argument("--task-file", type=Path, metavar="F", help="read the task from a file")
    task.add_argument(
        "--file", dest="files", action="append", metavar="F", help="a project file in every prompt"
    )
    task.add_argument("--spec", type=Path, help="spec mode: a new module and tests from a spec")
    model = parser.add_argument_group("model")
    model.add_argument("--model", metavar="M", help="a litellm model (default: the embedded one)")
    model.add_argument("--api-base", metavar="URL", help="an OpenAI-compatible endpoint")
    model.add_argument("--model-path", type=Path, metavar="GGUF", help="a GGUF for local/<name>")
    model.add_argument(
        "--edit-format",
        choices=["json", "whole"],
        metavar="F",
        help="how the model answers: json or whole (per model)",
    )
    model.add_argument(
        "--candidates", type=int, metavar="N", help="answers per iteration, the best kept"
    )
    model.add_argument(
        "--escalate-model", metavar="M", help="a stronger model after a stall, and last"
    )
    checks = parser.add_argument_group("checks (each runs in the sandbox)")
    checks.add_argument("--test-cmd", metavar="CMD", help=f"default: {DEFAULT_TEST_CMD}")
    checks.add_argument("--lint-cmd", metavar="CMD", help="a linter, e.g. 'ruff check .'")
    checks.add_argument("--type-cmd", metavar="CMD", help="a type checker, e.g. 'mypy .'")
    checks.add_argument(
        "--format-cmd", metavar="CMD", help="a format check, e.g. 'ruff format --check .'"
    )
    checks.add_argument(
        "--fix-cmd", metavar="CMD", help="a formatter run first, its changes committed apart"
    )
    checks.add_argument(
        "--test-report", metavar="GLOB", help="JUnit XML the test command writes, as its report"
    )
    checks.add_argument(
        "--test-timeout",
        type=float,
        metavar="S",
        help=f"seconds per pytest test, 0 for none (default {DEFAULTS.test_timeout:g})",
    )
    checks.add_argument(
        "--failing-first",
        action=argparse.BooleanOptionalAction,
        help="a red check's failing tests first, alone (default on)",
    )
    sandbox = parser.add_argument_group("sandbox")
    sandbox.add_argument(
        "--sandbox",
        choices=["auto", "gvisor", "docker", "unsafe-local"],
        metavar="B",
        help="auto (docker if an engine runs gVisor, else gvisor), gvisor, docker",
    )
    sandbox.add_argument(
        "--python", type=Path, metavar="PY", help="the interpreter whose venv runs the tests"
    )
    add_docker_arguments(sandbox)
    sandbox.add_argument("--image", help="the docker backend's image (`sandbox build-image`)")
    budget = parser.add_argument_group("budget")
    budget.add_argument(
        "--max-iters",
        type=int,
        metavar="N",
        help=f"proposals before giving up (default {DEFAULTS.max_iters})",
    )
    budget.add_argument(
        "--exec-timeout",
        type=float,
        metavar="S",
        help=f"seconds per check (default {DEFAULTS.exec_timeout:g})",
    )
    budget.add_argument("--max-cost", type=float, metavar="USD", help="the run's money")
    budget.add_argument("--max-tokens", type=int, metavar="N", help="the run's model tokens")
    budget.add_argument("--wall-clock", type=float, metavar="S", help="the run's seconds")
    review = parser.add_argument_group("review and output")
    review.add_argument(
        "--approve",
        choices=["step", "auto"],
        metavar="MODE",
        help="step: you review each proposal (the app); auto",
    )
    review.add_argument(
        "--accept-suspicious",
        action="store_const",
        const=True,
        help="accept a suspicious pass (recorded)",
    )
    review.add_argument(
        "--allow-test-edits",
        action="store_const",
        const=True,
        help="let the model edit pinned tests (a pass is suspicious)",
    )
    review.add_argument("--headless", action="store_true", help="no screen: for CI and scripts")
    review.add_argument("--json", action="store_true", help="print one JSON object (headless)")
    add_theme_argument(review)
    strategy = parser.add_argument_group("strategy (its keys: docs/configuration.md)")
    strategy.add_argument(
        "--strategy",
        choices=list(PRESETS),
        metavar="NAME",
        help=f"presets: {', '.join(PRESETS)}",
    )
    strategy.add_argument(
        "--set",
        dest="assignments",
        action="append",
        metavar="KEY=VALUE",
        help="change a setting, e.g. strategy.code_noop=false",
    )
    for lever in FLAGGED_LEVERS:  # the levers' old flags: working, out of the help
        flag = f"--{lever.replace('_', '-')}"
        if Strategy.model_fields[lever].annotation is bool:
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, help=argparse.SUPPRESS)
        else:
            parser.add_argument(flag, help=argparse.SUPPRESS)


# The app's own themes (themes/: dark, light, high contrast), as `--theme` takes them.
THEME_CHOICES = ("dark", "light", "high-contrast")


def add_theme_argument(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    parser.add_argument(
        "--theme",
        choices=THEME_CHOICES,
        metavar="NAME",
        help=f"the app's colours: {', '.join(THEME_CHOICES)} (default: the last chosen)",
    )


def add_docker_arguments(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """The docker backend's flags, shared by `run`, `watch`, `verify` and `sandbox run`."""
    parser.add_argument(
        "--docker-url",
        metavar="URL",
        help="the Docker-compatible engine (default: found; docs/docker.md)",
    )
    parser.add_argument(
        "--allow-runc",
        action="store_const",
        const=True,
        help="let docker jobs run NOT under gVisor (warns)",
    )


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
        "--suite",
        default="humaneval",
        help="humaneval (default), examples, a DIR of *.jsonl; real: seeded bugs in pinned real "
        "projects; mutants: seeded bugs in --repo PATH",
    )
    parser.add_argument(
        "--repo",
        type=Path,
        metavar="PATH",
        help="--suite mutants: your project (only read; each bug runs on a copy)",
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
