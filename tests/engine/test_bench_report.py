"""The bench's harness files, scores, table and plots, from handcrafted results."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from bench.suite.harness import assemble, extract_code, hidden_tests, raw_log
from bench.suite.report import duration, render, table, terminal_plot, write_png
from bench.suite.runner import ArmResult, Attempt, BenchConfig, BenchRun, ItemResult
from bench.suite.scoring import score
from bench.suite.tasks import BenchTask, load_suite
from engine.verify.results import StageKind, StageResult

TASK = BenchTask(
    task_id="t/add",
    prompt=(
        "from typing import List\n\n\ndef helper(x):\n    return x\n\n\n"
        'def add(a: int, b: int) -> int:\n    """Add."""\n'
    ),
    entry_point="add",
    canonical_solution="    return a + b\n",
    test=(
        "METADATA = {}\n\n\ndef check(candidate):\n    assert candidate(1, 2) == 3\n"
        "    assert True\n    assert candidate(\n        0, 0\n    ) == 0\n"
    ),
)


# --- the files the sandbox gets --------------------------------------------------------------


def test_each_assert_of_check_becomes_its_own_test() -> None:
    module = hidden_tests(TASK)
    tree = ast.parse(module)
    tests = [
        n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test")
    ]
    assert tests == ["test_add_1", "test_add_2"]  # `assert True` tests nothing
    assert "from solution import add\n" in module
    assert "    candidate = add\n    assert candidate(\n        0, 0\n    ) == 0\n" in module


def test_a_check_with_more_than_asserts_is_one_test() -> None:
    looping = TASK.model_copy(
        update={
            "test": (
                "def check(candidate):\n    for i in range(3):\n"
                "        assert candidate(i, 0) == i\n"
            )
        }
    )
    tree = ast.parse(hidden_tests(looping))
    tests = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test")]
    assert [n.name for n in tests] == ["test_add"]
    assert ast.unparse(tests[0].body[0]) == "check(add)"


def test_every_humaneval_test_module_parses() -> None:
    for subject in load_suite("humaneval"):
        ast.parse(hidden_tests(subject))


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (
            "Here:\n```python\ndef add(a, b):\n    return a + b\n```\n",
            "def add(a, b):\n    return a + b\n",
        ),
        (
            "```python\nimport os\n```\nsolution.py\n```python\ndef add(a, b):\n    return 1\n```",
            "def add(a, b):\n    return 1\n",
        ),
        ("```\n    return a + b\n```", "    return a + b\n"),
        ("def add(a, b):\n    return b + a\n", "def add(a, b):\n    return b + a\n"),
        ("I would add the numbers.", None),
        ("```python\ndef add(a, b):\n    return a +", None),  # cut off: the fence never closes
    ],
)
def test_the_code_is_found_in_the_answer(answer: str, expected: str | None) -> None:
    assert extract_code(answer, "add") == expected


def test_a_whole_function_gets_the_prompts_imports_and_helpers_it_left_out() -> None:
    program = assemble(TASK, "def add(a: int, b: int) -> int:\n    return helper(a) + b\n")
    assert program == (
        "from typing import List\n"
        "def helper(x):\n    return x\n\n\n"
        "def add(a: int, b: int) -> int:\n    return helper(a) + b\n"
    )


def test_a_function_body_completes_the_prompt() -> None:
    assert assemble(TASK, "    return a + b\n") == TASK.prompt + "    return a + b\n"
    assert assemble(TASK, "return a + b\n") == TASK.prompt + "    return a + b\n"


def test_the_raw_log_keeps_the_tail() -> None:
    stage = StageResult(
        name="tests",
        kind=StageKind.TESTS,
        cmd="pytest",
        exit_code=1,
        duration_ms=1,
        stdout="head\n" + "x" * 50 + "\nFAILED test_solution.py::test_add_1\n",
        stderr="",
    )
    log = raw_log([stage], chars=40)
    assert log.startswith("...\n")
    assert log.endswith("FAILED test_solution.py::test_add_1")
    assert "head" not in log


# --- scores ----------------------------------------------------------------------------------


def attempt(
    round: int, passed: bool, *, tokens: tuple[int, int] = (100, 20), feedback: int = 0
) -> Attempt:
    return Attempt(
        round=round,
        status="passed" if passed else "failed",
        summary="",
        prompt_tokens=tokens[0],
        completion_tokens=tokens[1],
        cost_usd=0.001,
        feedback_tokens=feedback,
    )


def arm(name: str, passes_in: int | None, rounds: int = 2, wall: float = 10.0) -> ArmResult:
    last = rounds if passes_in is None else passes_in
    attempts = [
        attempt(r, r == passes_in, feedback=0 if r == 0 else (50 if name == "packet" else 300))
        for r in range(last + 1)
    ]
    return ArmResult(arm=name, attempts=attempts, passed_round=passes_in, wall_s=wall)  # type: ignore[arg-type]


def handcrafted_run() -> BenchRun:
    """Four tasks, two repair rounds: packet passes 1 in r0, 1 in r1, 1 in r2; raw 1 in r0 only."""
    outcomes = {"t/1": (0, 0), "t/2": (1, None), "t/3": (2, None), "t/4": (None, None)}
    items = [
        ItemResult(
            item_id=task_id,
            task_id=task_id,
            arms={"packet": arm("packet", packet), "raw": arm("raw", raw, wall=20.0)},
        )
        for task_id, (packet, raw) in outcomes.items()
    ]
    return BenchRun(
        config=BenchConfig(
            suite="DIR", model="openai/scripted", arms=["packet", "raw"], max_rounds=2, limit=4
        ),
        started="2026-01-02T03:04:05+00:00",
        machine={"cpu": "Test CPU", "cores": "2"},
        duration_s=100.0,
        items=items,
    )


def test_scores_count_cumulative_passes_per_round() -> None:
    packet, raw = score(handcrafted_run())
    assert packet.tasks == raw.tasks == 4
    assert packet.pass_after_round == [0.25, 0.5, 0.75]
    assert raw.pass_after_round == [0.25, 0.25, 0.25]
    assert packet.pass_at_1 == raw.pass_at_1 == 0.25
    assert packet.mean_rounds_to_pass == 1.0  # (0 + 1 + 2) / 3
    assert raw.mean_rounds_to_pass == 0.0
    # attempts: packet 1 + 2 + 3 + 3 = 9, raw 1 + 3 + 3 + 3 = 10
    assert (packet.model_calls, raw.model_calls) == (9, 10)
    assert (packet.prompt_tokens, packet.completion_tokens) == (900, 180)
    assert packet.cost_usd == pytest.approx(0.009)
    assert (packet.wall_s, raw.wall_s) == (40.0, 80.0)
    assert (packet.mean_feedback_tokens, raw.mean_feedback_tokens) == (50, 300)


def test_no_pass_at_all_has_no_mean_rounds() -> None:
    run = handcrafted_run()
    run.items = [run.items[-1]]
    packet, _ = score(run)
    assert packet.pass_after_round == [0.0, 0.0, 0.0]
    assert packet.mean_rounds_to_pass is None


GOLDEN_TABLE = """\
                              packet         raw
