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

Why a hostile answer gains nothing from it: the test ids come from the last verification's
report (sandbox output) and go back into a sandbox as data (an environment variable the
plugin compares node ids with), never onto the host's command line; the narrowing only
decides how soon a red tree is reported red.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from engine.verify.results import StageFocus, StageResult
from engine.verify.stages import Stage

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
        tests = failing_tests(result) if stage.runs_pytest else None
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
