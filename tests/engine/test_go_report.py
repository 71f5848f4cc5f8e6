"""`go test -json` read into a TestReport, on output captured from go 1.19
(tests/fixtures/captured/runners/go_*.json), and what classification, the packet, the verdict
and the baseline checks make of it, unchanged."""

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
from engine.verify.go_report import go_module_path, parse_go_test
from engine.verify.results import TestCase, TestReport
from engine.verify.verdict import Verdict, judge, pass_doubts
from tests.engine.runner_records import WORKDIR, output, stage


def report(case: str) -> TestReport:
    found = parse_go_test(output(case), [WORKDIR])
    assert found is not None
    return found


def case_of(case: str, nodeid: str) -> TestCase:
    return next(t for t in report(case).tests if t.nodeid == nodeid)


def test_counts_and_ids_of_a_mixed_run() -> None:
    mixed = report("go_mixed")
    assert mixed.exitstatus == 2  # a package did not build
    counts = mixed.counts
    assert (counts.collected, counts.passed, counts.failed, counts.skipped) == (8, 3, 4, 1)
    assert counts.errors == 1  # the broken package, as pytest counts a collection error
    assert "example.com/bits/bits::TestBitcount" in mixed.nodeids
    assert "example.com/bits/bits/sub::TestDouble" in mixed.nodeids
    # subtests are the tests; their parent is a group
    assert "example.com/bits/bits::TestTable/zero" in mixed.nodeids
    assert "example.com/bits/bits::TestTable" not in mixed.nodeids
    assert len(mixed.nodeids) == counts.collected


def test_a_got_want_failure_names_file_line_expected_and_actual() -> None:
    bitcount = case_of("go_mixed", "example.com/bits/bits::TestBitcount")
    assert bitcount.outcome == "failed"
    assert (bitcount.file, bitcount.line) == ("bits/bits_test.go", 7)
    assert (bitcount.expected, bitcount.actual) == ("3", "2")
    assert bitcount.exception_message == "Bitcount(7) = 2, want 3"
    subtest = case_of("go_mixed", "example.com/bits/bits::TestTable/one")
    assert (subtest.expected, subtest.actual, subtest.line) == ("1", "0", 26)


def test_a_panic_has_the_project_frame_where_it_happened() -> None:
    panic = case_of("go_mixed", "example.com/bits/bits::TestPanics")
    assert panic.exception_type == "panic"
    assert panic.exception_message == "runtime error: index out of range [2] with length 0"
    assert panic.frame is not None
    assert (panic.frame.file, panic.frame.line) == ("bits/bits.go", 15)
    assert panic.test_frame is not None
    assert (panic.test_frame.file, panic.test_frame.line) == ("bits/bits_test.go", 37)


def test_a_build_failure_is_a_collection_error_at_the_first_compile_error() -> None:
    (error,) = report("go_mixed").collection_errors
    assert error.nodeid == "example.com/bits/broken"
    assert error.exception_type == "CompileError"
    assert error.exception_message == "undefined: y"
    assert error.frame is not None
    assert (error.frame.file, error.frame.line) == (
        "broken/broken.go",
        4,
    )


def test_a_compile_error_classifies_mechanical_with_its_file_in_the_packet() -> None:
    result = stage("go_syntax_error", parse_go_test)
    classification = classify([result], project_modules=frozenset())
    assert classification.error_class is ErrorClass.MECHANICAL
    assert "CompileError: syntax error" in classification.primary
    packet = distill([result], classification).render()
    assert "parse.go:5" in packet
    assert no_tests_reason([result]) is None  # a broken build says nothing about tests


def test_a_failing_got_want_test_is_logic_with_expected_and_actual_in_the_packet() -> None:
    result = stage("go_failing", parse_go_test)
    classification = classify([result], project_modules=frozenset())
    assert classification.error_class is ErrorClass.LOGIC
    packet = distill([result], classification).render()
    assert "example.com/bits/bits::TestBitcount" in packet
    assert "bits/bits_test.go:7" in packet
    assert "expected: `3`" in packet
    assert "actual:   `2`" in packet
    assert "at bits/bits.go:15" in packet  # the panic's project frame
    assert judge([result], classification).verdict is Verdict.FAILING


def test_a_passing_run_is_ok_and_its_ids_are_the_baseline() -> None:
    result = stage("go_pass", parse_go_test)
    assert result.report is not None
    assert result.report.exitstatus == 0
    classification = classify([result], project_modules=frozenset())
    assert classification.error_class is ErrorClass.NONE
    assert pass_doubts([result]) == []
    assert judge([result], classification).verdict is Verdict.OK
    baseline = BaselineTests.of([result])
    assert baseline is not None
    assert baseline.ids == [
        "example.com/calc/calc::TestAdd",
        "example.com/calc/calc::TestAddNegative",
    ]


def test_a_skip_is_seen_as_skipped_and_doubted() -> None:
    result = stage("go_skip", parse_go_test)
    assert result.report is not None
    (skipped,) = result.report.tests
    assert (skipped.outcome, skipped.skip_reason) == ("skipped", "flaky on CI")
    assert (skipped.file, skipped.line) == ("skip_test.go", 6)
    assert any("passed no test" in reason for reason in pass_doubts([result]))
    was_run = BaselineTests(ids=["example.com/skip::TestOne"])
    assert check_baseline_tests(was_run, [result]).doubts == [
        "1 baseline test now skipped: example.com/skip::TestOne"
    ]


def test_a_timeout_fails_the_test_that_was_running() -> None:
    spin = case_of("go_timeout", "example.com/slow::TestSpin")
    assert spin.outcome == "failed"
    assert spin.exception_message == "test timed out after 2s"
    assert spin.frame is not None
    assert (spin.frame.file, spin.frame.line) == ("slow_test.go", 6)


