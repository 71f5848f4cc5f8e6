"""Each pytest test's time limit from the suite's own times: what the baseline saw a test take,
and what earlier verifications of the person's tree saw it take (`learned_times.py`), with a
margin, is a floor under its limit, so a test that passed before cannot time out for being
slow, nor after another test's timeout.

The times are measured inside the same kind of sandbox, so its slowdown is already in them.
Pure: times in, needs out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from engine.verify.results import StageKind, StageResult

MARGIN = 3.0  # a test may take this many times its baseline time...
SLACK_S = 1.0  # ...and this much more, for a loaded machine
SHORTEST_LIMIT_SHARE = 5  # the plugin shortens limits to a fifth after a timeout
MAX_NEEDS = 300
MAX_NODEID = 500  # longer ids are left out: the environment carries them


def baseline_durations(stages: Sequence[StageResult]) -> dict[str, float]:
    """The call times the test stages' reports recorded (their slow tests), by test id."""
    durations: dict[str, float] = {}
    for stage in stages:
        if stage.kind is StageKind.TESTS and stage.report is not None:
            durations.update(stage.report.durations)
    return durations


def time_needs(
    durations: Mapping[str, float], test_timeout: float | None, stage_timeout_s: float
) -> dict[str, float]:
    """The seconds each slow test needs (`MARGIN` times its baseline time plus `SLACK_S`),
    for the tests whose need is above the shortest limit the plugin could give them; none
    without a per-test limit.

    The times are the project's own report, so a hostile suite chooses them: a need is only
    ever a floor under a limit the plugin still bounds by the stage's budget (what is left of
    the stage's time, less the reserve for the report: `TimeBudget`), it is capped at the
    stage's time, and a test stopped by it still fails. A need may pass half the stage (the
    plain limit may not) because the budget bounds it: a test that took minutes and passed
    gets them, and when it then hangs the tests left are reported not run, never passed. A
    long need can make a hanging test cost more of the stage's time, never turn it green.
    """
    if not test_timeout:
        return {}
    cap = stage_timeout_s
    shortest = test_timeout / SHORTEST_LIMIT_SHARE
    needs: dict[str, float] = {}
    for nodeid, seconds in durations.items():
        if len(nodeid) > MAX_NODEID or not math.isfinite(seconds) or seconds <= 0:
            continue
        need = min(MARGIN * seconds + SLACK_S, cap)
        if need > shortest:
            needs[nodeid] = round(need, 1)
    ranked = sorted(needs.items(), key=lambda item: item[1], reverse=True)
    return dict(ranked[:MAX_NEEDS])
