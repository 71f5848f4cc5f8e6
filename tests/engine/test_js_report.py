"""Jest's `--json` and Vitest's `--reporter=json` read into a TestReport, on output captured from
jest 29.7 and vitest 1.6 (tests/fixtures/captured/runners/{jest,vitest}_*.json), and what
classification, the packet, the verdict and the baseline checks make of it, unchanged."""

from __future__ import annotations

import json

from engine.feedback.distill import distill
from engine.verify.baseline_tests import (
    NO_TESTS,
    BaselineTests,
    check_baseline_tests,
    no_tests_reason,
)
from engine.verify.classify import ErrorClass, classify
from engine.verify.js_report import MAX_TEXT, parse_js_tests
from engine.verify.results import StageResult, TestCase, TestReport
from engine.verify.verdict import Verdict, judge, pass_doubts
from tests.engine.runner_records import WORKDIR, output, stage

IDS = [
    "src/sum.test.js::sum::adds two numbers",
    "src/sum.test.js::sum::adds zero",
    "src/sum.test.js::sum::adds floats",
    "src/sum.test.js::sum::adds big numbers",
    "src/sum.test.js::parses a list",
    "src/sum.test.js::parses objects",
]


def report(case: str) -> TestReport:
    found = parse_js_tests(output(case), [WORKDIR])
    assert found is not None
    return found


def case_of(case: str, nodeid: str) -> TestCase:
    return next(t for t in report(case).tests if t.nodeid == nodeid)


def only_collection_error(result: StageResult, nodeid: str) -> StageResult:
    """The stage as if that file's collection error were its only failure."""
    assert result.report is not None
    errors = [e for e in result.report.collection_errors if e.nodeid == nodeid]
    narrowed = result.report.model_copy(update={"collection_errors": errors, "tests": []})
    return result.model_copy(update={"report": narrowed})


def test_jest_counts_and_ids() -> None:
    mixed = report("jest_mixed")
    assert mixed.exitstatus == 2  # three files did not run
    counts = mixed.counts
    assert (counts.collected, counts.passed, counts.failed, counts.skipped) == (6, 1, 3, 2)
    assert counts.errors == 3
    assert mixed.nodeids == IDS


def test_vitest_gives_the_same_ids_and_counts_for_the_same_tests() -> None:
    vitest = report("vitest_mixed")
    assert vitest.nodeids == IDS
    counts = vitest.counts
    assert (counts.collected, counts.passed, counts.failed, counts.skipped) == (6, 1, 3, 2)
    assert [e.nodeid for e in vitest.collection_errors] == [
        "src/broken.test.js",
        "test/deps.test.js",
    ]


def test_a_jest_matcher_failure_has_its_line_assertion_and_expected_actual() -> None:
    failed = case_of("jest_mixed", "src/sum.test.js::sum::adds two numbers")
    assert (failed.file, failed.line) == ("src/sum.test.js", 5)
    assert (failed.expected, failed.actual) == ("3", "-1")
    assert failed.assertion == "expect(sum(1, 2)).toBe(3);"
    assert failed.exception_type == "AssertionError"


def test_a_thrown_error_has_the_innermost_project_frame_not_node_modules() -> None:
    thrown = case_of("jest_mixed", "src/sum.test.js::parses a list")
    assert thrown.exception_type == "TypeError"
    assert thrown.exception_message == "Cannot read properties of null (reading 'trim')"
    assert thrown.frame is not None
    assert (thrown.frame.file, thrown.frame.line) == ("src/sum.js", 6)
    assert thrown.frame.source == 'return text.trim().split(",").map(Number);'
    assert thrown.test_frame is not None
    assert thrown.test_frame.line == 20


def test_vitest_assertions_read_chai_messages() -> None:
    failed = case_of("vitest_mixed", "src/sum.test.js::sum::adds two numbers")
    assert (failed.expected, failed.actual, failed.line) == ("3", "-1", 6)
    deep = case_of("vitest_mixed", "src/sum.test.js::parses objects")
    assert (deep.expected, deep.actual) == ("[ 1, 2, 3 ]", "[ 1, 2 ]")
    # Vitest's location of a thrown error is in whichever file threw: not a test-file line
    thrown = case_of("vitest_mixed", "src/sum.test.js::parses a list")
    assert (thrown.line, thrown.test_frame) == (0, None)


def test_skips_and_todos_are_skipped() -> None:
    for case in ("jest_mixed", "vitest_mixed"):
        skipped = {t.nodeid for t in report(case).tests if t.outcome == "skipped"}
        assert skipped == {IDS[2], IDS[3]}


