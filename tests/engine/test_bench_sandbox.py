"""The bench in the real gVisor sandbox through the real loop: which mutants are kept, and a
task run as a throwaway repository by `start_run`, round by round, per arm, with a scripted
model at the `ModelClient` seam. Fails (never skips) under FIXLOOP_REQUIRE_SANDBOX=1."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from bench.errors import BenchStopped
from bench.suite.bench_run import BenchConfig, BenchEvent, RoundVerified
from bench.suite.harness import SOLUTION, Evaluator
from bench.suite.mutants import reference_program, seeded_mutants
from bench.suite.runner import BenchRunner
from bench.suite.tasks import BenchTask
from engine.errors import ModelError
from engine.model.types import Completion, Message, Usage
from engine.run.events import ModelResponded, RunFinished
from engine.run.run_directory import read_events
from sandbox.gvisor import GvisorSandbox

pytestmark = pytest.mark.sandbox

TASK = BenchTask(
    task_id="t/affine",
    prompt='def affine(x: int) -> int:\n    """2x + 1."""\n',
    entry_point="affine",
    canonical_solution="    return x * 2 + 1\n",
    test="def check(candidate):\n    assert candidate(0) == 1\n    assert candidate(3) == 7\n",
)
RIGHT = reference_program(TASK)
WRONG = TASK.prompt + "    return x * 2\n"


def whole_file(program: str) -> str:
    """An answer in the json edit format that replaces solution.py."""
    edits = [{"path": SOLUTION, "content": program}]
    return "```json\n" + json.dumps({"explanation": "fixed", "edits": edits}) + "\n```"


class ScriptedAnswers:
    """A ModelClient at the seam: each call returns the next scripted answer."""

    model = "scripted"

    def __init__(self, *answers: str | ModelError) -> None:
        self.answers = list(answers)
        self.prompts: list[str] = []

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        on_text: Callable[[str], None] | None = None,
        temperature: float | None = None,
        seed: int | None = None,
    ) -> Completion:
        self.prompts.append("\n\n".join(m.content for m in messages))
        usage = Usage(prompt_tokens=50, completion_tokens=5, cost_usd=0.0)
        answer = self.answers.pop(0)
        if isinstance(answer, ModelError):
            raise answer
        return Completion(
            text=answer,
            usage=usage,
            finish_reason="stop",
            model="scripted",
            attempts=1,
            duration_s=0.1,
        )


class NoModel(ScriptedAnswers):
    async def complete(
        self,
        messages: Sequence[Message],
        *,
        on_text: Callable[[str], None] | None = None,
        temperature: float | None = None,
        seed: int | None = None,
    ) -> Completion:
        raise AssertionError("finding mutants must not ask the model")


def runner(
    sandbox: GvisorSandbox,
    workdir: Path,
    model: ScriptedAnswers,
    heard: list[BenchEvent] | None = None,
    **config: object,
) -> BenchRunner:
    settings = {"suite": "t", "model": "scripted", "limit": 1, "exec_timeout_s": 60.0, **config}
    listener = heard.append if heard is not None else None
    return BenchRunner(
        BenchConfig.model_validate(settings), model, sandbox, workdir, listener=listener
    )


async def test_only_mutants_that_fail_the_tests_are_kept(
    gvisor_pool: GvisorSandbox, tmp_path: Path
) -> None:
    bench = runner(gvisor_pool, tmp_path, NoModel(), mode="repair", mutants_per_task=10)
    kept, why = await bench.failing_mutants(TASK)
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


async def test_a_mutant_that_passes_the_tests_is_not_kept(
    gvisor_pool: GvisorSandbox, tmp_path: Path
) -> None:
    weak = TASK.model_copy(update={"test": "def check(candidate):\n    assert candidate(0) == 1\n"})
    bench = runner(gvisor_pool, tmp_path, NoModel(), mode="repair", mutants_per_task=10)
    kept, _ = await bench.failing_mutants(weak)
    # At x = 0 only the `+ 1` matters: `* -> /` and both changes of the 2 still give 1.
    assert sorted((m.operator, m.before, m.after) for m in kept) == [
        ("arith", "+", "-"),
        ("const+1", "1", "2"),
        ("const-1", "1", "0"),
    ]


async def test_evaluating_the_reference_and_a_wrong_program(gvisor: GvisorSandbox) -> None:
    evaluator = Evaluator(gvisor, timeout_s=60)
    right, wrong = await evaluator.evaluate(TASK, RIGHT), await evaluator.evaluate(TASK, WRONG)
    assert (right.passed, right.summary) == (True, "2 of 2 tests pass")
    assert (wrong.passed, wrong.verdict, wrong.summary) == (
        False,
        "failing",
        "2 of 2 tests failing",
    )


async def test_a_repair_wrong_first_and_right_second_passes_from_round_1(
    gvisor_pool: GvisorSandbox, tmp_path: Path
) -> None:
    model = ScriptedAnswers(whole_file(WRONG), whole_file(RIGHT))
    heard: list[BenchEvent] = []
    run = await runner(gvisor_pool, tmp_path, model, heard, mode="repair", max_rounds=2).run([TASK])
    [item] = run.items
    mutant = seeded_mutants(TASK, 0)[0]  # every mutant fails, so the seed's first is kept
    assert item.item_id == f"t/affine#{mutant.id}"
    result = item.arms["today"]
    assert (result.status, result.rounds, result.passed_round) == ("ok", ["failing", "ok"], 1)
    assert (result.spend.model_calls, result.spend.prompt_tokens) == (2, 100)
    first, second = model.prompts
    assert "The function `affine` in solution.py has a bug: its tests fail." in first
    assert mutant.program.rstrip() in first  # the model is shown the mutated program
    # The loop's own packet, about the wrong answer: two asserts fail, x = 0 gives 0.
    assert "2 of 2 tests failing. Error class: logic." in second
    assert "expected: `1`\n  actual:   `0`" in second
    rounds = [(e.round, e.verdict) for e in heard if isinstance(e, RoundVerified)]
    assert rounds == [(0, "failing"), (1, "ok")]
    # The loop's audit trail, in the task's own repository under the bench's directory.
    trail = Path(result.run_dir)
    assert trail.parent.parent.parent.parent == tmp_path
    events = read_events(trail / "events.jsonl")
    assert [e.prompt_tokens for e in events if isinstance(e, ModelResponded)] == [50, 50]
    assert [e.status for e in events if isinstance(e, RunFinished)] == ["ok"]
    assert (trail / "iterations" / "02" / "prompt.json").is_file()


async def test_a_generate_task_that_passes_at_once(
    gvisor_pool: GvisorSandbox, tmp_path: Path
) -> None:
    model = ScriptedAnswers(whole_file(RIGHT))
    run = await runner(gvisor_pool, tmp_path, model, mode="generate").run([TASK])
    result = run.items[0].arms["today"]
    assert (result.status, result.rounds, result.passed_round) == ("ok", ["ok"], 0)
    [prompt] = model.prompts
    assert "Complete the function `affine` in solution.py" in prompt
    assert '"""2x + 1."""' in prompt


async def test_the_raw_arm_tells_the_model_the_raw_test_output(
    gvisor_pool: GvisorSandbox, tmp_path: Path
) -> None:
    answers = [whole_file(WRONG), whole_file(RIGHT)]
    model = ScriptedAnswers(*answers, *answers)
    bench = runner(gvisor_pool, tmp_path, model, mode="generate", arms=["today", "raw"])
    run = await bench.run([TASK])
    arms = run.items[0].arms
    assert [arms[a].passed_round for a in ("today", "raw")] == [1, 1]
    assert arms["today"].run_dir != arms["raw"].run_dir
    _, today, _, raw = model.prompts
    assert "FAILED test_solution.py::test_affine_1" in raw  # pytest's own words
    assert "Please fix it." in raw
    assert "Verification failed" not in raw
    assert "2 of 2 tests failing. Error class: logic." in today
    assert "Please fix it." not in today


TRUNCATED = ModelError(
    "model scripted: answer truncated at max_tokens=8 (finish_reason length)",
    cause="answer truncated at max_tokens=8 (finish_reason length)",
    answered=True,
)


async def test_a_truncated_first_answer_ends_that_run_not_the_bench(
    gvisor_pool: GvisorSandbox, tmp_path: Path
) -> None:
    model = ScriptedAnswers(TRUNCATED, whole_file(RIGHT))
    bench = runner(gvisor_pool, tmp_path, model, mode="generate", arms=["today", "raw"])
    run = await bench.run([TASK])
    arms = run.items[0].arms
    assert arms["today"].status == "error"
    assert (arms["raw"].status, arms["raw"].passed_round) == ("ok", 0)


async def test_an_unreachable_model_stops_the_bench(
    gvisor_pool: GvisorSandbox, tmp_path: Path
) -> None:
    refused = ModelError("model scripted: gave up after 3 attempts: connection refused")
    model = ScriptedAnswers(refused, whole_file(RIGHT))
    bench = runner(gvisor_pool, tmp_path, model, mode="generate", arms=["today", "raw"])
    with pytest.raises(BenchStopped, match="connection refused"):
        await bench.run([TASK])
    assert model.answers == [whole_file(RIGHT)]  # the second arm never asked
