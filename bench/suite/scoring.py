"""Scores of a bench run, per arm: pure arithmetic over its item results.

pass@1 is the share of items whose first answer (round 0) passed; "pass after round r" the
share that passed by round r (cumulative); mean rounds to pass averages, over the items that
passed, the round that did it. Prompt tokens per fix are all the arm's prompt tokens (failed
items' included) over the items it fixed: what one fix costs; wall time per fix likewise (every
run's wall time, from its start to its verdict, over the fixes). Time per round is the mean wall
time of one iteration (its answer and its verification) over every iteration the arm ran.

Each arm after the first is also paired with the first on the items both ran: the items it
fixed that the first did not (gained), those the first fixed and it did not (lost), and the
exact two-sided sign test on those: the chance of a split at least this uneven if the two arms
fixed as well as each other. Tens of tasks make a few fixes of difference likely by chance.
"""

from __future__ import annotations

from math import comb
from statistics import mean, median

from pydantic import BaseModel

from bench.suite.bench_run import BenchRun


class ArmScore(BaseModel):
    arm: str
    tasks: int
    passed: int
    pass_at_1: float
    pass_after_round: list[float]  # index r: passed by round r, r = 0..K
    mean_rounds_to_pass: float | None
    model_calls: int
    prompt_tokens: int
    completion_tokens: int
    prompt_tokens_per_fix: float | None
    cost_usd: float
    wall_s: float
    wall_s_per_task: float | None
    # The median run's wall time: what a task takes, one run slowed by other load aside.
    median_wall_s: float | None
    wall_s_per_fix: float | None = None
    round_s: float | None = None  # the mean iteration's wall time
    # Seeded bugs in projects: fixes whose last commit changed the bug's function.
    fixes_touching_bug: int | None = None
    endings: dict[str, int]  # how the runs ended: ok, stalled, exhausted ...
    # Against the first arm, on the items both ran (None for the first arm itself).
    gained: int | None = None
    lost: int | None = None
    sign_test_p: float | None = None


def score(run: BenchRun) -> list[ArmScore]:
    scores = [score_arm(run, arm) for arm in run.config.arms]
    first = scores[0].arm if scores else ""
    for s in scores[1:]:
        both = [item.arms for item in run.items if first in item.arms and s.arm in item.arms]
        fixed = [
            (a[first].passed_round is not None, a[s.arm].passed_round is not None) for a in both
        ]
        s.gained = sum(1 for by_first, by_arm in fixed if by_arm and not by_first)
        s.lost = sum(1 for by_first, by_arm in fixed if by_first and not by_arm)
        s.sign_test_p = sign_test(s.gained, s.lost)
    return scores


def sign_test(gained: int, lost: int) -> float:
    """Two-sided exact sign test: P(a split at least as uneven) when each differing item is
    a fair coin's toss."""
    n = gained + lost
    if n == 0:
        return 1.0
    tail = sum(comb(n, k) for k in range(min(gained, lost) + 1)) / (1 << n)
    return min(1.0, 2 * tail)


def score_arm(run: BenchRun, arm: str) -> ArmScore:
    results = [item.arms[arm] for item in run.items if arm in item.arms]
    tasks = len(results)
    passed_rounds = [r.passed_round for r in results if r.passed_round is not None]

    def share(count: int) -> float:
        return count / tasks if tasks else 0.0

    after = [
        share(sum(1 for p in passed_rounds if p <= r)) for r in range(run.config.max_rounds + 1)
    ]
    prompt_tokens = sum(r.spend.prompt_tokens for r in results)
    wall = sum(r.wall_s for r in results)
    iteration_s = [s for r in results for s in r.round_s]
    known = [r for r in results if r.passed_round is not None and r.touched_bug is not None]
    endings: dict[str, int] = {}
    for result in results:
        endings[result.status] = endings.get(result.status, 0) + 1
    return ArmScore(
        arm=arm,
        tasks=tasks,
        passed=len(passed_rounds),
        pass_at_1=after[0],
        pass_after_round=after,
        mean_rounds_to_pass=mean(passed_rounds) if passed_rounds else None,
        model_calls=sum(r.spend.model_calls for r in results),
        prompt_tokens=prompt_tokens,
        completion_tokens=sum(r.spend.completion_tokens for r in results),
        prompt_tokens_per_fix=prompt_tokens / len(passed_rounds) if passed_rounds else None,
        cost_usd=sum(r.spend.cost_usd for r in results),
        wall_s=wall,
        wall_s_per_task=wall / tasks if tasks else None,
        median_wall_s=median(r.wall_s for r in results) if results else None,
        wall_s_per_fix=wall / len(passed_rounds) if passed_rounds else None,
        round_s=mean(iteration_s) if iteration_s else None,
        fixes_touching_bug=sum(1 for r in known if r.touched_bug) if known else None,
        endings=dict(sorted(endings.items(), key=lambda kv: (-kv[1], kv[0]))),
    )
