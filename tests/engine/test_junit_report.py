"""JUnit XML read into a TestReport: files captured from pytest --junitxml and jest-junit 16
(tests/fixtures/captured/runners/junit), the shapes Maven Surefire and go-junit-report write, and
XML that must be refused."""

from __future__ import annotations

from pathlib import Path

from engine.feedback.distill import distill
from engine.verify.classify import ErrorClass, classify
from engine.verify.execute import junit_reports
from engine.verify.junit_report import MAX_XML, parse_junit
from engine.verify.results import StageKind, StageResult, TestReport
from sandbox.contract import ExecResult, FileChange
from tests.engine.runner_records import RUNNERS, WORKDIR

JUNIT = RUNNERS / "junit"

# The shape Maven Surefire writes for JUnit 5 (hand-written, no JDK here).
SUREFIRE = """<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="com.example.CalcTest" tests="2" errors="0" skipped="0" failures="1">
  <testcase name="adds" classname="com.example.CalcTest" time="0.01">
    <failure message="expected: &lt;3&gt; but was: &lt;-1&gt;"
        type="org.opentest4j.AssertionFailedError">org.opentest4j.AssertionFailedError: \
expected: &lt;3&gt; but was: &lt;-1&gt;
	at com.example.CalcTest.adds(CalcTest.java:12)</failure>
  </testcase>
  <testcase name="subtracts" classname="com.example.CalcTest" time="0.001"/>
</testsuite>
"""
# The shape go-junit-report v2 writes (hand-written, not installable offline).
GO_JUNIT = """<testsuites tests="2" failures="1">
  <testsuite name="example.com/bits" tests="2" failures="1" errors="0" skipped="0">
    <testcase name="TestBitcount" classname="example.com/bits" time="0.000">
      <failure message="Failed"><![CDATA[    bits_test.go:7: Bitcount(7) = 2, want 3]]></failure>
    </testcase>
    <testcase name="TestZero" classname="example.com/bits" time="0.000"></testcase>
  </testsuite>
</testsuites>
"""


def parsed(name: str) -> TestReport:
    found = parse_junit((JUNIT / name).read_text(), [WORKDIR])
    assert found is not None
    return found


def as_stage(report: TestReport, exit_code: int = 1) -> StageResult:
    return StageResult(
        name="tests",
        kind=StageKind.TESTS,
        cmd="x",
        exit_code=exit_code,
        duration_ms=1,
        report=report,
    )


def test_pytest_junit_counts_ids_and_failures() -> None:
    report = parsed("pytest_junit_fail.xml")
    counts = report.counts
    assert (counts.collected, counts.passed, counts.failed, counts.skipped) == (4, 1, 2, 1)
    assert report.exitstatus == 1
    assert report.nodeids[0] == "tests.test_stats::test_mean_of_four_values"
    first, skipped, crash = report.tests
    assert (first.file, first.line, first.expected, first.actual) == (
        "tests/test_stats.py",
        7,
        "2.5",
        "2",
    )
    assert (skipped.outcome, skipped.skip_reason) == ("skipped", "later")
    assert crash.exception_type == "ZeroDivisionError"
    assert crash.frame is not None
    assert (crash.frame.file, crash.frame.line) == ("stats.py", 2)
    classification = classify([as_stage(report)], project_modules=frozenset({"stats"}))
    assert classification.error_class is ErrorClass.LOGIC
    packet = distill([as_stage(report)], classification).render()
    assert "expected: `2.5`" in packet
    assert "at stats.py:2" in packet


def test_a_pytest_collection_failure_is_a_collection_error() -> None:
    report = parsed("pytest_collection_error.xml")
    assert report.exitstatus == 2
    assert report.counts.collected == 0
    (error,) = report.collection_errors
    assert (error.nodeid, error.exception_type) == ("tests.test_broken", "ImportError")
    assert error.frame is not None
    assert error.frame.file == "tests/test_broken.py"
    classification = classify([as_stage(report)], project_modules=frozenset({"stats"}))
    assert classification.error_class is ErrorClass.MECHANICAL  # cannot import name


