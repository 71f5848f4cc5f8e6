"""Scores of a bench run, per arm: pure arithmetic over its item results.

pass@1 is the share of items whose round-0 answer passed; "pass after round r" the share that
had passed by round r (cumulative); mean rounds to pass averages, over the items that passed,
the round that did it (0 for a one-shot pass).
"""

from __future__ import annotations

from statistics import mean

from pydantic import BaseModel

from bench.suite.prompts import Arm
from bench.suite.runner import BenchRun


class ArmScore(BaseModel):
    arm: Arm
    tasks: int
    passed: int
    pass_at_1: float
    pass_after_round: list[float]  # index r: passed by round r, r = 0..K
    mean_rounds_to_pass: float | None
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    wall_s: float
    model_calls: int
    mean_feedback_tokens: float | None  # over the prompts of rounds 1..K


def score(run: BenchRun) -> list[ArmScore]:
    return [score_arm(run, arm) for arm in run.config.arms]


def score_arm(run: BenchRun, arm: Arm) -> ArmScore:
    results = [item.arms[arm] for item in run.items if arm in item.arms]
    tasks = len(results)
    rounds = run.config.max_rounds
    passed_rounds = [r.passed_round for r in results if r.passed_round is not None]
    attempts = [a for r in results for a in r.attempts]
    feedback = [a.feedback_tokens for a in attempts if a.round > 0]

    def share(count: int) -> float:
        return count / tasks if tasks else 0.0

    after = [share(sum(1 for p in passed_rounds if p <= r)) for r in range(rounds + 1)]
    return ArmScore(
        arm=arm,
        tasks=tasks,
        passed=len(passed_rounds),
        pass_at_1=after[0],
        pass_after_round=after,
        mean_rounds_to_pass=mean(passed_rounds) if passed_rounds else None,
        prompt_tokens=sum(a.prompt_tokens for a in attempts),
        completion_tokens=sum(a.completion_tokens for a in attempts),
        cost_usd=sum(a.cost_usd for a in attempts),
        wall_s=sum(r.wall_s for r in results),
        model_calls=len(attempts),
        mean_feedback_tokens=mean(feedback) if feedback else None,
    )
