"""Failing tests first: an iteration first runs only what failed at the last verification,
and the whole command only once that passes (ARCHITECTURE.md, "Failing tests first").

The rules, pure and small:
- A test stage narrows to the test ids it failed last time when its last report is whole: a
  pytest session that ran to its end (exit 1), every failure named (not truncated, no
  collection error, nothing left unrun), at most `MAX_FOCUS_TESTS` of them, fewer than it
  collected. Otherwise the stage runs whole.
- A stage that passed last time is left out of the narrowed run; one that failed and cannot
  narrow (a linter, a runner fixloop cannot narrow) runs whole in it.
- No stage narrows: no narrowed run at all (it would cost as much as the whole one).
- Only a narrowed run that fails stands as the verification; anything else (it passed, it
  found an environment problem, it was doubtful) is followed by the whole command, which
  alone can make a verdict ok. The stages that ran whole in the narrowed run are not run
  again over the same tree.

How each runner narrows (`narrowed_argv`): pytest through its plugin (the ids in
`FIXLOOP_ONLY_TESTS`); `go test` by one `-run=` pattern, an alternation of each failing test's
path, every level anchored and regexp-quoted (`^TestA$/^case$|^TestB$`); Jest and Vitest by
`--testNamePattern=` (each failing test's describe titles and title, joined by spaces as they
match them, anchored and escaped for a JS RegExp) and the failing files (Jest: one anchored,
escaped path pattern; Vitest: the relative paths, which it matches as substrings). A stage
narrows only when the filter is exact: matched against every test the last report listed, it
selects none but the failing ones (`selects`), so the narrowed run's counts plus those carried
over are the suite's. A stage run through a shell, or whose command already filters tests, runs
whole.

Why a hostile answer gains nothing from it: the test ids come from the last verification's
report (sandbox output) and go back into a sandbox as data (an environment variable the
plugin compares node ids with, or one argv element of the sandboxed command, never a shell
string), never onto the host's command line; every character a regexp gives meaning to is
escaped, and a name with a control character (which no argv can carry whole) is not narrowed;
the narrowing only decides how soon a red tree is reported red.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath

from engine.verify.results import StageFocus, StageResult, TestReport
from engine.verify.stages import Stage, needs_shell
from engine.verify.toolchains import Runner, runner_argv

# The test ids a narrowed pytest run is given, at most: past this a narrowed run saves little,
# and the ids travel in one environment variable (Linux caps one at 128 KiB).
MAX_FOCUS_TESTS = 200
MAX_FOCUS_BYTES = 64 * 1024
FAILING_OUTCOMES = ("failed", "error")
# The stage names a narrowed run's trail and events carry, beside the whole run's.
NARROWED_SUFFIX = ".failing-first"

# What a narrowed run does with each stage: narrowed to its failing tests, or run whole.
# A stage that is not in the plan is not run.
Plan = Mapping[str, StageFocus | None]


def failing_tests(result: StageResult) -> list[str] | None:
    """The test ids `result` failed, when they are all it failed and all named; else None."""
    report = result.report
    if report is None or result.timed_out or result.oom_killed or result.infrastructure_error:
        return None
    if report.exitstatus != 1 or report.truncated or report.collection_errors:
        return None
    if report.stopped or report.not_run or report.internal_error:
        return None
    failing = list(dict.fromkeys(c.nodeid for c in report.tests if c.outcome in FAILING_OUTCOMES))
    if not failing or len(failing) > MAX_FOCUS_TESTS:
        return None
    if sum(len(nodeid.encode()) + 3 for nodeid in failing) > MAX_FOCUS_BYTES:
        return None
    suite = report.counts.collected + (result.focus.carried_passed if result.focus else 0)
    if len(failing) >= suite:
        return None  # every test failed: narrowing would run them all
    return failing


def carried_passed(result: StageResult) -> int:
    """How many tests of `result`'s stage passed as far as the last verifications know: those
    that ran and passed, and those a narrowed run carried from the run before it."""
    passed = result.report.counts.passed if result.report is not None else 0
    return passed + (result.focus.carried_passed if result.focus is not None else 0)


def narrowing(stages: Sequence[Stage], previous: Sequence[StageResult] | None) -> Plan | None:
    """The narrowed run after `previous` (the last verification's stages), or None when
    there is none to make: nothing failed that can narrow, or the last run is unknown."""
    if not previous:
        return None
    last = {result.name: result for result in previous}
    # A narrowed run left out the stages that had passed: they passed at the run before it.
    after_narrowed = any(result.focus is not None for result in previous)
    plan: dict[str, StageFocus | None] = {}
    narrowed = False
    for stage in stages:
        result = last.get(stage.name)
        if result is None and after_narrowed:
            continue
        if result is None or result.cmd != stage.cmd:
            return None  # a stage the last run did not have: the whole command
        if result.succeeded and not (result.report and result.report.counts.failed):
            continue
        tests = failing_tests(result) if narrows(stage) else None
        if tests is not None and not stage.runs_pytest and not exact(stage, tests, result):
            tests = None
        if tests is None:
            plan[stage.name] = None
            continue
        plan[stage.name] = StageFocus(tests=tests, carried_passed=carried_passed(result))
        narrowed = True
    return plan if narrowed else None


def narrowed_note(stages: Sequence[StageResult]) -> str | None:
    """The packet's line that says a verification ran only the tests that failed before."""
    focused = [stage for stage in stages if stage.focus is not None]
    if not focused:
        return None
    ran = sum(len(stage.focus.tests) for stage in focused if stage.focus is not None)
    carried = sum(stage.focus.carried_passed for stage in focused if stage.focus is not None)
    tests = "test" if ran == 1 else "tests"
    return (
        f"This check ran only the {ran} {tests} that failed last time; the other {carried} "
        "passed then and run again, with the whole command, once these pass."
    )


# Options by which a command already chooses its tests: narrowing would fight them.
_CHOOSERS: Mapping[str, frozenset[str]] = {
    "go": frozenset({"-run", "--run", "-test.run", "--test.run", "-list", "--list", "-args"}),
    "jest": frozenset(
        {
            "-t",
            "--testNamePattern",
            "--testPathPattern",
            "--testPathPatterns",
            "--runTestsByPath",
            "--findRelatedTests",
            "-o",
            "--onlyChanged",
            "--changedSince",
            "--lastCommit",
            "--listTests",
            "--shard",
            "--",
        }
    ),
    "vitest": frozenset(
        {"-t", "--testNamePattern", "--changed", "--related", "--shard", "--dir", "--"}
    ),
}
_RUNNER_PROGRAMS: Mapping[str, frozenset[str]] = {
    "jest": frozenset({"jest", "jest.js"}),
    "vitest": frozenset({"vitest", "vitest.mjs"}),
}
# Characters no argv element carries whole (NUL) or that a test name has no business holding.
_UNSAFE = re.compile(r"[\x00-\x1f\x7f\ud800-\udfff]")
_GO_META = re.compile(r"[\\.+*?()|\[\]{}^$]")  # regexp.QuoteMeta's set
_JS_META = re.compile(r"[\\^$.*+?()\[\]{}|/]")  # a JS RegExp's syntax characters


def narrows(stage: Stage) -> bool:
    """Whether `stage`'s runner can be narrowed: pytest, `go test`, Jest or Vitest, and for the
    last three only a command run without a shell (the filter is an argv element)."""
    if stage.runs_pytest:
        return True
    return stage.runner in ("go", "jest", "vitest") and not needs_shell(stage.cmd)


def go_quote(text: str) -> str:
    """`text` as a Go regexp matching it literally (regexp.QuoteMeta)."""
    return _GO_META.sub(lambda m: "\\" + m.group(), text)


def js_quote(text: str) -> str:
    """`text` as a JS RegExp source matching it literally, with or without the `u` flag."""
    return _JS_META.sub(lambda m: "\\" + m.group(), text)


def _go_tests(tests: Sequence[str]) -> list[tuple[str, list[str]]] | None:
    """Each Go test id as (package, its name's levels); None when one is not a test's id."""
    found = []
    for nodeid in tests:
        package, sep, name = nodeid.partition("::")
        if not sep or not name or _UNSAFE.search(nodeid):
            return None
        found.append((package, name.split("/")))
    return found


def _js_tests(tests: Sequence[str]) -> list[tuple[str, str]] | None:
    """Each Jest or Vitest id as (file, the name its filter matches: titles joined by spaces);
    None when one cannot be filtered exactly (no title, a path out of the project)."""
    found = []
    for nodeid in tests:
        file, *titles = nodeid.split("::")
        path = PurePosixPath(file)
        if not titles or _UNSAFE.search(nodeid) or not file or path.is_absolute():
            return None
        if ".." in path.parts or file.startswith("-") or ":" in file:
            return None
        found.append((file, " ".join(titles)))
    return found


def _chooses_tests(runner: Runner, argv: Sequence[str]) -> bool:
    options = _CHOOSERS.get(runner, frozenset())
    return any(arg.split("=", 1)[0] in options for arg in argv)


def narrowed_argv(runner: Runner | None, argv: list[str], tests: Sequence[str]) -> list[str] | None:
    """`argv` (with its report switched on: `runner_argv`) narrowed to `tests`, the runner's
    own filter added as whole argv elements; None when it cannot be done exactly."""
    if runner not in ("go", "jest", "vitest") or not tests or argv[0] == "sh":
        return None
    if _chooses_tests(runner, argv):
        return None
    found = _go_filter(argv, tests) if runner == "go" else _js_filter(runner, argv, tests)
    if found is None:
        return None
    at, added = found
    if sum(len(arg.encode()) for arg in added) > MAX_FOCUS_BYTES:
        return None
    return [*argv[:at], *added, *argv[at:]]


def _go_filter(argv: list[str], tests: Sequence[str]) -> tuple[int, list[str]] | None:
    """`-run=` with each test's path, every level anchored and quoted, right after `test`."""
    go_tests = _go_tests(tests)
    if go_tests is None or "test" not in argv:
        return None
    paths = dict.fromkeys(
        "/".join(f"^{go_quote(level)}$" for level in levels) for _, levels in go_tests
    )
    return argv.index("test") + 1, [f"-run={'|'.join(paths)}"]


def _js_filter(
    runner: Runner, argv: list[str], tests: Sequence[str]
) -> tuple[int, list[str]] | None:
    """The name filter and the files, right after the runner's program (and Vitest's `run`):
    no option of the command can take them for its value."""
    js_tests = _js_tests(tests)
    programs = _RUNNER_PROGRAMS[runner]
    at = next((i + 1 for i, arg in enumerate(argv) if Path(arg).name in programs), 0)
    if js_tests is None or not at:
        return None
    if runner == "vitest" and at < len(argv) and argv[at] in ("run", "watch", "dev"):
        at += 1
    elif runner == "vitest" and at < len(argv) and not argv[at].startswith("-"):
        return None  # another subcommand (related, bench, list) or the user's own filter
    files = list(dict.fromkeys(file for file, _ in js_tests))
    names = "|".join(dict.fromkeys(js_quote(name) for _, name in js_tests))
    if runner == "jest":
        # Jest matches a path pattern against each test file's absolute path.
        paths = "|".join(js_quote(file) for file in files)
        return at, [f"(?:^|/)(?:{paths})$", f"--testNamePattern=^(?:{names})$"]
    # Vitest matches the name against its suites' and its own titles, joined by spaces, which
    # some versions begin with the file's: anchored at the end and at a space.
    return at, [*files, f"--testNamePattern=(?:^| )(?:{names})$"]


def selects(runner: Runner | None, tests: Sequence[str], known: Sequence[str]) -> list[str]:
    """Which of `known` (every test id a report listed) the filter for `tests` would run, as
    the runner matches (erring towards more: Jest and Vitest compared without case)."""
    if runner == "go":
        wanted = _go_tests(tests) or []
        alternatives = [levels for _, levels in wanted]
        chosen = []
        for nodeid in known:
            _, _, name = nodeid.partition("::")
            path = name.split("/")
            if any(all(a == b for a, b in zip(path, alt, strict=False)) for alt in alternatives):
                chosen.append(nodeid)
        return chosen
    if runner in ("jest", "vitest"):
        wanted_js = _js_tests(tests) or []
        files = {file.casefold() for file, _ in wanted_js}
        names = {name.casefold() for _, name in wanted_js}
        chosen = []
        for nodeid in known:
            file, *titles = nodeid.split("::")
            file, name = file.casefold(), " ".join(titles).casefold()
            in_files = any(
                file == f or file.endswith("/" + f) or f.endswith("/" + file) or f in file
                for f in files
            )
            if in_files and any(name == n or name.endswith(" " + n) for n in names):
                chosen.append(nodeid)
        return chosen
    return list(known)


def exact(stage: Stage, tests: Sequence[str], result: StageResult) -> bool:
    """Whether `stage` can be narrowed to `tests` and its filter, over the tests `result`'s
    report listed, selects only those: else a narrowed run would run tests that passed, and
    its counts would add them twice."""
    if result.report is None:
        return False
    argv = runner_argv(stage.runner, stage.argv())
    if narrowed_argv(stage.runner, argv, tests) is None:
        return False
    failing = set(tests)
    chosen = selects(stage.runner, tests, result.report.nodeids)
    # Two tests of one id: the filter runs both, one of which may have passed.
    return len(chosen) == len(set(chosen)) and all(nodeid in failing for nodeid in chosen)


def without_filtered(report: TestReport, tests: Sequence[str]) -> TestReport:
    """A narrowed Jest or Vitest run's report without the tests its name filter left out: both
    list them as skipped (`pending`), and they did not run. Only a narrowed run's report is
    read this way, and a narrowed run is never the verdict ok."""
    asked = set(tests)
    kept = [case for case in report.tests if case.outcome != "skipped" or case.nodeid in asked]
    dropped = len(report.tests) - len(kept)
    if not dropped:
        return report
    gone = {case.nodeid for case in report.tests if case.outcome == "skipped"} - asked
    counts = report.counts.model_copy(
        update={
            "collected": max(0, report.counts.collected - dropped),
            "skipped": max(0, report.counts.skipped - dropped),
        }
    )
    return report.model_copy(
        update={
            "counts": counts,
            "tests": kept,
            "nodeids": [nodeid for nodeid in report.nodeids if nodeid not in gone],
        }
    )
