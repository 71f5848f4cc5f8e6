"""`fixloop-tui bench`: run a task suite through the real loop (`start_run`, once per task
and arm, in throwaway git repositories) and print the pass-rate-per-round table and plot.

Progress goes to stderr; stdout gets the table and the chart, or with `--json` exactly one
JSON object. Bad input is one line and exit 2; a model or sandbox that fails mid-run, exit 6.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from bench.errors import ArmError, LedgerError, SuiteError
from bench.suite.arms import ARMS, FEEDBACK_ARMS, parse_arms
from bench.suite.bench_report import render, write_png
from bench.suite.bench_run import (
    ArmFinished,
    BenchConfig,
    BenchEvent,
    BenchRun,
    ItemFinished,
    ItemStarted,
    Preparing,
    RoundVerified,
)
from bench.suite.ledger import Ledger, ledger_run
from bench.suite.runner import BenchRunner
from bench.suite.scoring import score
from bench.suite.tasks import BenchTask, load_suite
from engine.errors import ConfigError
from engine.feedback.checkout import open_configured_sandbox
from engine.model.litellm_module import load_litellm
from engine.model.types import ModelClient
from engine.project.settings import Settings, load_settings
from engine.run.exit_codes import EXIT_INFRA, EXIT_INTERRUPTED, EXIT_USAGE
from engine.run.start import make_client, resolve_model, with_spec
from sandbox import FixloopError, choose_backend
from tui.batch import ray_options, ray_problem
from tui.signals import Terminated, run_stoppable

if TYPE_CHECKING:
    from engine.batch.on_ray import RayOptions


class BenchProgress:
    """A line per round and per finished run, a bar per finished task, on stderr."""

    def __init__(self, stream: TextIO, width: int = 20) -> None:
        self.stream = stream
        self.width = width
        self.started = time.monotonic()

    def __call__(self, event: BenchEvent) -> None:
        line = self.line(event)
        if line:
            print(f"bench: {line}", file=self.stream, flush=True)

    def line(self, event: BenchEvent) -> str | None:
        if isinstance(event, Preparing):
            return event.detail
        if isinstance(event, ItemStarted):
            return f"{self.bar(event.index - 1, event.total)} {event.item_id} ..."
        if isinstance(event, RoundVerified):
            return (
                f"  {event.item_id} [{event.arm}] round {event.round}: {event.verdict}"
                f" ({event.detail})"
            )
        if isinstance(event, ArmFinished):
            r = event.result
            earlier = " (from the ledger)" if event.reused else ""
            touched = "; its last commit changed the bug's function" if r.touched_bug else ""
            return (
                f"  {event.item_id} [{r.arm}] {r.status}: {r.reason}; "
                f"{r.spend.prompt_tokens:,} prompt tokens, {r.wall_s:.1f}s{earlier}"
                f"{touched}"
            )
        if isinstance(event, ItemFinished):
            done = ", ".join(
                f"{arm} {'r' + str(r.passed_round) if r.passed_round is not None else 'failed'}"
                for arm, r in event.result.arms.items()
            )
            elapsed = time.monotonic() - self.started
            bar = self.bar(event.index, event.total)
            return f"{bar} {event.result.item_id}: {done} ({elapsed:.0f}s so far)"
        return None

    def bar(self, done: int, total: int) -> str:
        filled = round(self.width * done / total) if total else self.width
        return f"[{'#' * filled}{'.' * (self.width - filled)}] {done}/{total}"


def _fail(message: str) -> int:
    print(f"fixloop-tui: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def bench_command(args: argparse.Namespace) -> int:
    if args.suite in PROJECT_SUITES or args.repo is not None:
        return project_bench_command(args)
    if args.max_iters < 0 or args.max_iters > 99:
        return _fail("--max-iters must be 0 to 99 (repair rounds after the first answer)")
    if args.limit is not None and args.limit < 1:
        return _fail("--limit must be 1 or more")
    if args.plot is not None and not args.plot.resolve().parent.is_dir():
        return _fail(f"--plot {args.plot}: its directory does not exist")
    if problem := ray_problem(args):
        return _fail(problem)
    if args.ray is not None and args.keep:
        return _fail(
            "--keep keeps this machine's repositories; with --ray the runs' are the nodes'"
        )
    try:
        arms = (
            parse_arms(args.arms) if args.arms else list(FEEDBACK_ARMS[args.feedback or "packet"])
        )
        tasks = load_suite(args.suite)
        settings = Settings(
            model=args.model,
            model_path=args.model_path,
            api_base=args.api_base,
            sandbox=args.sandbox,
        )
        model = resolve_model(settings)
        if not args.report_only and (args.ray is None or not model.startswith("local/")):
            check_model(model, settings)  # on Ray each node loads its own local model
    except (ArmError, SuiteError, ConfigError) as exc:
        return _fail(str(exc))
    config = BenchConfig(
        suite=args.suite,
        mode=args.mode,
        model=model,
        arms=arms,
        max_rounds=args.max_iters,
        limit=args.limit,
        seed=args.seed,
        exec_timeout_s=args.exec_timeout,
        test_layout=args.test_layout,
    )
    try:
        ledger = Ledger(args.ledger, config) if args.ledger is not None else None
    except LedgerError as exc:
        return _fail(str(exc))
    if ledger is not None and ledger.other_levers:
        print(
            f"bench: {ledger.other_levers} run(s) in {ledger.path} measured run options no arm "
            "has now (the loop's defaults changed since): kept, not reused",
            file=sys.stderr,
        )
    if args.report_only:
        if ledger is None:
            return _fail("--report-only reads the runs of --ledger FILE: give one")
        return print_run(args, ledger_run(config, ledger))
    measured = measure(args, config, tasks, settings, ledger)
    return measured if isinstance(measured, int) else print_run(args, measured)


def measure(
    args: argparse.Namespace,
    config: BenchConfig,
    tasks: list[BenchTask],
    settings: Settings,
    ledger: Ledger | None,
) -> BenchRun | int:
    """The bench run, or the exit code of one that could not finish."""
    client = make_client(config.model, settings)
    return run_in_workdir(
        args,
        lambda workdir: run_bench(
            config,
            tasks,
            client,
            settings,
            workdir,
            BenchProgress(sys.stderr),
            ray_options(args) if args.ray is not None else None,
            ledger,
        ),
        ledger,
    )


def run_in_workdir(
    args: argparse.Namespace,
    start: Callable[[Path], Coroutine[Any, Any, BenchRun]],
    ledger: Ledger | None = None,
) -> BenchRun | int:
    """A bench run in a task directory of its own (removed after, unless --keep), or the exit
    code of one that could not finish: an error is one line, ctrl+c or SIGTERM says where the
    finished runs are when a ledger keeps them."""
    if args.sandbox == "unsafe-local":
        print("fixloop-tui: warning: unsafe-local runs model code unsandboxed", file=sys.stderr)
    workdir = Path(tempfile.mkdtemp(prefix="fixloop-bench-"))
    workdir.chmod(0o755)  # the sandbox runs as nobody and must reach the task repositories
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the unsafe-local warning was printed above
            run = run_stoppable(start(workdir))
    except FixloopError as exc:  # the model, the sandbox, or a run that could not start
        print(f"fixloop-tui: error: {exc}", file=sys.stderr)
        return EXIT_INFRA
    except KeyboardInterrupt as exc:
        said = exc if isinstance(exc, Terminated) else "interrupted (ctrl+c)"
        print(f"bench: {said}", file=sys.stderr)
        if ledger is not None:
            print(
                f"bench: the finished runs are in {ledger.path}: the same command goes on "
                "from there",
                file=sys.stderr,
            )
        return EXIT_INTERRUPTED
    finally:
        if args.keep:
            print(f"bench: task repositories and audit trails kept in {workdir}", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    return run


def print_run(args: argparse.Namespace, run: BenchRun) -> int:
    """The tables (or `--json`) on stdout, the plot if asked for."""
    config = run.config
    scores = score(run)
    if args.plot is not None:
        title = (
            f"{config.suite} {config.mode}, {config.model}, "
            f"{len(run.items)} tasks, seed {config.seed}"
        )
        write_png(scores, config.max_rounds, args.plot, title)
        print(f"bench: plot written to {args.plot}", file=sys.stderr)
    if args.json:
        print(json.dumps(as_json(run)))
    else:
        sys.stdout.write(render(run, scores))
    return 0


async def run_bench(
    config: BenchConfig,
    tasks: list[BenchTask],
    client: ModelClient,
    settings: Settings,
    workdir: Path,
    listener: BenchProgress,
    ray: RayOptions | None = None,
    ledger: Ledger | None = None,
) -> BenchRun:
    """Every run shares one sandbox backend, kept warm: as many ready sandboxes as the widest
    arm verifies at once (two at least, one replacing the other while the model thinks). On
    Ray each run opens its own on its node; this one screens repair mode's mutants."""
    backend = choose_backend(settings.sandbox, docker_url=settings.docker_url)
    widest = max((ARMS[arm].candidates or 1) for arm in config.arms)
    sandbox = open_configured_sandbox(settings, backend, warm=max(2, widest))
    try:
        runner = BenchRunner(
            config, client, sandbox, workdir, settings=settings, listener=listener, ledger=ledger
        )
        if ray is not None:
            from bench.suite.ray_runs import run_bench_on_ray

            return await run_bench_on_ray(runner, tasks, ray)
        return await runner.run(tasks)
    finally:
        await sandbox.close()


