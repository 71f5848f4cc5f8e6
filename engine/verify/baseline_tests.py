"""Whether a project has tests at its baseline: a repair run needs tests that existed before
the model wrote any, or nothing can show that a fix is right (ARCHITECTURE.md, "Honest green").
The one predicate for the task screen, the run's baseline and headless."""

from __future__ import annotations

from collections.abc import Sequence

from engine.verify.results import StageKind, StageResult
from engine.verify.tree import Verification

NO_TESTS = "no tests at the baseline: pytest collected none, so nothing can show a fix is right"


def no_tests_reason(verification: Verification | Sequence[StageResult]) -> str | None:
    """None when the verified tree has tests; else one line saying it has none.

    The rule: at least one test stage gave a pytest report, and every test stage's report
    says no test was collected (pytest's exit 5, or 0 collected with no collection error).
    Tests that fail to import (collection errors), a missing report (the sandbox or the plugin
    failed) and the plugin's own error say nothing about whether tests exist: those are other
    failures, shown as such, so they give None here.
    """
    stages = verification.stages if isinstance(verification, Verification) else verification
    tests = [stage for stage in stages if stage.kind is StageKind.TESTS]
    reports = [stage.report for stage in tests]
    if not reports:
        return None
    for report in reports:
        if report is None or report.internal_error or report.collection_errors:
            return None
        if report.exitstatus != 5 and report.counts.collected > 0:
            return None
    return NO_TESTS
