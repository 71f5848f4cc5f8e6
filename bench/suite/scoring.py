"""Scores of a bench run, per arm: pure arithmetic over its item results.

pass@1 is the share of items whose first answer (round 0) passed; "pass after round r" the
share that passed by round r (cumulative); mean rounds to pass averages, over the items that
passed, the round that did it. Prompt tokens per fix are all the arm's prompt tokens (failed
items' included) over the items it fixed: what one fix costs.
"""

from __future__ import annotations

from statistics import mean

from pydantic import BaseModel

from bench.suite.results import BenchRun


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
    endings: dict[str, int]  # how the runs ended: ok, stalled, exhausted ...


def score(run: BenchRun) -> list[ArmScore]:
    return [score_arm(run, arm) for arm in run.config.arms]


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
        endings=dict(sorted(endings.items(), key=lambda kv: (-kv[1], kv[0]))),
    )