PROJECT_SUITES = ("real", "mutants")
ARMS_OF_PROJECTS = ("defaults",)


def project_bench_command(args: argparse.Namespace) -> int:
    """`--suite real` and `--suite mutants --repo PATH`: seeded bugs in whole projects."""
    if args.suite not in PROJECT_SUITES:
        return _fail("--repo goes with --suite mutants")
    if (args.suite == "mutants") != (args.repo is not None):
        return _fail("--suite mutants needs --repo PATH (your project); --suite real takes none")
    unsupported = [
        flag
        for flag, given in (
            ("--ledger", args.ledger is not None),
            ("--report-only", args.report_only),
            ("--ray", args.ray is not None),
        )
        if given
    ]
    if unsupported:
        return _fail(f"{', '.join(unsupported)}: not for --suite {args.suite}")
    if args.max_iters < 0 or args.max_iters > 99:
        return _fail("--max-iters must be 0 to 99 (repair rounds after the first answer)")
    if args.limit is not None and args.limit < 1:
        return _fail("--limit must be 1 or more")
    flags = {
        "model": args.model,
        "model_path": args.model_path,
        "api_base": args.api_base,
        "sandbox": args.sandbox,
    }
    repo = args.repo.resolve() if args.repo is not None else None
    try:
        # Seeded bugs in projects ask what a plain `fixloop-tui run` does: the defaults.
        arms = (
            parse_arms(args.arms)
            if args.arms
            else list(FEEDBACK_ARMS.get(args.feedback, ARMS_OF_PROJECTS))
        )
        if repo is not None:
            if not repo.is_dir():
                return _fail(f"--repo {args.repo}: not a directory")
            given = {k: v for k, v in flags.items() if v is not None}
            settings = with_spec(repo, load_settings(repo, given))
        else:
            settings = Settings(**flags)
        model = resolve_model(settings)
        check_model(model, settings)
    except (ArmError, ConfigError) as exc:
        return _fail(str(exc))
    config = BenchConfig(
        suite="real" if repo is None else f"mutants:{repo}",
        mode="repair",
        model=model,
        arms=arms,
        max_rounds=args.max_iters,
        limit=args.limit,
        seed=args.seed,
        exec_timeout_s=settings.exec_timeout,
    )
    client = make_client(model, settings)
    run = run_in_workdir(
        args,
        lambda workdir: run_project_bench(
            config, repo, client, settings, workdir, BenchProgress(sys.stderr), args.keep
        ),
    )
    if isinstance(run, int):
        return run
    return print_run(args, run)


