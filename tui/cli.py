"""The `fixloop-tui` command line: parses arguments and hands work to the engine.

Every failure the user can cause ends as one line on stderr and an exit code
from engine/run/exit_codes.py (ARCHITECTURE.md, "Guards and endings"); no traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import warnings
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TextIO

from engine.project.settings import DEFAULT_TEST_CMD, DEFAULTS
from engine.run.exit_codes import (
    EXIT_INFRA,
    EXIT_INTERRUPTED,
    EXIT_OOM,
    EXIT_TIMEOUT,
    EXIT_USAGE,
)
from sandbox import ExecRequest, FixloopError, Limits, RuncWarning, open_sandbox

DEFAULT_IMAGE_TAG = "localhost/fixloop-sandbox:latest"


def _version() -> str:
    try:
        return version("fixloop-tui")
    except PackageNotFoundError:
        return "unknown"


def build_parser() -> argparse.ArgumentParser:
    from tui.headless import add_docker_arguments, add_run_arguments

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
        "--backend", "--sandbox", choices=["gvisor", "docker", "unsafe-local"], default="gvisor"
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
    run.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD ...")

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
    verify.add_argument("--json", action="store_true", help="print one JSON object")

    run_command = commands.add_parser(
        "run",
        help="run the repair loop (the default command)",
        description="Run the bounded code -> test -> distill -> repair loop on PATH. "
        "Headless exit: 0 ok, 1 exhausted/stalled/no_progress, 2 usage, 3 env_failure, "
        "4 suspicious_pass, 5 budget_exceeded, 6 infrastructure, 130 aborted.",
    )
    add_run_arguments(run_command)

    watch = commands.add_parser(
        "watch",
        help="verify the project on every save and show the repair packet; enter starts a run",
    )
    add_run_arguments(watch)

    resume = commands.add_parser(
        "resume", help="continue a run whose process died, losing no committed iteration"
    )
    resume.add_argument("run", help="run id (see `fixloop-tui runs`)")
    resume.add_argument("path", nargs="?", type=Path, default=Path.cwd(), help="project directory")
    resume.add_argument("--json", action="store_true", help="print one JSON object")
    resume.add_argument("--accept-suspicious", action="store_true")

    report = commands.add_parser("report", help="print a run's report.md")
    report.add_argument("run", help="run id (see `fixloop-tui runs`)")
    report.add_argument("path", nargs="?", type=Path, default=Path.cwd(), help="project directory")

    demo = commands.add_parser(
        "demo", help="run the loop on a bundled buggy project, offline with the local model"
    )
    from tui.demo import add_demo_arguments

    add_demo_arguments(demo)

    replay = commands.add_parser(
        "replay",
        help="open past runs read-only in the app: pick one from the list, or name it",
    )
    replay.add_argument("run", nargs="?", default="", help="run id (default: choose from a list)")
    replay.add_argument("path", nargs="?", type=Path, default=None, help="project directory")
    replay.add_argument("--theme", help="dark, light or high-contrast")

    bench = commands.add_parser(
        "bench",
        help="run a task suite and print pass rate per repair round",
        description="Run a suite (HumanEval, the bundled examples, or a DIR of tasks): each "
        "task's answer is tested in the sandbox and, on failure, repaired with feedback for up "
        "to K rounds. Prints pass@1, pass after each round, rounds to pass, tokens, cost and "
        "time per feedback arm. Exit: 0 done, 2 usage, 6 infrastructure.",
    )
    from tui.bench import add_bench_arguments

    add_bench_arguments(bench)

    runs = commands.add_parser("runs", help="list the project's runs (newest first)")
    runs.add_argument("path", nargs="?", type=Path, default=Path.cwd(), help="project directory")
    runs.add_argument("--json", action="store_true", help="print one JSON array")
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
    "demo",
    "bench",
)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    # `run` is the default command: `fixloop-tui [PATH] [flags]`.
    if not argv or (argv[0] not in COMMANDS and argv[0] not in ("-h", "--help", "--version")):
        argv.insert(0, "run")
    args = parser.parse_args(argv)
    show_runc_warnings()
    try:
        if args.command == "doctor":
            return _doctor(args)
        if args.command == "sandbox" and args.sandbox_command == "run":
            return _sandbox_run(args, parser)
        if args.command == "sandbox" and args.sandbox_command == "build-image":
            from tui.build_image import build_image_command

            return build_image_command(args, parser)
        if args.command == "run":
            if not args.headless:
                from tui.app import run_app

                return run_app(args)
            from tui.headless import run_headless

            return run_headless(args)
        if args.command == "watch":
            from tui.app import run_app

            return run_app(args, watch=True)
        if args.command == "demo":
            from tui.demo import run_demo

            return run_demo(args, main)
        if args.command == "bench":
            from tui.bench import bench_command

            return bench_command(args)
        if args.command == "resume":
            from tui.headless import resume_headless

            return resume_headless(args)
        if args.command == "report":
            return _report(args)
        if args.command == "runs":
            return _runs(args)
        if args.command == "replay":
            return _replay(args)
        if args.command == "verify":
            from tui.verify import verify_command

            return verify_command(args)
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    except FixloopError as exc:
        print(f"fixloop-tui: error: {exc}", file=sys.stderr)
        return EXIT_INFRA
    except KeyboardInterrupt:
        print("fixloop-tui: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def show_runc_warnings() -> None:
    """Every job that runs outside gVisor (--allow-runc) says so on stderr, each time."""
    warnings.simplefilter("always", RuncWarning)
    shown = warnings.showwarning

    def show(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: TextIO | None = None,
        line: str | None = None,
    ) -> None:
        if issubclass(category, RuncWarning):
            print(f"fixloop-tui: warning: {message}", file=sys.stderr, flush=True)
        else:
            shown(message, category, filename, lineno, file, line)

    warnings.showwarning = show


def _sandbox_run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    cmd = list(args.cmd)
    if cmd[:1] == ["--"]:
        cmd = cmd[1:]
    if not cmd:
        parser.error(
            "sandbox run needs a command after --, e.g. sandbox run -- python -c 'print(1)'"
        )
    workdir = args.workdir.resolve()
    if not workdir.is_dir():
        print(f"fixloop-tui: error: --workdir {args.workdir} is not a directory", file=sys.stderr)
        return EXIT_USAGE
    if args.backend == "unsafe-local":
        print(
            "fixloop-tui: warning: unsafe-local runs the command unsandboxed on this machine",
            file=sys.stderr,
        )
    request = ExecRequest(
        argv=cmd,
        workdir=workdir,
        python=args.python,
        limits=Limits(timeout_s=args.timeout, memory_mb=args.memory),
    )

    async def go() -> object:
        backend = open_sandbox(
            args.backend, docker_url=args.docker_url, allow_runc=args.allow_runc, image=args.image
        )
        try:
            return await backend.run(request)
        finally:
            await backend.close()

    with warnings.catch_warnings():
        from sandbox.local import UnsafeLocalWarning

        # The unsafe-local warning was printed above; a runc warning is printed per job.
        warnings.simplefilter("ignore", UnsafeLocalWarning)
        result = asyncio.run(go())
    from sandbox import ExecResult

    assert isinstance(result, ExecResult)
    if args.json:
        print(json.dumps(result.model_dump(exclude={"workdir"})))
    else:
        sys.stdout.write(result.stdout)
        sys.stderr.write(result.stderr)
        if result.truncated:
            print("fixloop-tui: output was truncated", file=sys.stderr)
        if result.timed_out:
            print(f"fixloop-tui: killed after the {args.timeout:g} s timeout", file=sys.stderr)
        if result.oom_killed:
            print(f"fixloop-tui: killed at the {args.memory} MB memory limit", file=sys.stderr)
    if result.timed_out:
        return EXIT_TIMEOUT
    if result.oom_killed:
        return EXIT_OOM
    return result.exit_code


def _report(args: argparse.Namespace) -> int:
    from engine.project.paths import run_path

    run_dir = run_path(args.path.resolve(), args.run)
    if not run_dir.is_dir():
        print(f"fixloop-tui: error: no run {args.run!r} in {args.path}", file=sys.stderr)
        return EXIT_USAGE
    report = run_dir / "report.md"
    if not report.is_file():
        print(f"run {args.run} ended ok (or is unfinished): it has no report.md", file=sys.stderr)
        return 1
    sys.stdout.write(report.read_text(encoding="utf-8"))
    return 0


def _runs(args: argparse.Namespace) -> int:
    from engine.project.run_directory import list_runs

    if not args.path.is_dir():
        print(f"fixloop-tui: error: {args.path} is not a directory", file=sys.stderr)
        return EXIT_USAGE
    runs = list_runs(args.path.resolve())
    if args.json:
        print(json.dumps([run.model_dump(exclude={"path"}) for run in runs]))
        return 0
    if not runs:
        print("no runs yet in this project")
        return 0
    print(f"{'run':20}  {'status':16}  {'iter':>4}  {'started':19}  task")
    for run in runs:
        task = run.task if len(run.task) <= 50 else run.task[:49] + "…"
        print(f"{run.id:20}  {run.status:16}  {run.iterations:4}  {run.started:19}  {task}")
    return 0


def _replay(args: argparse.Namespace) -> int:
    """`replay [RUN] [PATH]`; a lone argument that is a directory is the PATH."""
    from engine.project.paths import runs_dir
    from engine.project.settings import ConfigError, load_settings

    run, path = args.run, args.path
    if path is None:
        run, path = ("", Path(run)) if run and Path(run).is_dir() else (run, Path.cwd())
    project = path.resolve()
    runs = runs_dir(project)
    if not runs.is_dir():
        print(f"fixloop-tui: error: no runs yet in {project}", file=sys.stderr)
        return EXIT_USAGE
    if run and not (runs / run / "events.jsonl").is_file():
        print(
            f"fixloop-tui: error: no run {run!r} in {project} (see `fixloop-tui runs`)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        settings = load_settings(project, {"theme": args.theme})
    except ConfigError as exc:
        print(f"fixloop-tui: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    from tui.app import FixloopApp

    app = FixloopApp(project, settings, autostart=False, browse=run)
    app.run()
    return 0


def _doctor(args: argparse.Namespace) -> int:
    from engine.doctor import diagnose

    diagnosis = asyncio.run(diagnose(args.path.resolve()))
    if args.json:
        print(
            json.dumps(
                {
                    "sandbox_works": diagnosis.sandbox_works,
                    "checks": [c.model_dump() for c in diagnosis.checks],
                }
            )
        )
    else:
        width = max(len(c.name) for c in diagnosis.checks)
        for check in diagnosis.checks:
            mark = "ok  " if check.ok else ("FAIL" if check.needed else "--  ")
            line = f"{mark} {check.name:<{width}}  {check.detail}"
            if not check.ok and check.fix:
                line += f"  -> {check.fix}"
            print(line)
        if not diagnosis.sandbox_works:
            print("no sandbox works here: fixloop will not run model-written code", file=sys.stderr)
    return 0 if diagnosis.sandbox_works else 1


if __name__ == "__main__":
    sys.exit(main())
