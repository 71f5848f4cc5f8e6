"""The bench harness in the real gVisor sandbox: hidden tests, both arms' feedback, and which
mutants are kept. Fails (never skips) under FIXLOOP_REQUIRE_SANDBOX=1."""

from __future__ import annotations

import pytest

from bench.suite import prompts
from bench.suite.harness import Evaluator
from bench.suite.mutants import seeded_mutants
from bench.suite.runner import BenchConfig, BenchRunner
from bench.suite.tasks import BenchTask
from engine.model.client import Completion, Message, ModelError, Usage
from sandbox.gvisor import GvisorSandbox

pytestmark = pytest.mark.sandbox

TASK = BenchTask(
    task_id="t/affine",
    prompt='def affine(x: int) -> int:\n    """2x + 1."""\n',
    entry_point="affine",
    canonical_solution="    return x * 2 + 1\n",
    test="def check(candidate):\n    assert candidate(0) == 1\n    assert candidate(3) == 7\n",
)


class NoModel:
    model = "none"

    async def complete(
        self, messages: list[Message], *, on_text: object = None, **sampling: object
    ) -> Completion:
        raise AssertionError("finding mutants must not ask the model")


async def test_a_wrong_program_yields_a_packet_and_a_raw_log(gvisor: GvisorSandbox) -> None:
    evaluator = Evaluator(gvisor, timeout_s=60)
    wrong = TASK.prompt + "    return x * 2\n"
    result = await evaluator.evaluate(TASK, wrong, round=1, max_rounds=2)
    assert not result.passed
    assert result.verdict == "failing"
    assert result.summary == "2 of 2 tests failing"
    assert result.tests is not None
    assert result.tests.collected == 2
    assert result.packet_text.startswith(
        "Verification failed (iteration 1/2): 2 of 2 tests failing. Error class: logic."
    )
    assert "FAILED: test_solution.py::test_affine_1" in result.packet_text
    assert "expected: `1`" in result.packet_text
    assert "actual:   `0`" in result.packet_text
    assert "FAILED test_solution.py::test_affine_2" in result.raw_log  # pytest's own words
    assert "2 failed" in result.raw_log


async def test_the_reference_solution_passes(gvisor: GvisorSandbox) -> None:
    result = await Evaluator(gvisor, timeout_s=60).evaluate(
        TASK, TASK.prompt + TASK.canonical_solution
    )
    assert result.passed, result.raw_log
    assert result.summary == "2 of 2 tests pass"
    assert result.packet_text == ""


async def test_only_mutants_that_fail_the_tests_are_kept(gvisor_pool: GvisorSandbox) -> None:
    config = BenchConfig(suite="t", mode="repair", model="none", mutants_per_task=10)
    runner = BenchRunner(config, NoModel(), Evaluator(gvisor_pool, timeout_s=60))
    kept, why = await runner.failing_mutants(TASK)
    # Every mutant of x * 2 + 1 gets x = 3 wrong (x / 2 + 1, x * 3 + 1, x + 1 ...).
    described = sorted((m.operator, m.before, m.after) for m in kept)
    assert why == ""
    assert described == sorted(
        [
            ("arith", "*", "/"),
            ("arith", "+", "-"),
            ("const+1", "2", "3"),
            ("const-1", "2", "1"),
            ("const+1", "1", "2"),
            ("const-1", "1", "0"),
        ]
    )


async def test_a_mutant_that_passes_the_tests_is_not_kept(gvisor_pool: GvisorSandbox) -> None:
    weak = TASK.model_copy(update={"test": "def check(candidate):\n    assert candidate(0) == 1\n"})
    config = BenchConfig(suite="t", mode="repair", model="none", mutants_per_task=10)
    runner = BenchRunner(config, NoModel(), Evaluator(gvisor_pool, timeout_s=60))
    kept, _ = await runner.failing_mutants(weak)
    # At x = 0 only the `+ 1` matters: `* -> /` and both changes of the 2 still give 1.
    assert sorted((m.operator, m.before, m.after) for m in kept) == [
        ("arith", "+", "-"),
        ("const+1", "1", "2"),
        ("const-1", "1", "0"),
    ]


class ScriptedAnswers:
    """A ModelClient at the seam: each call returns (or raises) the next scripted answer."""

    model = "scripted"

    def __init__(self, *answers: str | Exception) -> None:
        self.answers = list(answers)
        self.prompts: list[str] = []

    async def complete(
        self, messages: list[Message], *, on_text: object = None, **sampling: object
    ) -> Completion:
        self.prompts.append(messages[-1].content)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        usage = Usage(prompt_tokens=50, completion_tokens=5, cost_usd=0.0)
        return Completion(
            text=answer,
            usage=usage,
            finish_reason="stop",
            model="scripted",
            attempts=1,
            duration_s=0.1,
        )


async def test_repair_mode_survives_a_cut_off_answer_and_one_without_code(
    gvisor_pool: GvisorSandbox,
) -> None:
    fixed = "solution.py\n```python\n" + TASK.prompt + TASK.canonical_solution + "```\n"
    model = ScriptedAnswers(
        ModelError("model scripted: answer truncated at max_tokens=8 (finish_reason length)"),
        "I would change the operator.",
        fixed,
    )
    config = BenchConfig(suite="t", mode="repair", model="scripted", max_rounds=2, limit=1)
    run = await BenchRunner(config, model, Evaluator(gvisor_pool, timeout_s=60)).run([TASK])
    [item] = run.items
    assert item.mutant is not None
    result = item.arms["packet"]
    assert [a.status for a in result.attempts] == ["truncated", "no_code", "passed"]
    assert result.passed_round == 2
    first, second, third = model.prompts
    assert "has a bug: its tests fail" in first
    # Every mutant of this task fails its tests, so the seed's first one is the one kept.
    mutant = seeded_mutants(TASK, 0)[0]
    assert item.item_id == f"t/affine#{mutant.id}"
    assert item.mutant == mutant.describe()
    assert mutant.program.rstrip() in first  # the model is shown the mutated program
    assert prompts.TRUNCATED in second
    assert prompts.NO_CODE in third
