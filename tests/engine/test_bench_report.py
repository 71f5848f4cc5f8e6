"""The bench's task files and repositories, its arms, rounds from a run's result, scores,
table and plots, from handcrafted results."""

from __future__ import annotations

import ast
from pathlib import Path

import git
import pytest

from bench.errors import ArmError
from bench.suite.arms import TODAY, arm_settings, describe, parse_arms
from bench.suite.bench_report import duration, render, table, terminal_plot, write_png
from bench.suite.bench_run import (
    ArmResult,
    BenchConfig,
    BenchRun,
    ItemResult,
    ModelSpend,
    arm_result,
)
from bench.suite.harness import (
    CASES_FILE,
    SOLUTION,
    TEST_FILE,
    hidden_files,
    task_repo,
)
from bench.suite.scoring import score, sign_test
from bench.suite.tasks import BenchTask, load_suite
from engine.project.settings import Settings
from engine.project.strategy import PRESETS, Strategy
from engine.run.guards import RunStatus
from engine.run.outcome import IterationRecord, RunResult

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
    module = hidden_files(TASK)[TEST_FILE]
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
    tree = ast.parse(hidden_files(looping)[TEST_FILE])
    tests = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test")]
    assert [n.name for n in tests] == ["test_add"]
    assert ast.unparse(tests[0].body[0]) == "check(add)"


def test_the_table_layout_is_one_test_over_the_calls_and_their_results() -> None:
    tolerant = TASK.model_copy(
        update={"test": TASK.test + "    assert abs(candidate(1, 1) - 2) < 1e-9\n"}
    )
    module = hidden_files(tolerant, "table")[TEST_FILE]
    tree = ast.parse(module)
    tests = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
    assert tests == ["test_add", "test_add_3"]  # the tolerance is no table row: its own test
    assert "def check" not in module  # nothing twice: the table says what check said
    assert "METADATA = {}" in module
    assert "CASES = [  # (arguments, expected)\n    ((1, 2), 3),\n    ((0, 0), 0),\n]" in module
    assert "    assert add(*args) == expected\n" in module  # the failing line names no input


def test_the_data_layout_reads_the_table_from_a_file_beside_the_tests(tmp_path: Path) -> None:
    module = hidden_files(TASK, "data")[TEST_FILE]
    assert "CASES = [" not in module
    assert "((1, 2), 3)" not in module
    assert f'CASES = eval(Path(__file__).with_name("{CASES_FILE}").read_text())' in module
    assert "    assert add(*args) == expected\n" in module
    cases = hidden_files(TASK, "data")[CASES_FILE]
    assert ast.literal_eval(cases) == [((1, 2), 3), ((0, 0), 0)]  # what the table held
    assert list(hidden_files(TASK, "table")) == [TEST_FILE]
    root = task_repo(tmp_path / "task", TASK, TASK.prompt, layout="data")
    assert sorted(git.Repo(root).git.ls_files().split()) == [SOLUTION, TEST_FILE, CASES_FILE]
    assert (root / CASES_FILE).read_text() == cases


def test_an_assert_the_table_cannot_hold_keeps_its_own_test() -> None:
    asserts = [
        "assert candidate(1, b=2) == 3",  # a keyword
        "assert candidate(1, 2) is 3",  # not ==
        "assert candidate(1, 2) == candidate(2, 1)",  # the parameter, unknown at import
        "assert helper(candidate(1, 2)) == 3",  # a call of something else
    ]
    odd = TASK.model_copy(
        update={"test": "def check(candidate):\n" + "".join(f"    {a}\n" for a in asserts)}
    )
    module = hidden_files(odd, "table")[TEST_FILE]
    assert "CASES" not in module
    assert "import pytest" in module
    assert [f"test_add_{n}" in module for n in range(1, 5)] == [True] * 4


def test_every_humaneval_test_module_parses() -> None:
    for subject in load_suite("humaneval"):
        ast.parse(hidden_files(subject)[TEST_FILE])
        ast.parse(hidden_files(subject, "table")[TEST_FILE])
        data = hidden_files(subject, "data")
        ast.parse(data[TEST_FILE])
        if CASES_FILE in data:
            ast.parse(data[CASES_FILE], mode="eval")


