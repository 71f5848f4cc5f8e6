"""Distillation: parsed stage results -> a `RepairPacket`. Pure functions, no I/O."""

from __future__ import annotations

from collections.abc import Sequence

from engine.edits.diff import parse_diff
from engine.feedback.packet import EditAnchor, Failure, RepairPacket
from engine.verify.classify import Classification, ErrorClass
from engine.verify.parsers import hung_frames
from engine.verify.results import StageKind, StageResult, TestCase

FAILING = ("failed", "error")


def distill(
    stages: Sequence[StageResult],
    classification: Classification,
    *,
    iteration: int | None = None,
    max_iterations: int | None = None,
    previous: Sequence[StageResult] | None = None,
    last_diff: str | None = None,
    notes: Sequence[str] = (),
) -> RepairPacket:
    """The packet for one verification; the loop adds the repeat note when it renders it."""
    return RepairPacket(
        iteration=iteration,
        max_iterations=max_iterations,
        summary=summarise(stages),
        progress=progress_between(previous, stages) if previous is not None else None,
        error_class=classification.error_class.value,
        failures=failures_of(stages),
        diagnostics=[d for stage in stages if not stage.succeeded for d in stage.diagnostics],
        last_edit=anchor_from_diff(last_diff) if last_diff else None,
        notes=[*_what_your_code_did(classification), *notes],
    )


def _what_your_code_did(classification: Classification) -> list[str]:
    """The one line that says the candidate's code hit a limit of the sandbox (its disk, the
    network): the failing test alone would read like a bug in the test or the machine."""
    if classification.error_class is ErrorClass.SANDBOX_LIMIT:
        return [classification.primary]
    return []


def failures_of(stages: Sequence[StageResult]) -> list[Failure]:
    """Root causes first: what broke collection, then failing tests in run order, then
    stages that failed without saying more."""
    collection: list[Failure] = []
    tests: list[Failure] = []
    other: list[Failure] = []
    for stage in stages:
        report = stage.report
        if report is not None:
            for error in report.collection_errors:
                exception = _exception(error.exception_type, error.exception_message)
                frame = error.frame
                collection.append(
                    Failure(
                        test=f"collecting {error.nodeid}",
                        kind="collection error",
                        file=frame.file if frame else error.nodeid,
                        line=frame.line if frame else 0,
                        exception=exception,
                        frame=frame,
                        excerpt="" if exception else error.text,
                    )
                )
            tests += [_test_failure(case) for case in report.tests if _fails(case)]
            if report.stopped:
                other.append(
                    Failure(
                        test=f"stage {stage.name}: {stage.cmd}",
                        kind="timeout",
                        exception=report.stopped,
                    )
                )
                continue
        if stage.succeeded or stage.diagnostics:
            continue
        reported = report is not None and bool(report.tests or report.collection_errors)
        if reported and not (stage.timed_out or stage.oom_killed):
            continue
        other.append(_stage_failure(stage))
    return collection + tests + other


def _fails(case: TestCase) -> bool:
    return case.outcome in FAILING


def _exception(kind: str | None, message: str | None) -> str | None:
    if not kind:
        return message or None
    return f"{kind}: {message}" if message else kind


def _test_failure(case: TestCase) -> Failure:
    comparison = case.expected is not None or case.actual is not None
    exception = _exception(case.exception_type, case.exception_message)
    if comparison and case.exception_type == "AssertionError":
        exception = None  # expected/actual say it better than "assert 2 == 2.5"
    elif case.exception_type == "AssertionError" and case.explanation:
        exception = f"AssertionError: {case.explanation}"
    elif exception is None and case.explanation:
        exception = case.explanation
        if "XPASS(strict)" in exception:
            exception += " (the test passed but is marked xfail(strict=True))"
    frame = case.frame
    if frame is not None and case.test_frame is not None and frame == case.test_frame:
        frame = None  # the failing line already says where
    location = case.test_frame
    return Failure(
        test=case.nodeid,
        kind=_kind(case),
        file=location.file if location else case.file,
        line=location.line if location else case.line,
        assertion=case.assertion,
        expected=case.expected,
        actual=case.actual,
        comparison=case.comparison,
        exception=exception,
        frame=frame,
        runtime=case.runtime,
        captured=case.captured,
    )


def _kind(case: TestCase) -> str:
    if case.exception_type == "TestTimeout":  # the plugin stopped it at its time limit
        return "timeout"
    return "error" if case.outcome == "error" else "failed"


def _stage_failure(stage: StageResult) -> Failure:
    # A faulthandler dump names the test that hung: the stage's timeout, or the plugin's
    # last resort against a test that held the interpreter past its limit (no report then).
    hung = _hung_test(stage)
    if hung is not None:
        return hung
    if stage.infrastructure_error:
        why = f"the sandbox failed: {stage.infrastructure_error}"
        kind = "command"
    elif stage.timed_out:
        why, kind = "timed out (a test may hang or loop forever)", "timeout"
    elif stage.oom_killed:
        why, kind = "killed for exceeding the memory limit", "command"
    else:
        why, kind = f"exited {stage.exit_code}", "command"
    return Failure(
        test=f"stage {stage.name}: {stage.cmd}", kind=kind, exception=why, excerpt=stage.excerpt
    )