tasks                              4           4
pass@1 (one-shot)              25.0%       25.0%
pass after round 1             50.0%       25.0%
pass after round 2             75.0%       25.0%
mean rounds to pass             1.00        0.00
model calls                        9          10
prompt tokens                    900       1,000
completion tokens                180         200
feedback tokens/prompt            50         300
cost (USD)                    0.0090      0.0100
wall time                        40s       1m20s"""


def test_the_table_is_golden() -> None:
    run = handcrafted_run()
    assert table(run, score(run)) == GOLDEN_TABLE


def test_the_whole_report_fits_100_columns() -> None:
    run = handcrafted_run()
    text = render(run, score(run))
    assert GOLDEN_TABLE in text
    assert text.startswith(
        "fixloop bench: generate on DIR, model openai/scripted\n"
        "seed 0, limit 4, up to 2 repair rounds\n"
        "2026-01-02T03:04:05+00:00 on Test CPU (2 cores)\n"
    )
    assert "t/3" in text
    assert max(len(line) for line in text.splitlines()) <= 100


def test_a_long_suite_path_is_shortened_from_the_left() -> None:
    run = handcrafted_run()
    run.config = run.config.model_copy(update={"suite": "/tmp/" + "deep/" * 30 + "suite"})
    first = render(run, score(run)).splitlines()[0]
    assert len(first) <= 100
    assert first.startswith("fixloop bench: generate on …")
    assert "/deep/suite, model" in first


def test_the_outcomes_say_which_round_passed() -> None:
    run = handcrafted_run()
    lines = render(run, score(run)).splitlines()
    assert any(line.split() == ["t/2", "r1", "-"] for line in lines)
    assert any(line.split() == ["t/4", "-", "-"] for line in lines)


def test_durations_read_like_a_clock() -> None:
    assert [duration(s) for s in (5, 65, 3725)] == ["5s", "1m05s", "1h02m"]


def test_the_terminal_plot_draws_a_bar_per_arm_and_round() -> None:
    run = handcrafted_run()
    plot = terminal_plot(score(run), rounds=2)
    lines = plot.splitlines()
    assert len(lines) == 1 + 3 * 2
    assert lines[1] == " r0 packet |" + "█" * 10 + " " * 30 + "|  25.0%"
    assert lines[5] == " r2 packet |" + "█" * 30 + " " * 10 + "|  75.0%"
    assert lines[6] == "    raw    |" + "█" * 10 + " " * 30 + "|  25.0%"


def test_the_png_is_written(tmp_path: Path) -> None:
    run = handcrafted_run()
    path = write_png(score(run), 2, tmp_path / "bench.png", "handcrafted")
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 5_000  # axes, lines and labels, not an empty canvas