def test_jest_junit_failures_keep_the_matcher_and_the_frames() -> None:
    report = parsed("jest_junit.xml")
    assert report.counts.failed == 3
    assert report.nodeids[0] == "sum adds two numbers"
    first = report.tests[0]
    assert (first.expected, first.actual, first.exception_type) == ("3", "-1", "AssertionError")
    assert (first.file, first.line) == ("src/sum.test.js", 5)
    thrown = next(t for t in report.tests if t.exception_type == "TypeError")
    assert thrown.frame is not None
    assert (thrown.frame.file, thrown.frame.line) == ("src/sum.js", 6)


def test_surefire_and_go_junit_report_shapes() -> None:
    surefire = parse_junit(SUREFIRE)
    assert surefire is not None
    assert surefire.counts.collected == 2
    (adds,) = surefire.tests
    assert adds.nodeid == "com.example.CalcTest::adds"
    assert (adds.expected, adds.actual) == ("3", "-1")
    assert adds.exception_type == "org.opentest4j.AssertionFailedError"
    go = parse_junit(GO_JUNIT)
    assert go is not None
    assert go.tests[0].nodeid == "example.com/bits::TestBitcount"
    assert (go.tests[0].expected, go.tests[0].actual) == ("3", "2")


def test_hostile_xml_is_refused_and_a_cut_file_is_partial() -> None:
    laughs = (
        '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
        '<!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]>'
        '<testsuite><testcase name="&lol2;"/></testsuite>'
    )
    assert parse_junit(laughs) is None
    external = '<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]><testsuite>&e;</testsuite>'
    assert parse_junit(external) is None
    huge = "<testsuite>" + '<testcase name="t"/>' * (MAX_XML // 20 + 1) + "</testsuite>"
    assert parse_junit(huge) is None
    assert parse_junit("garbage") is None
    assert parse_junit("<html><body>not junit</body></html>") is None
    assert parse_junit("<testsuite><testcase") is None  # cut before any test case
    text = (JUNIT / "pytest_junit_fail.xml").read_text()
    cut = parse_junit(text[: len(text) // 2])
    assert cut is not None
    assert cut.truncated
    assert cut.counts.collected == 2
    many = "<testsuite>" + '<testcase name="t"><failure/></testcase>' * 100 + "</testsuite>"
    assert parse_junit(many) is not None


def test_an_empty_suite_is_no_tests() -> None:
    found = parse_junit('<testsuites><testsuite name="x" tests="0"/></testsuites>')
    assert found is not None
    assert found.exitstatus == 5
    assert classify([as_stage(found, 0)], project_modules=frozenset()).error_class is (
        ErrorClass.NO_TESTS
    )


def test_the_fixtures_hold_no_host_paths() -> None:
    for path in Path(RUNNERS).rglob("*"):
        if path.is_file():
            assert "/tmp/" not in path.read_text(), path


def test_two_report_files_are_read_as_one_report() -> None:
    """Surefire writes a file per test class: the stage's report sums them, and the worst
    exit status wins."""
    passing = """<testsuite name="com.example.MoreTest" tests="2" failures="0">
  <testcase name="adds" classname="com.example.MoreTest" time="0.01"/>
  <testcase name="subtracts" classname="com.example.MoreTest" time="0.001"/>
</testsuite>
"""
    files = {"target/TEST-a.xml": SUREFIRE, "target/TEST-b.xml": passing}
    result = ExecResult(
        exit_code=1,
        stdout="",
        stderr="",
        duration_ms=1,
        backend="unsafe-local",
        workdir=WORKDIR,
        changes=[FileChange(path=p, content=text.encode()) for p, text in files.items()],
    )
    report = junit_reports(result, [WORKDIR])
    assert report is not None
    assert report.counts.collected == 4
    assert (report.counts.passed, report.counts.failed) == (3, 1)
    assert report.exitstatus == 1
    assert [case.nodeid for case in report.tests] == ["com.example.CalcTest::adds"]
