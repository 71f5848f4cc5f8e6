"""The one predicate for "this project has no tests at its baseline", on real captured pytest
output (tests/fixtures/captured): a repair run is refused on it, a failing or broken suite is not
"no tests"."""

from __future__ import annotations

from engine.verify.baseline_tests import NO_TESTS, no_tests_reason
from engine.verify.results import StageKind, StageResult, TestCounts
from tests.engine.test_corpus import stage


def test_pytest_exit_5_is_no_tests() -> None:
    assert no_tests_reason([stage("no_tests")]) == NO_TESTS


def test_failing_and_passing_suites_have_tests() -> None:
    assert no_tests_reason([stage("assertion_failure")]) is None
    assert no_tests_reason([stage("passing")]) is None


def test_all_skipped_still_has_tests() -> None:
    assert no_tests_reason([stage("all_skipped")]) is None


def test_tests_that_fail_to_import_are_a_collection_error_not_no_tests() -> None:
    broken = stage("collection_error")
    assert broken.report is not None
    assert broken.report.collection_errors
    assert no_tests_reason([broken]) is None
    # even when pytest counted nothing collected beside the module that failed to import
    nothing = broken.report.model_copy(update={"counts": TestCounts(errors=1)})
    assert no_tests_reason([broken.model_copy(update={"report": nothing})]) is None


def test_one_test_stage_with_tests_is_enough() -> None:
    unit = stage("passing")
    empty = stage("no_tests").model_copy(update={"name": "integration"})
    assert no_tests_reason([empty, unit]) is None
    assert no_tests_reason([empty, empty]) == NO_TESTS


def test_no_report_or_no_test_stage_says_nothing_about_tests() -> None:
    lint = stage("ruff")
    assert lint.kind is not StageKind.TESTS
    assert no_tests_reason([lint]) is None
    crashed = StageResult(
        name="tests",
        kind=StageKind.TESTS,
        cmd="python -m pytest -q",
        exit_code=1,
        duration_ms=10,
        infrastructure_error="the sandbox did not start",
    )
    assert no_tests_reason([crashed]) is None
    assert no_tests_reason([]) is None