def test_a_missing_module_is_no_report_and_an_env_failure_with_the_fix() -> None:
    assert parse_go_test(output("go_missing_module"), [WORKDIR]) is None
    result = stage("go_missing_module", parse_go_test)
    classification = classify([result], project_modules=frozenset())
    assert classification.error_class is ErrorClass.ENV_FAILURE
    assert classification.env_cause is not None
    assert "go get github.com/google/go-cmp/cmp" in classification.env_cause


def test_no_test_ran_is_not_success() -> None:
    none_ran = [
        {"Action": "skip", "Package": "example.com/calc/cmd", "Elapsed": 0},
        {"Action": "output", "Package": "example.com/calc", "Output": "ok  \texample.com/calc\n"},
        {"Action": "pass", "Package": "example.com/calc", "Elapsed": 0.01},
    ]
    found = parse_go_test("\n".join(json.dumps(e) for e in none_ran))
    assert found is not None
    assert found.exitstatus == 5
    assert found.counts.collected == 0
    result = stage("go_pass", parse_go_test).model_copy(update={"report": found})
    assert no_tests_reason([result]) == NO_TESTS
    assert classify([result], project_modules=frozenset()).error_class is ErrorClass.NO_TESTS


def test_newer_go_build_events_are_collection_errors() -> None:
    # The shape go 1.24 writes (cmd/go's test2json `build-output`/`build-fail`), hand-written:
    # the go installed here (1.19) prints build output as plain text instead.
    variant = "example.com/m/broken [example.com/m/broken.test]"
    events = [
        {"ImportPath": variant, "Action": "build-output", "Output": f"# {variant}\n"},
        {
            "ImportPath": variant,
            "Action": "build-output",
            "Output": "broken/broken.go:4:9: undefined: y\n",
        },
        {"ImportPath": variant, "Action": "build-fail"},
        {"Action": "start", "Package": "example.com/m/broken"},
        {
            "Action": "output",
            "Package": "example.com/m/broken",
            "Output": "FAIL\texample.com/m/broken [build failed]\n",
        },
        {"Action": "fail", "Package": "example.com/m/broken", "FailedBuild": variant},
    ]
    found = parse_go_test("\n".join(json.dumps(e) for e in events))
    assert found is not None
    assert found.exitstatus == 2
    (error,) = found.collection_errors
    assert (error.nodeid, error.exception_message) == ("example.com/m/broken", "undefined: y")
    assert error.frame is not None
    assert error.frame.file == "broken/broken.go"


def test_the_module_path_places_a_test_file_in_its_package_directory() -> None:
    assert go_module_path('// x\nmodule "example.com/bits"\n\ngo 1.19\n') == "example.com/bits"
    assert go_module_path("go 1.19\n") is None
    # Without the module path or a stack to go by, two sibling packages look like a module.
    lines = [
        json.dumps(e)
        for e in (
            {"Action": "run", "Package": "example.com/m/a", "Test": "TestA"},
            {
                "Action": "output",
                "Package": "example.com/m/a",
                "Test": "TestA",
                "Output": "    a_test.go:3: got 1, want 2\n",
            },
            {"Action": "fail", "Package": "example.com/m/a", "Test": "TestA"},
            {"Action": "fail", "Package": "example.com/m/a"},
            {"Action": "pass", "Package": "example.com/m/b"},
        )
    ]
    found = parse_go_test("\n".join(lines), module="example.com/m")
    assert found is not None
    assert found.tests[0].file == "a/a_test.go"


def test_hostile_or_foreign_input_gives_none_or_a_partial_report() -> None:
    assert parse_go_test("") is None
    assert parse_go_test("garbage\n\x00\x1b[31mnot json{") is None
    assert parse_go_test('{"Action": ' + "[" * 100_000) is None  # nested too deep to decode
    assert parse_go_test('{"Action": 1, "Package": [], "Test": {}}\n[1, 2]\n"x"') is not None
    text = output("go_mixed")
    cut = parse_go_test(text[: len(text) // 3], [WORKDIR])
    assert cut is not None
    assert cut.counts.collected < 8
    # a python traceback is not go's output
    assert parse_go_test('Traceback (most recent call last):\n  File "x.py", line 1\n') is None


def test_testify_failures_give_their_error_and_expected_actual() -> None:
    # testify's assert.Equal output, hand-written in its format (the module cannot be fetched
    # here): a `file:line:` line, then tab-aligned fields.
    lines = [
        "    tfy_test.go:11: \n",
        "        \tError Trace:\t/fixloop/work/tfy_test.go:11\n",
        "        \tError:      \tNot equal: \n",
        "        \t            \texpected: 3\n",
        "        \t            \tactual  : 2\n",
        "        \tTest:       \tTestBitcount\n",
        "        \tMessages:   \tseven has three bits\n",
        "--- FAIL: TestBitcount (0.00s)\n",
    ]
    events = [{"Action": "run", "Package": "example.com/tfy", "Test": "TestBitcount"}]
    events += [
        {"Action": "output", "Package": "example.com/tfy", "Test": "TestBitcount", "Output": x}
        for x in lines
    ]
    events += [
        {"Action": "fail", "Package": "example.com/tfy", "Test": "TestBitcount"},
        {"Action": "fail", "Package": "example.com/tfy"},
    ]
    found = parse_go_test("\n".join(json.dumps(e) for e in events), [WORKDIR])
    assert found is not None
    (failed,) = found.tests
    assert (failed.file, failed.line) == ("tfy_test.go", 11)
    assert (failed.expected, failed.actual) == ("3", "2")
    assert failed.exception_message == "Not equal: seven has three bits"