def test_a_task_becomes_a_committed_repository(tmp_path: Path) -> None:
    root = task_repo(tmp_path / "task", TASK, TASK.prompt)
    repo = git.Repo(root)
    assert not repo.is_dirty(untracked_files=True)
    assert sorted(repo.git.ls_files().split()) == [SOLUTION, TEST_FILE]
    assert (root / SOLUTION).read_text() == TASK.prompt
    assert (root / TEST_FILE).read_text() == hidden_files(TASK)[TEST_FILE]


# --- arms ------------------------------------------------------------------------------------


def test_arms_are_named_presets_of_run_options() -> None:
    base = Settings(model="openai/x", api_base="http://127.0.0.1:1/v1")
    today, raw, full = (arm_settings(name, base) for name in ("today", "raw", "all"))
    t, f = today.strategy, full.strategy
    assert (t.feedback, today.candidates, t.prompt_profile) == ("packet", 1, "full")
    assert (t.runtime_values, t.noop_retry, t.restart_on_stall) == (False,) * 3
    assert t == PRESETS["levers-off"]  # the arms that are strategies are the presets
    assert raw.strategy == PRESETS["naive"] == t.model_copy(update={"feedback": "raw"})
    assert (full.candidates, f.prompt_profile) == (3, "small")
    assert (f.runtime_values, f.noop_retry, f.restart_on_stall) == (True,) * 3
    assert today.api_base == base.api_base
    assert arm_settings("defaults", base) == base
    assert base.strategy.runtime_values  # on by default: the arms measured before keep them off
    assert base.strategy.code_noop  # so is this, since
    assert base.candidates is None  # and the embedded model's 3 candidates: they keep one

    def levers(**changed: object) -> Settings:  # one answer, the default strategy changed
        return base.model_copy(update={"candidates": 1, "strategy": Strategy(**changed)})

    older = levers(code_noop=False)
    assert arm_settings("no-code-noop", base) == older
    assert arm_settings("code-noop", base) == levers()
    before = levers(code_noop=False, runtime_values=False)
    assert arm_settings("no-values", base) == before
    greedy = levers(code_noop=False, runtime_values=False, sample_after_noop=False)
    assert arm_settings("greedy", base) == greedy
    assert arm_settings("values", base) == levers(code_noop=False, sample_after_noop=False)
    assert not t.sample_after_noop
    assert arm_settings("sampled", base) == before
    compact = levers(code_noop=False, runtime_values=False, prompt_profile="small")
    assert arm_settings("compact", base) == compact
    assert arm_settings("defaults-values", base) == older
    assert arm_settings("defaults-cand3", base) == older.model_copy(update={"candidates": 3})


def test_an_arm_is_described_by_what_it_changes() -> None:
    assert describe("runtime") == "today + runtime values on"
    no_code = "comment and string edits as no-ops"
    one = "1 candidate"  # the embedded model's default is 3: the arms measured before keep 1
    assert describe("no-values") == f"defaults + {one}, runtime values, {no_code} off"
    assert describe("greedy") == (
        f"defaults + {one}, runtime values, {no_code}, sampling after a no-op off"
    )
    assert describe("values") == (
        f"defaults + {one}, runtime values on, {no_code}, sampling after a no-op off"
    )
    assert describe("sampled") == (
        f"defaults + {one}, sampling after a no-op on, runtime values, {no_code} off"
    )
    assert describe("compact") == f"defaults + {one}, small prompt, runtime values, {no_code} off"
    assert describe("code") == (
        f"defaults + {one}, called functions without docstrings on, runtime values, {no_code} off"
    )
    assert describe("all").startswith("today + 3 candidates, small prompt")
    assert describe("defaults-cand3") == f"defaults + 3 candidates, {no_code} off"
    assert describe("no-code-noop") == f"defaults + 1 candidate, {no_code} off"
    assert describe("code-noop") == f"defaults + 1 candidate, {no_code} on"


