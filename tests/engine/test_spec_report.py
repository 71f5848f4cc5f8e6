"""The spec part of the escalation report: which examples and constraints kept failing, and
which requirement looks ambiguous."""

from __future__ import annotations

from pathlib import Path

from engine.run.outcome import IterationRecord
from engine.run.spec_report import (
    VerifiedIteration,
    ambiguities,
    constraint_of,
    spec_findings,
    spec_section,
    verified_iterations,
)
from engine.spec.definition import load_spec
from engine.verify.results import (
    CollectionError,
    StageKind,
    StageResult,
    TestCase,
    TestCounts,
    TestReport,
)

REPO = Path(__file__).resolve().parents[2]
SPEC = load_spec(REPO / "examples" / "specs" / "parse_duration.toml")
EXAMPLES = "tests/test_parse_duration_examples.py"


def example_miss(number: int, line: str, expected: str, actual: str) -> TestCase:
    return TestCase(
        nodeid=f"{EXAMPLES}::test_example_returns[example {number}: {line}]",
        outcome="failed",
        expected=expected,
        actual=actual,
        exception_type="AssertionError",
    )


def own_miss(name: str, message: str = "DID NOT RAISE <class 'ValueError'>") -> TestCase:
    return TestCase(
        nodeid=f"tests/test_durations.py::{name}",
        outcome="failed",
        exception_type="Failed",
        exception_message=message,
    )


FIVE_MINUTES = "parse_duration('5m') == 300"
TWO_HOURS = "parse_duration('2h') == 7200"


def test_constraints_are_found_by_number_or_by_shared_words() -> None:
    constraints = SPEC.constraints
    assert constraint_of("tests/test_durations.py::test_constraint_2_bare_number", constraints) == 2
    assert constraint_of("tests/t.py::test_unknown_unit_raises_valueerror", constraints) == 1
    assert constraint_of("tests/t.py::test_parts_add_up[1m30s]", constraints) == 3
    assert constraint_of("tests/t.py::test_constraint_9_out_of_range", constraints) is None
    assert constraint_of("tests/t.py::test_something_else", constraints) is None


def test_an_example_failing_while_the_models_own_tests_pass_looks_ambiguous() -> None:
    runs = [
        VerifiedIteration(n=1, failures=[example_miss(2, FIVE_MINUTES, "300", "5")]),
        VerifiedIteration(n=2, failures=[example_miss(2, FIVE_MINUTES, "300", "5")]),
    ]
    findings = spec_findings(SPEC, runs)
    assert [len(e.misses) for e in findings.examples] == [0, 2, 0, 0, 0]
    assert findings.own_tests_passed == [1, 2]
    [suggestion] = ambiguities(findings)
    assert suggestion.startswith(
        f"example 2 (`{FIVE_MINUTES}`): still failing while every test the model wrote from "
        "the description passed"
    )


def test_answers_that_keep_changing_point_at_an_open_case() -> None:
    runs = [
        VerifiedIteration(
            n=1,
            failures=[example_miss(3, TWO_HOURS, "7200", "2"), own_miss("test_constraint_1_x")],
        ),
        VerifiedIteration(
            n=2,
            failures=[example_miss(3, TWO_HOURS, "7200", "120"), own_miss("test_constraint_1_x")],
        ),
    ]
    suggestions = ambiguities(spec_findings(SPEC, runs))
    assert suggestions == [
        f"example 3 (`{TWO_HOURS}`): the model's answers kept changing (expected 7200, got 2; "
        "then expected 7200, got 120) — the description may not pin this case down",
        "constraint 1 (\"raises ValueError for an unknown unit, such as '5x'\"): the model's "
        "own test of it failed in every verified iteration — it may contradict an example or "
        "leave the expected behaviour open",
    ]


def test_most_examples_failing_blames_the_module_and_one_run_proves_little() -> None:
    failures = [
        example_miss(n, line, "x", "ValueError")
        for n, line in ((1, "a"), (2, FIVE_MINUTES), (3, TWO_HOURS))
    ]
    runs = [VerifiedIteration(n=1, failures=[*failures, own_miss("test_constraint_3")])]
    assert ambiguities(spec_findings(SPEC, runs)) == [
        "3 of 5 examples fail in the last verified iteration (1): the module looks wrong as "
        "a whole, not one requirement ambiguous; read its code against the description"
    ]


def test_the_section_lists_every_requirement_with_its_failures() -> None:
    runs = [
        VerifiedIteration(
            n=1,
            failures=[
                example_miss(2, FIVE_MINUTES, "300", "5"),
                own_miss("test_constraint_2_bare_number"),
                own_miss("test_round_trip", "boom"),
            ],
        ),
        VerifiedIteration(n=3, uncollected=[EXAMPLES]),
    ]
    lines = spec_section(SPEC, spec_findings(SPEC, runs), ["iteration 2: tests/x.py:3: calls f"])
    text = "\n".join(lines)
    assert lines[0] == "## The spec: what kept failing"
    assert "Iterations that ran the tests: 1, 3." in text
    assert (
        "| example 2: parse_duration('5m') == 300 | 1, 3 | the examples' file did not import |"
        in lines
    )
    assert "| example 1: parse_duration('45s') == 45 | 3 | the examples' file did not import |" in (
        lines
    )
    assert (
        "| constraint 2: raises ValueError for a number without a unit, such as '10' | 1 | "
        "Failed: DID NOT RAISE <class 'ValueError'> |" in lines
    )
    assert "| constraint 3: the parts add up: '1m30s' is 90 | — | passed |" in lines
    assert "- iteration 1: `tests/test_durations.py::test_round_trip` — Failed: boom" in lines
    assert "- iteration 2: tests/x.py:3: calls f" in lines
    assert "### Which requirement looks ambiguous" in lines


def test_without_a_verified_iteration_nothing_is_blamed() -> None:
    lines = spec_section(SPEC, spec_findings(SPEC, []))
    assert "| example 1: parse_duration('45s') == 45 | — | never ran |" in lines
    assert any(line.startswith("- No iteration ran the tests") for line in lines)


def test_the_test_reports_are_read_from_the_run_directory(tmp_path: Path) -> None:
    report = TestReport(
        exitstatus=1,
        counts=TestCounts(collected=6, passed=5, failed=1),
        tests=[example_miss(2, FIVE_MINUTES, "300", "5")],
        collection_errors=[CollectionError(nodeid="tests/test_other.py")],
    )
    stage = StageResult(
        name="tests", kind=StageKind.TESTS, cmd="pytest", exit_code=1, duration_ms=5, report=report
    )
    (tmp_path / "iterations" / "01").mkdir(parents=True)
    (tmp_path / "iterations" / "01" / "stage-tests.json").write_text(stage.model_dump_json())
    records = [
        IterationRecord(n=1, status="failing"),
        IterationRecord(n=2, status="format_error"),
    ]
    [run] = verified_iterations(tmp_path, records)
    assert run.n == 1
    assert [case.nodeid for case in run.failures] == [report.tests[0].nodeid]
    assert run.uncollected == ["tests/test_other.py"]