def _hung_test(stage: StageResult) -> Failure | None:
    frames = hung_frames(stage.excerpt or stage.stderr)
    tests = [f for f in frames if f.function.startswith("test")]
    if not tests:
        return None
    test = tests[0]
    innermost = frames[0]
    why = (
        "still running when the stage timed out: it hangs or loops forever"
        if stage.timed_out
        else "did not stop at its time limit and the session was ended: it hangs or loops "
        "forever in code that never returns to Python"
    )
    return Failure(
        test=f"{test.file}::{test.function}",
        kind="timeout",
        file=test.file,
        line=test.line,
        exception=why,
        frame=innermost if innermost != test else None,
    )


def summarise(stages: Sequence[StageResult]) -> str:
    """ "2 of 5 tests failing; 1 lint error" — counts, never prose."""
    parts = []
    for stage in stages:
        report = stage.report
        if report is not None:
            counts = report.counts
            # Collection errors are counted as errors by pytest, but they are not tests.
            bad = counts.failed + max(counts.errors - len(report.collection_errors), 0)
            if report.collection_errors:
                n = len(report.collection_errors)
                parts.append(f"{n} file{'s' if n != 1 else ''} failed to collect")
            if counts.collected == 0 and not report.collection_errors:
                parts.append("no tests were collected")
            elif bad and counts.collected:
                parts.append(f"{bad} of {counts.collected} tests failing")
            elif stage.succeeded:
                parts.append(f"{counts.passed} of {counts.collected} tests pass")
            if report.not_run:
                parts.append(f"{report.not_run} not run (time nearly up)")
            if stage.timed_out:
                parts.append(f"{stage.name} timed out")
        elif stage.diagnostics and not stage.succeeded:
            n = len(stage.diagnostics)
            noun = {StageKind.TYPES: "type error", StageKind.FORMAT: "unformatted file"}.get(
                stage.kind, f"{stage.name} error"
            )
            parts.append(f"{n} {noun}{'s' if n != 1 else ''}")
        elif not stage.succeeded:
            if stage.timed_out:
                parts.append(f"{stage.name} timed out")
            elif stage.oom_killed:
                parts.append(f"{stage.name} ran out of memory")
            else:
                parts.append(f"{stage.name} failed (exit {stage.exit_code})")
    return "; ".join(parts) or "all stages passed"


def _outcomes(stages: Sequence[StageResult]) -> tuple[set[str], set[str], bool]:
    """(passing, failing) nodeids of every pytest report, and whether they are the whole
    suite: no collection error hid tests, no report dropped entries to fit its size (then a
    test absent from its entries is not known to have passed: it is in neither set)."""
    passing: set[str] = set()
    failing: set[str] = set()
    whole = True
    for stage in stages:
        if stage.report is None:
            continue
        not_passed = {case.nodeid for case in stage.report.tests}
        failing |= {case.nodeid for case in stage.report.tests if _fails(case)}
        if stage.report.truncated:
            whole = False
        else:
            passing |= set(stage.report.nodeids) - not_passed
        whole = whole and not stage.report.collection_errors
    return passing, failing, whole


def progress_between(
    previous: Sequence[StageResult] | None, current: Sequence[StageResult]
) -> str | None:
    """ "3 tests now pass that failed before; 2 still fail; 1 new failure". A new failure
    is a test failing now that the previous verification saw pass, or that it did not have
    while it saw the whole suite; a test it could not see (a collection error, a report cut
    to fit) is never called new: it may have failed all along."""
    if previous is None:
        return None
    before_pass, before_fail, before_whole = _outcomes(previous)
    now_pass, now_fail, _ = _outcomes(current)
    fixed = len(before_fail & now_pass)
    still = len(before_fail & now_fail)
    new_failures = now_fail - before_fail
    if not before_whole:
        new_failures &= before_pass
    broke = len(new_failures)
    parts = []
    if fixed:
        verb = "tests now pass" if fixed != 1 else "test now passes"
        parts.append(f"{fixed} {verb} that failed before")
    if still:
        parts.append(f"{still} still fail{'s' if still == 1 else ''}")
    if broke:
        parts.append(f"{broke} new failure{'s' if broke != 1 else ''}")
    regressed = len(before_pass & now_fail)
    if regressed:
        parts.append(f"{regressed} of them passed before your edit")
    return "; ".join(parts) or None


def anchor_from_diff(diff: str) -> EditAnchor:
    """Files and new-side line ranges of a unified diff (git's); a deleted file has no lines."""
    files: dict[str, list[tuple[int, int]]] = {}
    for file in parse_diff(diff).files:
        ranges = files.setdefault(file.path, [])
        if file.new_path is not None:
            ranges.extend(span for hunk in file.hunks if (span := hunk.new_range) is not None)
    return EditAnchor(files=files)