def test_arms_are_parsed_in_order_once_each() -> None:
    assert parse_arms("raw, today,raw") == ["raw", "today"]
    with pytest.raises(ArmError, match="unknown arm 'fast' \\(known: today, raw, small"):
        parse_arms("today,fast")
    assert TODAY.candidates == 1


# --- rounds from a run's result --------------------------------------------------------------


def run_result(status: RunStatus, *verdicts: str) -> RunResult:
    return RunResult(
        run_id="r",
        status=status,
        reason="",
        iterations=[IterationRecord(n=n, status=v) for n, v in enumerate(verdicts, start=1)],
        branch="",
        final_commit=None,
        run_dir="/tmp/x/.fixloop/runs/r",
        report=None,
        tokens=0,
        cost_usd=0.0,
        duration_s=1.0,
    )


def test_round_r_is_iteration_r_plus_1() -> None:
    fixed = arm_result(
        "today", run_result(RunStatus.OK, "failing", "no_change", "ok"), ModelSpend(), 1
    )
    assert (fixed.rounds, fixed.passed_round) == (["failing", "no_change", "ok"], 2)
    assert fixed.run_dir == "/tmp/x/.fixloop/runs/r"
    stalled = arm_result(
        "today", run_result(RunStatus.STALLED, "failing", "failing"), ModelSpend(), 1
    )
    assert (stalled.status, stalled.passed_round) == ("stalled", None)
    doubted = arm_result(
        "today", run_result(RunStatus.SUSPICIOUS_PASS, "suspicious_pass"), ModelSpend(), 1
    )
    assert doubted.passed_round is None
    green = arm_result(
        "today", run_result(RunStatus.OK), ModelSpend(), 1
    )  # green before any answer
    assert green.passed_round == 0


# --- scores ----------------------------------------------------------------------------------


def arm(name: str, passes_in: int | None, rounds: int = 2, wall: float = 10.0) -> ArmResult:
    last = rounds if passes_in is None else passes_in
    calls = last + 1
    per_call = 100 if name == "today" else 60
    return ArmResult(
        arm=name,
        status="ok" if passes_in is not None else "exhausted",
        rounds=["ok" if r == passes_in else "failing" for r in range(calls)],
        passed_round=passes_in,
        spend=ModelSpend(
            model_calls=calls,
            prompt_tokens=per_call * calls,
            completion_tokens=20 * calls,
            cost_usd=0.001 * calls,
        ),
        wall_s=wall,
        run_dir=f"/tmp/bench/{name}/.fixloop/runs/r",
        round_s=[wall / calls] * calls,
    )


def handcrafted_run() -> BenchRun:
    """Four tasks, two repair rounds: today passes 1 in r0, 1 in r1, 1 in r2; raw 1 in r0 only."""
    outcomes = {"t/1": (0, 0), "t/2": (1, None), "t/3": (2, None), "t/4": (None, None)}
    items = [
        ItemResult(
            item_id=task_id,
            task_id=task_id,
            arms={"today": arm("today", today), "raw": arm("raw", raw, wall=20.0)},
        )
        for task_id, (today, raw) in outcomes.items()
    ]
    return BenchRun(
        config=BenchConfig(
            suite="DIR", model="openai/scripted", arms=["today", "raw"], max_rounds=2, limit=4
        ),
        started="2026-01-02T03:04:05+00:00",
        machine={"cpu": "Test CPU", "cores": "2"},
        duration_s=100.0,
        items=items,
    )


