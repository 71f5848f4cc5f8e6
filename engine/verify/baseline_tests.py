"""The baseline's tests (ARCHITECTURE.md, "Honest green"): outside spec mode a pass counts only
when the tests that existed before the model was asked ran and passed; tests the model added
count for nothing on their own, and a baseline with no test at all is refused (the one
predicate for the task screen, the run's baseline and `verify`)."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from engine.verify.results import StageKind, StageResult, TestReport
from engine.verify.time_needs import baseline_durations

NOT_RUN = frozenset({"skipped", "xfailed"})
NO_TESTS = "no tests at the baseline: the test command ran none, so nothing can show a fix is right"


def _test_stages(stages: Sequence[StageResult]) -> list[StageResult]:
    return [stage for stage in stages if stage.kind is StageKind.TESTS]


def no_tests_reason(stages: Sequence[StageResult]) -> str | None:
    """None when the verified tree has tests; else one line saying it has none.

    Every test stage must say no test was collected: pytest's exit 5, or a report of 0
    collected with no collection error. Tests that fail to import, a sandbox or plugin
    failure and no test stage at all say nothing about whether tests exist: None.
    """
    tests = _test_stages(stages)
    if not tests:
        return None
    for stage in tests:
        report = stage.report
        if report is None:
            if stage.exit_code != 5 or stage.infrastructure_error:
                return None
        elif (
            report.internal_error
            or report.collection_errors
            or report.counts.collected
            or report.counts.errors
        ):
            return None
    return NO_TESTS


def _counted(report: TestReport) -> bool:
    return bool(report.counts.collected or report.counts.errors)


class BaselineTests(BaseModel):
    """The test ids the baseline collected, those it already skipped or xfailed, and the call
    times of its slow tests (what each later limit must allow, `time_needs`)."""

    model_config = ConfigDict(frozen=True)

    ids: list[str] = Field(default_factory=list)
    not_run: list[str] = Field(default_factory=list)
    durations: dict[str, float] = Field(default_factory=dict)

    @classmethod
    def of(cls, stages: Sequence[StageResult]) -> BaselineTests | None:
        """The baseline's test ids; None when a report does not list every collected test."""
        outcomes = _outcomes(stages)
        if outcomes is None:
            return None
        return cls(
            ids=list(outcomes),
            not_run=[i for i, o in outcomes.items() if o in NOT_RUN],
            durations=baseline_durations(stages),
        )


class TestsCheck(BaseModel):
    """What a passing run did with the baseline's tests."""

    model_config = ConfigDict(frozen=True)
    __test__ = False

    doubts: list[str] = Field(default_factory=list)
    new_tests: list[str] = Field(default_factory=list)  # collected now, not at the baseline


def check_baseline_tests(
    baseline: BaselineTests | None, stages: Sequence[StageResult]
) -> TestsCheck:
    """The baseline's tests in a run: which are missing or newly not run, whether the pass
    rests only on tests the model added, and which tests are new."""
    outcomes = _outcomes(stages)
    if baseline is None or outcomes is None:
        return TestsCheck()
    known = set(baseline.ids)
    new = [nodeid for nodeid in outcomes if nodeid not in known]
    doubts = []
    missing = [nodeid for nodeid in baseline.ids if nodeid not in outcomes]
    if missing:
        doubts.append(f"{_count(missing, 'baseline test')} no longer collected: {_few(missing)}")
    was_run = [nodeid for nodeid in baseline.ids if nodeid not in set(baseline.not_run)]
    stopped = [nodeid for nodeid in was_run if outcomes.get(nodeid) in NOT_RUN]
    if stopped:
        doubts.append(f"{_count(stopped, 'baseline test')} now skipped: {_few(stopped)}")
    passed_baseline = sum(1 for nodeid in baseline.ids if outcomes.get(nodeid) == "passed")
    passed_new = sum(1 for nodeid in new if outcomes[nodeid] == "passed")
    if passed_baseline == 0 and passed_new:
        doubts.append(
            f"the pass rests only on new tests by the model ({passed_new} passed); "
            f"none of the baseline's {len(baseline.ids)} tests passed"
        )
    return TestsCheck(doubts=doubts, new_tests=new)


def _outcomes(stages: Sequence[StageResult]) -> dict[str, str] | None:
    """Every collected test id and its outcome, over all test stages; None when a stage has
    no report or its report does not list every collected test."""
    reports = [stage.report for stage in _test_stages(stages)]
    if not reports or any(r is None or not _complete(r) for r in reports):
        return None
    outcomes: dict[str, str] = {}
    for report in reports:
        assert report is not None
        outcomes.update(dict.fromkeys(report.nodeids, "passed"))
        for case in report.tests:
            if case.when == "collect":
                continue
            if case.nodeid in outcomes and outcomes[case.nodeid] == "passed":
                outcomes[case.nodeid] = case.outcome
    return outcomes


def _complete(report: TestReport) -> bool:
    return not report.truncated and len(report.nodeids) == report.counts.collected


def _count(ids: Sequence[str], noun: str) -> str:
    return f"{len(ids)} {noun}{'' if len(ids) == 1 else 's'}"


def _few(ids: Sequence[str], shown: int = 3) -> str:
    more = f" and {len(ids) - shown} more" if len(ids) > shown else ""
    return ", ".join(ids[:shown]) + more
