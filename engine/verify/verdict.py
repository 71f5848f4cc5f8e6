"""Honest green (ARCHITECTURE.md, "Honest green"): what a verifier run means, and why a pass
is doubted.

`ok` needs every stage to exit 0, tests collected and run, no test file or test
infrastructure changed since the baseline (a new conftest.py included), no skip or
xfail added, no drop in the test count, no stage command that swallows failure and no
report rewritten by the project's hooks. Each unmet check is a named reason, and an
otherwise green run becomes a `suspicious_pass`.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from engine.project.pins import AddedSkip, TestChange, pinned_role, test_kind
from engine.verify.classify import Classification, ErrorClass
from engine.verify.results import StageKind, StageResult, TestCounts
from engine.verify.stages import swallows_failure


class Verdict(StrEnum):
    OK = "ok"
    FAILING = "failing"
    SUSPICIOUS_PASS = "suspicious_pass"
    ENV_FAILURE = "env_failure"
    ERROR = "error"


class Judgement(BaseModel):
    """The verdict on one verifier run, with every reason behind it."""

    model_config = ConfigDict(frozen=True)

    verdict: Verdict
    reasons: list[str] = Field(default_factory=list)
    classification: Classification
    signature: str = ""
    tests: TestCounts | None = None


def test_counts(stages: Sequence[StageResult]) -> TestCounts | None:
    """The summed counts of every test report, or None when no report came back. A stage
    narrowed to the tests that failed last time counts the tests that passed then as passed
    and collected, so the passed count compares across verifications (the progress guard,
    the candidates' ranking); such a run never makes a verdict ok."""
    counts = [
        stage.report.counts.model_copy(
            update={
                "collected": stage.report.counts.collected + stage.focus.carried_passed,
                "passed": stage.report.counts.passed + stage.focus.carried_passed,
            }
        )
        if stage.focus is not None
        else stage.report.counts
        for stage in stages
        if stage.report is not None
    ]
    return TestCounts.total(counts) if counts else None


def pass_doubts(
    stages: Sequence[StageResult],
    *,
    changed_tests: Sequence[TestChange] = (),
    added_skips: Sequence[AddedSkip] = (),
    baseline_collected: int | None = None,
) -> list[str]:
    """Every reason a run whose commands all exited 0 might still not be a real pass."""
    reasons = []
    for stage in stages:
        why = swallows_failure(stage.cmd)
        if why:
            reasons.append(f"stage {stage.name!r} swallows failure: {why} ({stage.cmd})")
    test_stages = [stage for stage in stages if stage.kind is StageKind.TESTS]
    if not test_stages:
        reasons.append("no test stage ran, so nothing shows the code works")
    for stage in test_stages:
        if stage.report is None:
            reasons.append(
                f"stage {stage.name!r} gave no test report: fixloop cannot confirm tests ran"
            )
        elif stage.report.counts.collected == 0:
            reasons.append(f"stage {stage.name!r} collected no tests")
        elif stage.report.counts.passed == 0:
            reasons.append(f"stage {stage.name!r} passed no test (all skipped or xfailed)")
        if stage.report is not None:
            reasons += rewritten_reasons(stage)
    for change in changed_tests:
        if change.doubtful:
            role = pinned_role(change.path)
            why = f" ({role})" if role else ""
            reasons.append(
                f"{test_kind(change.path)} {change.path} was {change.change} since the baseline"
                + why
            )
    for skip in added_skips:
        why = f" ({skip.why})" if skip.why else ""
        reasons.append(f"added {skip.text.strip()} at {skip.file}:{skip.line}{why}")
    counts = test_counts(stages)
    collected = counts.collected if counts is not None else None
    if baseline_collected is not None and collected is not None and collected < baseline_collected:
        reasons.append(f"the test count dropped from {baseline_collected} to {collected}")
    return reasons


def rewritten_reasons(stage: StageResult) -> list[str]:
    """One reason per report the project's hooks rewrote, naming the hooks and their files: a
    pass they produced is no pass, whoever wrote them."""
    report = stage.report
    if report is None:
        return []
    reasons = []
    for rewrite in report.rewritten:
        hooks = ", ".join(rewrite.hooks) or "none: code outside a hook did it"
        reasons.append(
            f"stage {stage.name!r}: the failed report of {rewrite.nodeid} ({rewrite.when}) was "
            f"{rewrite.what} by the project's report hooks: {hooks}"
        )
    more = report.rewritten_count - len(report.rewritten)
    if more > 0:
        reasons.append(f"stage {stage.name!r}: {more} more reports were rewritten")
    return reasons


def judge(
    stages: Sequence[StageResult],
    classification: Classification,
    *,
    doubts: Sequence[str] = (),
    signature: str = "",
) -> Judgement:
    """The verdict: env failures first, then failures, then a pass that is or is not doubted."""
    counts = test_counts(stages)

    def verdict(value: Verdict, reasons: Sequence[str]) -> Judgement:
        return Judgement(
            verdict=value,
            reasons=list(reasons),
            classification=classification,
            signature=signature,
            tests=counts,
        )

    if classification.error_class is ErrorClass.ENV_FAILURE:
        return verdict(Verdict.ENV_FAILURE, [classification.env_cause or classification.primary])
    failed = [stage for stage in stages if not stage.succeeded]
    # A swallowed failure is still a failure when the report shows it.
    lying = [
        stage
        for stage in stages
        if stage.succeeded
        and stage.report is not None
        and (
            stage.report.counts.failed
            or stage.report.counts.errors
            or stage.report.exitstatus not in (0, None)
        )
    ]
    if failed or lying:
        reasons = [_failure_reason(stage) for stage in failed]
        reasons += [
            f"stage {stage.name!r} exited 0 but its tests failed ({stage.cmd})" for stage in lying
        ]
        return verdict(Verdict.FAILING, reasons)
    if doubts:
        return verdict(Verdict.SUSPICIOUS_PASS, doubts)
    return verdict(Verdict.OK, [])


def _failure_reason(stage: StageResult) -> str:
    if stage.infrastructure_error:
        return f"stage {stage.name!r}: the sandbox failed: {stage.infrastructure_error}"
    if stage.timed_out:
        return f"stage {stage.name!r} timed out"
    if stage.oom_killed:
        return f"stage {stage.name!r} was killed for using too much memory"
    if stage.report is not None and stage.report.stopped:
        return f"stage {stage.name!r}: {stage.report.stopped}"
    if stage.report is not None and stage.exit_code == 5:
        return f"stage {stage.name!r} collected no tests (pytest exit 5 is not success)"
    return f"stage {stage.name!r} exited {stage.exit_code}"