def test_scores_count_cumulative_passes_per_round() -> None:
    today, raw = score(handcrafted_run())
    assert today.tasks == raw.tasks == 4
    assert today.pass_after_round == [0.25, 0.5, 0.75]
    assert raw.pass_after_round == [0.25, 0.25, 0.25]
    assert today.pass_at_1 == raw.pass_at_1 == 0.25
    assert today.mean_rounds_to_pass == 1.0  # (0 + 1 + 2) / 3
    assert raw.mean_rounds_to_pass == 0.0
    # calls: today 1 + 2 + 3 + 3 = 9, raw 1 + 3 + 3 + 3 = 10
    assert (today.model_calls, raw.model_calls) == (9, 10)
    assert (today.prompt_tokens, today.completion_tokens) == (900, 180)
    assert (today.prompt_tokens_per_fix, raw.prompt_tokens_per_fix) == (300, 600)
    assert today.cost_usd == pytest.approx(0.009)
    assert (today.wall_s, raw.wall_s) == (40.0, 80.0)
    assert (today.wall_s_per_task, raw.wall_s_per_task) == (10.0, 20.0)
    assert today.endings == {"ok": 3, "exhausted": 1}


def test_time_per_fix_is_every_runs_wall_time_over_the_fixes() -> None:
    today, raw = score(handcrafted_run())
    assert today.wall_s_per_fix == pytest.approx(40.0 / 3)  # 4 runs of 10 s, 3 fixes
    assert raw.wall_s_per_fix == 80.0  # 4 runs of 20 s, 1 fix
    # A round's time is the mean over every iteration run: today ran 9, raw 10.
    assert today.round_s == pytest.approx(40.0 / 9)
    assert raw.round_s == pytest.approx(8.0)


def test_each_arm_is_paired_with_the_first_on_the_tasks_both_ran() -> None:
    run = handcrafted_run()
    today, raw = score(run)
    assert (today.gained, today.lost, today.sign_test_p) == (None, None, None)
    assert (raw.gained, raw.lost) == (0, 2)  # today fixed t/2 and t/3, raw neither
    assert raw.sign_test_p == 0.5
    run.items[1].arms.pop("today")  # a task the first arm did not run is not compared
    assert (score(run)[1].gained, score(run)[1].lost) == (0, 1)


@pytest.mark.parametrize(
    ("gained", "lost", "p"),
    [(0, 0, 1.0), (1, 1, 1.0), (3, 0, 0.25), (0, 3, 0.25), (6, 1, 0.125), (10, 0, 2 / 1024)],
)
def test_the_sign_test_is_exact_and_two_sided(gained: int, lost: int, p: float) -> None:
    assert sign_test(gained, lost) == pytest.approx(p)


def test_no_pass_at_all_has_no_mean_rounds_nor_tokens_per_fix() -> None:
    run = handcrafted_run()
    run.items = [run.items[-1]]
    today, _ = score(run)
    assert today.pass_after_round == [0.0, 0.0, 0.0]
    assert today.mean_rounds_to_pass is None
    assert today.prompt_tokens_per_fix is None


def test_the_median_run_s_wall_time_is_not_moved_by_one_slowed_run() -> None:
    run = handcrafted_run()
    slowed = run.items[0].arms["today"]
    run.items[0].arms["today"] = slowed.model_copy(update={"wall_s": 500.0})
    today, _ = score(run)
    assert today.wall_s_per_task == (500 + 3 * 10) / 4
    assert today.median_wall_s == 10


GOLDEN_TABLE = """\
                               today         raw
tasks                              4           4
pass@1 (round 0)               25.0%       25.0%
pass after round 1             50.0%       25.0%
pass after round 2             75.0%       25.0%
mean rounds to pass             1.00        0.00
model calls                        9          10
prompt tokens                    900         600
prompt tokens per fix            300         600
completion tokens                180         200
cost (USD)                    0.0090      0.0100
wall time per task               10s         20s
wall time per fix                13s       1m20s
time per round                  4.4s        8.0s
median wall time a run           10s         20s
wall time                        40s       1m20s
fixes vs first arm +/-             -       +0 -2
sign test p (vs first)             -        0.50"""


def test_the_table_is_golden() -> None:
    run = handcrafted_run()
    assert table(run, score(run)) == GOLDEN_TABLE


