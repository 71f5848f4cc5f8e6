"""Parsers, classifier, verdict and distillation on real captured tool output.

Every case in tests/fixtures/captured was produced by running the real tool in
the real sandbox over a project in tests/fixtures/projects
(tests/fixtures/regenerate.py); these tests replay them.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest

from engine.feedback.distill import distill
from engine.project.modules import project_modules
from engine.text.tokens import approximate_tokens
from engine.verify.classify import Classification, ErrorClass, classify, signature
from engine.verify.execute import parse_stage
from engine.verify.results import StageResult
from engine.verify.stages import Stage
from engine.verify.verdict import Verdict, judge, pass_doubts
from sandbox import ExecResult

FIXTURES = Path(__file__).parents[1] / "fixtures"


@cache
def record(case: str) -> dict[str, object]:
    data: dict[str, object] = json.loads((FIXTURES / "captured" / f"{case}.json").read_text())
    return data


def stage(case: str) -> StageResult:
    data = record(case)
    return parse_stage(
        Stage.model_validate(data["stage"]),
        ExecResult.model_validate(data["result"]),
        str(data["nonce"]),
    )


def classified(case: str) -> tuple[StageResult, Classification]:
    result = stage(case)
    modules = project_modules(FIXTURES / "projects" / str(record(case)["project"]))
    return result, classify([result], project_modules=modules)


def packet_text(case: str) -> str:
    result, classification = classified(case)
    return distill([result], classification).render()


def test_the_report_line_is_taken_out_of_stderr() -> None:
    nonce = str(record("assertion_failure")["nonce"])
    result = stage("assertion_failure")
    assert result.report is not None
    assert nonce not in result.stderr
    assert nonce in str(record("assertion_failure")["result"])


def test_a_failing_assertion_names_test_line_expected_and_actual() -> None:
    result, classification = classified("assertion_failure")
    assert classification.error_class is ErrorClass.LOGIC
    first = distill([result], classification).failures[0]
    assert first.test == "tests/test_stats.py::test_mean_of_four_values"
    assert (first.file, first.line) == ("tests/test_stats.py", 9)
    assert first.assertion == "assert mean([1, 2, 3, 4]) == 2.5"
    assert (first.expected, first.actual) == ("2.5", "2")
    assert "expected: `2.5`\n  actual:   `2`" in packet_text("assertion_failure")


def test_an_exception_in_code_points_at_the_project_frame_not_the_harness() -> None:
    result, classification = classified("exception_in_code")
    assert classification.error_class is ErrorClass.LOGIC
    first = distill([result], classification).failures[0]
    assert first.exception == "ZeroDivisionError: division by zero"
    assert first.frame is not None
    assert (first.frame.file, first.frame.line) == ("orders/__init__.py", 5)
    assert "_pytest" not in packet_text("exception_in_code")


def test_a_collection_error_is_mechanical_and_names_the_file() -> None:
    result, classification = classified("collection_error")
    assert result.report is not None
    assert [e.nodeid for e in result.report.collection_errors] == ["tests/test_perimeter.py"]
    assert classification.error_class is ErrorClass.MECHANICAL
    text = packet_text("collection_error")
    assert "cannot import name 'perimeter' from 'shapes'" in text
    assert "/fixloop/work" not in text


def test_a_syntax_error_is_mechanical_and_shows_the_bad_line() -> None:
    _, classification = classified("syntax_error")
    assert classification.error_class is ErrorClass.MECHANICAL
    text = packet_text("syntax_error")
    assert "SyntaxError: expected ':'" in text
    assert "calc/ops.py:1" in text


def test_a_missing_third_party_module_is_an_env_failure_with_the_fix() -> None:
    result, classification = classified("missing_module")
    assert classification.error_class is ErrorClass.ENV_FAILURE
    assert classification.env_cause is not None
    assert "yaml_fixloop_missing" in classification.env_cause
    assert judge([result], classification).verdict is Verdict.ENV_FAILURE


def test_a_missing_module_the_edit_touched_is_mechanical_not_env() -> None:
    result = stage("missing_module")
    classification = classify(
        [result],
        project_modules=frozenset({"settings"}),
        touched_modules=frozenset({"yaml_fixloop_missing"}),
    )
    assert classification.error_class is ErrorClass.MECHANICAL


def test_a_missing_command_is_an_env_failure() -> None:
    result, classification = classified("missing_command")
    assert result.exit_code == 127
    assert classification.error_class is ErrorClass.ENV_FAILURE
    assert judge([result], classification).verdict is Verdict.ENV_FAILURE


def test_a_timeout_names_the_test_that_hangs() -> None:
    result, classification = classified("timeout")
    assert result.timed_out
    assert classification.error_class is ErrorClass.TIMEOUT
    first = distill([result], classification).failures[0]
    assert first.test == "tests/test_slow.py::test_takes_thirty_seconds"
    assert first.kind == "timeout"


def test_exit_5_is_no_tests_and_failing() -> None:
    result, classification = classified("no_tests")
    assert result.exit_code == 5
    assert classification.error_class is ErrorClass.NO_TESTS
    assert judge([result], classification).verdict is Verdict.FAILING


def test_all_tests_skipped_is_never_ok() -> None:
    result, classification = classified("all_skipped")
    assert result.report is not None
    assert result.report.counts.skipped == 3
    assert all(case.skip_reason for case in result.report.tests)
    doubts = pass_doubts([result])
    assert judge([result], classification, doubts=doubts).verdict is Verdict.SUSPICIOUS_PASS


def test_xfail_and_xpass_are_counted_and_a_strict_xpass_fails() -> None:
    result = stage("xfail_xpass")
    assert result.report is not None
    counts = result.report.counts
    assert (counts.xfailed, counts.xpassed, counts.failed) == (1, 1, 1)
    assert "XPASS(strict)" in packet_text("xfail_xpass")


def test_parametrized_failures_are_each_named_with_their_values() -> None:
    text = packet_text("parametrized")
    assert "tests/test_double.py::test_double[3-6]" in text
    assert "test_double[4-8]" in text
    assert "expected `8`, got `16`" in text


def test_a_run_with_120_failures_fits_the_cap_and_is_ten_times_smaller() -> None:
    result = stage("many_failures")
    assert result.report is not None
    assert result.report.counts.failed == 120
    text = packet_text("many_failures")
    assert approximate_tokens(text) <= 2000
    assert approximate_tokens(result.stdout + result.stderr) >= 10 * approximate_tokens(text)
    assert "×119 more" in text


@pytest.mark.parametrize(
    ("case", "needle"),
    [
        ("name_error", "NameError: name 'mesage' is not defined"),
        ("arity_error", "format_price() takes 1 positional argument but 2 were given"),
    ],
)
def test_mechanical_errors_are_classified_and_quoted(case: str, needle: str) -> None:
    _, classification = classified(case)
    assert classification.error_class is ErrorClass.MECHANICAL
    assert needle in packet_text(case)


def test_ruff_findings_are_parsed_from_its_json() -> None:
    result = stage("ruff")
    codes = [(d.file, d.line, d.code) for d in result.diagnostics]
    assert ("inventory/__init__.py", 3, "F401") in codes
    assert ("inventory/__init__.py", 19, "F821") in codes


def test_ruff_format_names_the_unformatted_file() -> None:
    assert [d.file for d in stage("ruff_format").diagnostics] == ["inventory/__init__.py"]


def test_mypy_findings_are_parsed_from_its_json() -> None:
    result, classification = classified("mypy")
    codes = {d.code for d in result.diagnostics}
    assert {"return-value", "arg-type"} <= codes
    assert classification.error_class is ErrorClass.LINT


def test_failing_tests_behind_or_true_are_failing_not_a_pass() -> None:
    result, classification = classified("swallowed")
    assert result.exit_code == 0
    judgement = judge([result], classification, doubts=pass_doubts([result]))
    assert judgement.verdict is Verdict.FAILING


def test_the_same_failure_has_the_same_signature_across_runs() -> None:
    one, c1 = classified("assertion_failure")
    two, c2 = classified("swallowed")  # a separate run of the same failing project
    assert signature([one], c1) == signature([two], c2)
    other, c3 = classified("parametrized")
    assert signature([other], c3) != signature([one], c1)


def test_a_passing_run_is_ok_without_doubts() -> None:
    result, classification = classified("passing")
    assert pass_doubts([result]) == []
    assert judge([result], classification).verdict is Verdict.OK
