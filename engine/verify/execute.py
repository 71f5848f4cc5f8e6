"""The verifier: every configured stage, each in a fresh sandbox over a copy of the
workspace, parsed into `StageResult`s (ARCHITECTURE.md, "One iteration, step by step").

pytest stages load fixloop's own plugin, mounted read-only at /fixloop/plugins;
its report comes back as one line on stderr behind a per-run nonce. ruff and
mypy are asked for JSON. Anything else gets the generic excerpt.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path, PurePosixPath

from engine.verify.focus import NARROWED_SUFFIX, Plan, narrowed_argv, without_filtered
from engine.verify.go_report import go_module_path, parse_go_test
from engine.verify.js_report import parse_js_tests
from engine.verify.junit_report import parse_junit
from engine.verify.learned_times import LearnedTimes, longest
from engine.verify.parsers import (
    extract_report,
    generic_excerpt,
    parse_mypy,
    parse_ruff,
    parse_ruff_format,
)
from engine.verify.results import StageFocus, StageKind, StageResult, TestCounts, TestReport
from engine.verify.stages import Stage
from engine.verify.time_needs import time_needs
from engine.verify.toolchains import (
    runner_argv,
    toolchain_env,
    toolchain_limits,
    toolchain_links,
    toolchain_mounts,
    toolchain_of,
    toolchain_unpack,
)
from sandbox import ExecRequest, ExecResult, Limits, Sandbox, SandboxError
from sandbox.contract import refused_workspace_path

PLUGIN_DIR = Path(__file__).parent / "plugin"
PLUGIN_MOUNT = "/fixloop/plugins"
PLUGIN_MODULE = "fixloop_pytest"
# The test ids a narrowed run keeps (JSON list), read by the plugin.
FOCUS_VARIABLE = "FIXLOOP_ONLY_TESTS"
# The plugin and its sibling helpers; `sandbox build-image` bakes them into an image's
# site-packages too, so a job there can import them.
PLUGIN_FILES = tuple(sorted(PLUGIN_DIR.glob("fixloop_pytest*.py")))

StageCallback = Callable[[Stage, StageResult | None], Awaitable[None]]


class Verifier:
    """Runs the stages, cheapest first, and always all of them: a lint error must not
    hide what the tests say."""

    def __init__(
        self,
        sandbox: Sandbox,
        stages: Sequence[Stage],
        *,
        python: Path | None = None,
        limits: Limits | None = None,
        project: Path | None = None,
        test_timeout: float | None = None,
        fix: Stage | None = None,
        failing_first: bool = False,
    ) -> None:
        self.sandbox = sandbox
        self.stages = list(stages)
        self.python = python
        self.limits = limits or Limits()
        # The person's checkout: where a runner's read-only trees (node_modules) come from,
        # never what is verified.
        self.project = project
        self.test_timeout = test_timeout  # one pytest test's limit; None: only the stage's
        # Seconds the slow tests need (`time_needs.time_needs`): floors under their limits,
        # from the remembered times (`learned`) and a run's baseline (`allow_times`).
        self.time_needs: dict[str, float] = {}
        # The project's passing test times kept in the person's cache; None: not kept.
        self.learned: LearnedTimes | None = None
        # `fix_cmd`: run before the stages by the run's checker (engine/verify/fix.py)
        self.fix = fix
        # After a failed verification, its failing tests run first (engine/verify/focus.py).
        self.failing_first = failing_first

    def allow_times(self, baseline: Mapping[str, float] | None = None) -> None:
        """Size the per-test limits from the longest of each test's remembered time and its
        time at `baseline` (a run's first verification), with a margin."""
        remembered = self.learned.remembered() if self.learned is not None else {}
        self.time_needs = time_needs(
            longest(remembered, baseline or {}), self.test_timeout, self.limits.timeout_s
        )

    def learn(self, stages: Sequence[StageResult]) -> None:
        """Remember the passing tests' times of a verification of the person's own tree (never
        of a model's answer: `learned_times.py` says why)."""
        if self.learned is not None:
            self.learned.remember(self.sandbox, stages)

    async def run(
        self,
        workdir: Path,
        on_stage: StageCallback | None = None,
        *,
        plan: Plan | None = None,
        done: Sequence[StageResult] = (),
    ) -> list[StageResult]:
        """Verify `workdir` (copied, never modified). `on_stage` hears each start and end.

        `plan`: a narrowed run (`engine/verify/focus.py`): only the plan's stages, its test
        stages narrowed to their failing tests, heard under the name `<stage>.failing-first`.
        `done`: stages that already ran whole over this same tree, kept, not run again."""
        results = []
        kept = {result.name: result for result in done if result.focus is None}
        for stage in self.stages:
            if plan is not None and stage.name not in plan:
                continue
            if plan is None and stage.name in kept:
                results.append(kept[stage.name])
                continue
            focus = plan.get(stage.name) if plan is not None else None
            heard = stage
            if focus is not None:
                heard = stage.model_copy(update={"name": stage.name + NARROWED_SUFFIX})
            if on_stage is not None:
                await on_stage(heard, None)
            result = await self.run_stage(stage, workdir, focus)
            if on_stage is not None:
                await on_stage(heard, result)
            results.append(result)
        return results

    async def run_stage(
        self, stage: Stage, workdir: Path, focus: StageFocus | None = None
    ) -> StageResult:
        started = time.monotonic()
        try:
            result, nonce = await self.execute(stage, workdir, focus)
        except SandboxError as exc:
            return StageResult(
                name=stage.name,
                kind=stage.kind,
                cmd=stage.cmd,
                exit_code=-1,
                duration_ms=int((time.monotonic() - started) * 1000),
                infrastructure_error=str(exc),
                focus=focus,
            )
        go_module = go_module_of(workdir) if stage.runner == "go" else None
        parsed = parse_stage(stage, result, nonce, go_module=go_module)
        if focus is None:
            return parsed
        report = parsed.report
        if report is not None and stage.runner in ("jest", "vitest"):
            report = without_filtered(report, focus.tests)
        return parsed.model_copy(update={"focus": focus, "report": report})

    async def execute(
        self, stage: Stage, workdir: Path, focus: StageFocus | None = None
    ) -> tuple[ExecResult, str]:
        """The stage's raw result and the nonce its pytest report is marked with."""
        nonce = f"FIXLOOP-REPORT-{secrets.token_hex(8)}:"
        return await self.sandbox.run(self.request(stage, workdir, nonce, focus)), nonce

    def request(
        self, stage: Stage, workdir: Path, nonce: str, focus: StageFocus | None = None
    ) -> ExecRequest:
        """The sandbox job that runs `stage` over a copy of `workdir` (the fix pass's too): its
        runner's report switched on, its environment, read-only trees and limits
        (`engine/verify/toolchains.py`); with `focus`, only those tests."""
        toolchain = toolchain_of(stage.cmd)
        mounts = {PLUGIN_MOUNT: PLUGIN_DIR} if stage.runs_pytest else {}
        mounts |= toolchain_mounts(toolchain, self.project)
        return ExecRequest(
            argv=stage_argv(stage, focus),
            workdir=workdir,
            # At the checkout's own path: what its dev setup recorded (an editable install's
            # .pth, absolute paths in config) names the copy being verified.
            workspace_path=workspace_path(self.project),
            env={
                **stage_env(
                    stage, nonce, self.limits.timeout_s, self.test_timeout, self.time_needs
                ),
                **focus_env(stage, focus),
                **toolchain_env(toolchain, mounts),
            },
            limits=toolchain_limits(toolchain, self.limits),
            python=self.python,
            mounts=mounts,
            links=toolchain_links(mounts),
            unpack=toolchain_unpack(mounts),
            # A JUnit report is a file the runner writes: it comes back as a change.
            return_changes=stage.report is not None,
            changes_only=(stage.report,) if stage.report else (),
        )


def workspace_path(project: Path | None) -> PurePosixPath | None:
    """Where the workspace appears in the sandbox: the checkout's absolute path, or the
    sandbox's default when there is none or the sandbox refuses that path (a checkout in a
    system directory keeps the default; its recorded paths then miss, as before)."""
    if project is None:
        return None
    path = PurePosixPath(os.path.abspath(project))
    return None if refused_workspace_path(path) is not None else path


def stage_argv(stage: Stage, focus: StageFocus | None = None) -> list[str]:
    """The stage's argv, with ruff and mypy switched to their JSON output, a test runner to its
    report, and with `focus` a `go test`, Jest or Vitest stage narrowed to those tests by its
    own filter (`focus.narrowed_argv`: whole argv elements, never a shell string; a stage that
    cannot be narrowed runs whole, and its report, listing more tests than it was given, makes
    the narrowed run give way to the whole command)."""
    argv = stage.argv()
    if argv[0] == "sh":
        return argv
    tool = Path(argv[0]).name
    args = argv[1:]
    if tool.startswith("python") and args[:1] == ["-m"] and len(args) >= 2:
        tool, args = args[1], args[2:]
    if tool == "ruff" and args[:1] == ["check"] and not _has_option(args, "--output-format"):
        return [*argv, "--output-format", "json"]
    if tool == "mypy" and not (_has_option(args, "-O") or _has_option(args, "--output")):
        return [*argv, "-O", "json"]
    argv = runner_argv(stage.runner, argv)
    if focus is not None and not stage.runs_pytest:
        return narrowed_argv(stage.runner, argv, focus.tests) or argv
    return argv


def _has_option(args: list[str], option: str) -> bool:
    return any(arg == option or arg.startswith(option + "=") for arg in args)


def stage_env(
    stage: Stage,
    nonce: str,
    timeout_s: float,
    test_timeout: float | None = None,
    time_needs: Mapping[str, float] | None = None,
) -> dict[str, str]:
    if not stage.runs_pytest:
        return {}
    # A test still running at 60% of the stage's time is the one that hangs: pytest's
    # faulthandler prints its stack, which is all a timeout leaves to go on.
    hang_s = max(1, int(timeout_s * 0.6))
    # PYTEST_ADDOPTS reaches pytest however the command starts it (a shell, make, tox).
    env = {
        "PYTHONPATH": PLUGIN_MOUNT,
        "PYTEST_ADDOPTS": (
            f"-p {PLUGIN_MODULE} -p no:cacheprovider -o faulthandler_timeout={hang_s}"
        ),
        "FIXLOOP_REPORT_NONCE": nonce,
    }
    limit = per_test_limit(test_timeout, timeout_s)
    if limit is not None:
        env["FIXLOOP_TEST_TIMEOUT"] = f"{limit:g}"
        # The session's budget: several hangs still end in a report, not in a kill.
        env["FIXLOOP_STAGE_TIMEOUT"] = f"{timeout_s:g}"
        if time_needs:
            # Data for the plugin, never code: it only raises limits the budget still bounds.
            env["FIXLOOP_TEST_NEEDS"] = json.dumps(time_needs, separators=(",", ":"))
    return env


def focus_env(stage: Stage, focus: StageFocus | None) -> dict[str, str]:
    """The narrowed pytest run's test ids, for the plugin to keep only those (data it compares
    node ids with, never arguments: a test id cannot become an option)."""
    if focus is None or not stage.runs_pytest:
        return {}
    return {FOCUS_VARIABLE: json.dumps(focus.tests, separators=(",", ":"))}


def per_test_limit(test_timeout: float | None, stage_timeout_s: float) -> float | None:
    """One test's limit inside the plugin: the setting, but never more than half the stage's
    time, so one hang leaves the rest of the suite time to report."""
    if not test_timeout:
        return None
    return min(test_timeout, stage_timeout_s / 2)


def junit_reports(result: ExecResult, roots: list[str]) -> TestReport | None:
    """The JUnit XML files the stage wrote (`test_report`), read as one report; None when
    none came back or none is JUnit."""
    found = [
        parse_junit(change.content.decode("utf-8", errors="replace"), roots)
        for change in sorted(result.changes or [], key=lambda change: change.path)
        if change.content is not None
    ]
    return _merged([report for report in found if report is not None])


def _merged(reports: list[TestReport]) -> TestReport | None:
    """Several report files (one per suite, as Surefire and Gradle write them) as one."""
    if len(reports) < 2:
        return reports[0] if reports else None
    statuses = [report.exitstatus for report in reports if report.exitstatus is not None]
    return TestReport(
        exitstatus=max(statuses) if statuses else None,
        counts=TestCounts.total([report.counts for report in reports]),
        nodeids=[nodeid for report in reports for nodeid in report.nodeids],
        tests=[case for report in reports for case in report.tests],
        collection_errors=[error for report in reports for error in report.collection_errors],
        truncated=any(report.truncated for report in reports),
    )


def go_module_of(workdir: Path) -> str | None:
    """The module path in the tree's go.mod: it turns Go's import paths into directories."""
    try:
        return go_module_path((workdir / "go.mod").read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return None


def parse_stage(
    stage: Stage, result: ExecResult, nonce: str, *, go_module: str | None = None
) -> StageResult:
    """Everything we can learn from one stage's process: pure, so captured results replay.
    `go_module`: the tree's Go module path, for a Go report's file paths."""
    roots = [result.workdir]
    # Paths the model can use: relative to the project, not to the sandbox.
    prefix = result.workdir.rstrip("/") + "/"
    result = result.model_copy(
        update={
            "stdout": result.stdout.replace(prefix, ""),
            "stderr": result.stderr.replace(prefix, ""),
        }
    )
    stderr = result.stderr
    report = None
    if stage.runs_pytest:
        report, stderr = extract_report(stderr, nonce)
    elif stage.report is not None:
        report = junit_reports(result, roots)
    elif stage.runner == "go":
        # Go prints build errors, Jest and Vitest "no tests found", on stderr.
        report = parse_go_test(result.stdout + "\n" + stderr, roots, module=go_module)
    elif stage.runner in ("jest", "vitest"):
        report = parse_js_tests(result.stdout + "\n" + stderr, roots)
    diagnostics = []
    if stage.kind is StageKind.LINT:
        diagnostics = parse_ruff(result.stdout, roots) or []
    elif stage.kind is StageKind.FORMAT:
        diagnostics = parse_ruff_format(result.stdout + "\n" + stderr, roots)
    elif stage.kind is StageKind.TYPES:
        diagnostics = parse_mypy(result.stdout, roots)
    failed = result.exit_code != 0 or result.timed_out or result.oom_killed
    excerpt = ""
    if failed and report is None and not diagnostics:
        excerpt = generic_excerpt(result.stdout, stderr)
    return StageResult(
        name=stage.name,
        kind=stage.kind,
        cmd=stage.cmd,
        exit_code=result.exit_code,
        duration_ms=result.duration_ms,
        timed_out=result.timed_out,
        oom_killed=result.oom_killed,
        truncated=result.truncated,
        stdout=result.stdout,
        stderr=stderr,
        report=report,
        diagnostics=diagnostics,
        excerpt=excerpt,
    )