def test_the_whole_report_fits_100_columns() -> None:
    run = handcrafted_run()
    text = render(run, score(run))
    assert GOLDEN_TABLE in text
    assert text.startswith(
        "fixloop bench: generate on DIR, model openai/scripted\n"
        "seed 0, limit 4, up to 2 repair rounds, through the loop\n"
        "2026-01-02T03:04:05+00:00 on Test CPU (2 cores)\n"
    )
    assert "raw: today + raw feedback\n" in text
    assert "  runs ended: ok 3, exhausted 1" in text
    assert "today: packet feedback," in text
    # Wrapped, not cut: its end says which levers are off.
    lines = text.split("today: ", 1)[1].split("\n  runs ended")[0].splitlines()
    assert " ".join(line.strip() for line in lines) == describe("today")
    assert len(lines) > 1
    assert describe("today").endswith("restart on stall, asking on at the baseline off")
    assert "t/3" in text
    assert max(len(line) for line in text.splitlines()) <= 100


def test_every_arm_at_once_still_fits_100_columns() -> None:
    run = handcrafted_run()
    names = [
        *["today", "raw", "small", "noop", "runtime", "focus", "cand3", "restart", "all"],
        "defaults",
    ]
    long_id = "HumanEval/123#const+1-17"
    run.items = [ItemResult(item_id=long_id, task_id="x", arms={n: arm(n, 1) for n in names})]
    run.config = run.config.model_copy(update={"arms": names})
    text = render(run, score(run))
    assert max(len(line) for line in text.splitlines()) <= 100
    assert [long_id, *["r1"] * 10] in [line.split() for line in text.splitlines()]


def test_a_long_suite_path_is_shortened_from_the_left() -> None:
    run = handcrafted_run()
    run.config = run.config.model_copy(update={"suite": "/tmp/" + "deep/" * 30 + "suite"})
    first = render(run, score(run)).splitlines()[0]
    assert len(first) <= 100
    assert first.startswith("fixloop bench: generate on …")
    assert "/deep/suite, model" in first


def test_a_long_ledger_path_keeps_its_file_name() -> None:
    run = handcrafted_run()
    run.ledger = "/work/" + "deep/" * 20 + "humaneval-repair-table-seed0.jsonl"
    run.reused_runs, run.revisions = 3, ["3842fb43cf19"]
    lines = render(run, score(run)).splitlines()
    runs = sum(len(item.arms) for item in run.items)
    assert f"3 of {runs} runs from earlier sittings" in lines
    [ledger] = [line for line in lines if line.startswith("ledger ")]
    assert len(ledger) <= 100
    assert ledger.startswith("ledger …")
    assert ledger.endswith("/humaneval-repair-table-seed0.jsonl")


def test_the_outcomes_say_which_round_passed() -> None:
    run = handcrafted_run()
    lines = render(run, score(run)).splitlines()
    assert any(line.split() == ["t/2", "r1", "-"] for line in lines)
    assert any(line.split() == ["t/4", "-", "-"] for line in lines)


def test_the_outcomes_end_with_the_tasks_per_minute() -> None:
    lines = render(handcrafted_run(), score(handcrafted_run())).splitlines()
    assert "4 tasks x 2 arms in 1m40s: 2.40 tasks per minute" in lines


def test_durations_read_like_a_clock() -> None:
    assert [duration(s) for s in (5, 65, 3725)] == ["5s", "1m05s", "1h02m"]


def test_the_terminal_plot_draws_a_bar_per_arm_and_round() -> None:
    run = handcrafted_run()
    plot = terminal_plot(score(run), rounds=2)
    lines = plot.splitlines()
    assert len(lines) == 1 + 3 * 2
    assert lines[1] == " r0 today |" + "█" * 10 + " " * 30 + "|  25.0%"
    assert lines[5] == " r2 today |" + "█" * 30 + " " * 10 + "|  75.0%"
    assert lines[6] == "    raw   |" + "█" * 10 + " " * 30 + "|  25.0%"


def test_the_png_is_written(tmp_path: Path) -> None:
    run = handcrafted_run()
    path = write_png(score(run), 2, tmp_path / "bench.png", "handcrafted")
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 5_000  # axes, lines and labels, not an empty canvas