def test_a_syntax_error_in_the_code_is_a_mechanical_collection_error() -> None:
    jest_error = report("jest_mixed").collection_errors[0]
    assert (jest_error.nodeid, jest_error.exception_type) == ("src/broken.test.js", "SyntaxError")
    assert jest_error.frame is not None
    assert (jest_error.frame.file, jest_error.frame.line) == (
        "src/broken.js",
        3,
    )
    for case in ("jest_mixed", "vitest_mixed"):
        result = only_collection_error(stage(case, parse_js_tests), "src/broken.test.js")
        classification = classify([result], project_modules=frozenset())
        assert classification.error_class is ErrorClass.MECHANICAL, case


def test_a_missing_project_file_is_mechanical_a_missing_package_an_env_failure() -> None:
    result = stage("jest_mixed", parse_js_tests)
    local = only_collection_error(result, "__tests__/local.test.js")
    assert classify([local], project_modules=frozenset()).error_class is ErrorClass.MECHANICAL
    for case, nodeid in (
        ("jest_mixed", "__tests__/deps.test.js"),
        ("vitest_mixed", "test/deps.test.js"),
    ):
        deps = only_collection_error(stage(case, parse_js_tests), nodeid)
        classification = classify([deps], project_modules=frozenset())
        assert classification.error_class is ErrorClass.ENV_FAILURE, case
        assert "npm install left-pad" in (classification.env_cause or "")


def test_a_failing_matcher_is_logic_with_expected_and_actual_in_the_packet() -> None:
    result = stage("jest_mixed", parse_js_tests)
    assert result.report is not None
    failing = result.report.model_copy(update={"collection_errors": []})
    result = result.model_copy(update={"report": failing})
    classification = classify([result], project_modules=frozenset())
    assert classification.error_class is ErrorClass.LOGIC
    packet = distill([result], classification).render()
    assert "src/sum.test.js::sum::adds two numbers (src/sum.test.js:5)" in packet
    assert "expected: `3`" in packet
    assert "actual:   `-1`" in packet
    assert "at src/sum.js:6" in packet


def test_a_passing_run_is_ok_and_a_focused_one_is_seen_to_skip() -> None:
    passing = stage("jest_pass", parse_js_tests)
    classification = classify([passing], project_modules=frozenset())
    assert judge([passing], classification).verdict is Verdict.OK
    assert pass_doubts([passing]) == []
    baseline = BaselineTests.of([passing])
    focused = stage("jest_only", parse_js_tests)  # test.only: the other test is pending
    assert focused.report is not None
    assert focused.report.counts.skipped == 1
    assert check_baseline_tests(baseline, [focused]).doubts == [
        "1 baseline test now skipped: mul.test.js::multiplies"
    ]


def test_no_tests_found_is_a_no_tests_report() -> None:
    result = stage("jest_no_tests", parse_js_tests)
    assert result.report is not None
    assert result.report.exitstatus == 5
    assert no_tests_reason([result]) == NO_TESTS
    assert classify([result], project_modules=frozenset()).error_class is ErrorClass.NO_TESTS
    assert parse_js_tests("No test files found, exiting with code 1\n") is not None


def test_hostile_or_foreign_input_gives_none_or_a_partial_report() -> None:
    text = output("jest_mixed")
    assert parse_js_tests(text[: len(text) // 2]) is None  # truncated JSON
    assert parse_js_tests("") is None
    assert parse_js_tests("garbage {not json") is None
    assert parse_js_tests('{"testResults": 5}') is None
    assert parse_js_tests("[" * 100_000) is None
    assert parse_js_tests(" " * (MAX_TEXT + 1)) is None
    odd = {
        "numTotalTests": 1,
        "testResults": [
            5,
            {"name": 7, "assertionResults": [3, {"status": {}, "location": "x"}]},
            {"status": "failed", "message": None, "assertionResults": "no"},
        ],
    }
    found = parse_js_tests("console noise\n" + json.dumps(odd))
    assert found is not None
    assert found.counts.collected == 1


def test_a_reference_error_is_mechanical_at_the_code_that_raised_it() -> None:
    result = stage("jest_reference_timeout", parse_js_tests)
    classification = classify([result], project_modules=frozenset())
    assert classification.error_class is ErrorClass.MECHANICAL
    packet = distill([result], classification).render()
    assert "ReferenceError: width is not defined" in packet
    assert "at area.js:2 in area: return width * h;" in packet


def test_a_jest_timeout_fails_its_test_with_jests_message() -> None:
    waits = case_of("jest_reference_timeout", "area.test.js::waits")
    assert waits.outcome == "failed"
    assert "Exceeded timeout of 200 ms" in (waits.exception_message or "")
    assert (waits.file, waits.line) == ("area.test.js", 7)