async def run_project_bench(
    config: BenchConfig,
    repo: Path | None,
    client: ModelClient,
    settings: Settings,
    workdir: Path,
    listener: BenchProgress,
    keep: bool = False,
) -> BenchRun:
    """Screen (or recall) each project's bugs, then run the loop on each: one warm sandbox."""
    from bench.real_projects import PROJECTS
    from bench.suite.real import RealBenchRunner, real_projects, repo_project

    backend = choose_backend(settings.sandbox, docker_url=settings.docker_url)
    sandbox = open_configured_sandbox(settings, backend, warm=2)
    try:
        if repo is None:
            projects = await real_projects(
                list(PROJECTS), config.seed, config.limit, settings, listener
            )
        else:
            project = await repo_project(
                repo, settings, sandbox, config.seed, config.limit, listener
            )
            projects = [project]
        runner = RealBenchRunner(config, client, sandbox, workdir, listener=listener, keep=keep)
        return await runner.run(projects)
    finally:
        await sandbox.close()


def check_model(model: str, settings: Settings) -> None:
    """A model that cannot work is a usage error, found before any task runs; the embedded
    model's weights are joined (first use only) and loaded here, with progress."""
    if model.startswith("local/"):
        from engine.errors import LocalModelError
        from engine.model.local import EMBEDDED_MODEL, provider, weights

        try:
            if settings.model_path is None and model == EMBEDDED_MODEL:
                weights.model_file(_JoinProgress(sys.stderr))
            provider.ensure_registered(model, settings.model_path)
            print("bench: loading the local model ...", file=sys.stderr, flush=True)
            seconds = provider.preload(model)
        except LocalModelError as exc:
            raise ConfigError(str(exc)) from None
        print(f"bench: local model loaded in {seconds:.1f}s", file=sys.stderr, flush=True)
        return
    litellm = asyncio.run(load_litellm())
    try:
        litellm.get_llm_provider(model, api_base=settings.api_base)
    except Exception:
        raise ConfigError(
            f"unknown model {model!r}: name it as litellm does, provider/model "
            "(e.g. openai/gpt-4o-mini, ollama/qwen2.5-coder)"
        ) from None


class _JoinProgress:
    """The embedded model's weights are joined on first use (5-15 s): show it."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.shown = -1

    def __call__(self, done: int, total: int) -> None:
        percent = done * 100 // total if total else 100
        if percent // 10 != self.shown // 10:
            self.shown = percent
            print(
                f"bench: preparing the local model's weights: {percent}%",
                file=self.stream,
                flush=True,
            )


def as_json(run: BenchRun) -> dict[str, Any]:
    data = run.model_dump(mode="json")
    data["scores"] = {s.arm: s.model_dump(mode="json") for s in score(run)}
    return data
