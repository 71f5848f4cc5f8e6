"""`bench --ledger`: runs measured in earlier sittings, read back under the same conditions
only; a line cut short by a crash is redone, any other bad line is a one-line error."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.errors import LedgerError
from bench.suite.arms import DEFAULTS_BEFORE_RECORDED, unrecorded_levers
from bench.suite.bench_run import ArmResult, BenchConfig, BenchEvent, BenchItem
from bench.suite.ledger import Ledger, LedgerLine, ledger_key, ledger_run
from bench.suite.mutants import seeded_mutants
from bench.suite.runner import BenchRunner
from bench.suite.tasks import BenchTask
from engine.run import start
from tests.engine.test_bench_sandbox import TASK

CONFIG = BenchConfig(suite="humaneval", mode="repair", model="local/m", arms=["today"])


def item(item_id: str) -> BenchItem:
    task = BenchTask(task_id=item_id.split("#")[0], prompt="", entry_point="f", test="")
    return BenchItem(item_id=item_id, task=task)


def run(arm: str = "today", status: str = "ok") -> ArmResult:
    passed = 0 if status == "ok" else None
    return ArmResult(
        arm=arm, status=status, rounds=[status], passed_round=passed, wall_s=1.0, run_dir="/x"
    )


def test_runs_written_in_one_sitting_are_read_in_the_next(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    first = Ledger(path, CONFIG)
    assert first.get("HumanEval/1", "today") is None
    first.record(item("HumanEval/1"), run())
    first.record(item("HumanEval/1"), run("raw", "stalled"))
    again = Ledger(path, CONFIG.model_copy(update={"limit": 40, "arms": ["raw"]}))
    assert again.get("HumanEval/1", "today") == run()
    assert again.get("HumanEval/1", "raw") == run("raw", "stalled")
    reused, revisions = again.provenance([("HumanEval/1", "raw"), ("HumanEval/2", "raw")])
    assert reused == 1
    assert revisions == ([first.revision] if first.revision else [])


def test_other_conditions_share_nothing(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    Ledger(path, CONFIG).record(item("HumanEval/1"), run())
    changes = (
        {"seed": 1},
        {"max_rounds": 3},
        {"model": "other"},
        {"mode": "generate"},
        {"test_layout": "table"},
    )
    for change in changes:
        other = Ledger(path, CONFIG.model_copy(update=change))
        assert other.get("HumanEval/1", "today") is None
        assert other.other_conditions == 1


def test_a_line_from_before_the_test_layout_measured_the_literal_one(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    Ledger(path, CONFIG).record(item("HumanEval/1"), run())
    path.write_text(path.read_text().replace(',"test_layout":"literal"', ""))
    assert "test_layout" not in path.read_text()
    assert Ledger(path, CONFIG).get("HumanEval/1", "today") == run()
    assert Ledger(path, CONFIG.model_copy(update={"test_layout": "table"})).other_conditions == 1


def test_a_later_line_wins_and_a_torn_last_line_is_redone(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    ledger = Ledger(path, CONFIG)
    ledger.record(item("HumanEval/1"), run(status="stalled"))
    ledger.record(item("HumanEval/1"), run())
    with path.open("a") as handle:
        handle.write('{"key": {"suite": "huma')  # the crash came mid-write
    again = Ledger(path, CONFIG)
    assert again.get("HumanEval/1", "today") == run()


def test_a_bad_line_before_the_last_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    path.write_text("garbage\n" + "{}\n")
    with pytest.raises(LedgerError, match=r"line 1 is not a bench ledger line$"):
        Ledger(path, CONFIG)


def test_a_ledger_in_a_missing_directory_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(LedgerError, match="its directory does not exist"):
        Ledger(tmp_path / "nowhere" / "ledger.jsonl", CONFIG)


def test_a_suite_directory_is_the_same_however_it_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "suite").mkdir()
    monkeypatch.chdir(tmp_path)
    relative = ledger_key(CONFIG.model_copy(update={"suite": "suite"}))
    absolute = ledger_key(CONFIG.model_copy(update={"suite": str(tmp_path / "suite")}))
    assert relative == absolute


def test_a_report_from_the_ledger_alone_takes_the_items_every_arm_measured(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ledger.jsonl"
    ledger = Ledger(path, CONFIG)
    for n in (1, 2, 3, 4, 10):
        ledger.record(item(f"HumanEval/{n}#flip@1:1"), run(status="ok" if n % 2 else "stalled"))
    ledger.record(item("HumanEval/1#flip@1:1"), run("raw"))
    both = ledger_run(CONFIG.model_copy(update={"arms": ["today", "raw"]}), Ledger(path, CONFIG))
    assert [i.item_id for i in both.items] == ["HumanEval/1#flip@1:1"]
    alone = ledger_run(CONFIG, Ledger(path, CONFIG))
    assert [i.task_id for i in alone.items] == [f"HumanEval/{n}" for n in (1, 2, 3, 4, 10)]
    assert (alone.reused_runs, alone.ledger) == (5, str(path))
    # --limit N: the first N in the seed's order, listed by natural id.
    two = ledger_run(CONFIG.model_copy(update={"limit": 2}), Ledger(path, CONFIG))
    assert len(two.items) == 2
    assert {i.item_id for i in two.items} <= {i.item_id for i in alone.items}
    other = CONFIG.model_copy(update={"seed": 1})
    assert ledger_run(other, Ledger(path, other)).items == []  # measured under seed 0 only


def test_a_line_records_its_arms_options_and_is_not_reused_when_they_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "ledger.jsonl"
    ledger = Ledger(path, CONFIG)
    ledger.record(item("HumanEval/1"), run())
    ledger.record(item("HumanEval/1"), run("defaults"))
    assert '"sample_after_noop":false' in path.read_text()
    # The loop's defaults change (2 answers per iteration for this model): `defaults` means
    # another loop now, `today` (every option set) the same one, and so does `code-noop`
    # (the defaults with one answer an iteration, pinned).
    monkeypatch.setattr(start, "default_candidates", lambda model: 2)
    again = Ledger(path, CONFIG)
    assert again.get("HumanEval/1", "today") == run()
    assert again.get("HumanEval/1", "defaults") is None
    assert again.get("HumanEval/1", "code-noop") == run("code-noop")
    assert again.other_levers == 0


def test_a_line_from_before_options_were_recorded_measured_the_defaults_of_then(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ledger.jsonl"
    key = ledger_key(CONFIG)
    lines = [
        LedgerLine(key=key, item_id="HumanEval/1", arm=run(arm)).model_dump_json(exclude={"levers"})
        for arm in ("defaults", "cand3", "gone")
    ]
    path.write_text("\n".join(lines) + "\n")
    ledger = Ledger(path, CONFIG)
    assert ledger.get("HumanEval/1", "cand3") == run("cand3")
    assert unrecorded_levers("cand3")["candidates"] == 3
    # The defaults then had every first answer greedy: what `greedy` names now.
    assert DEFAULTS_BEFORE_RECORDED["sample_after_noop"] is False
    assert ledger.get("HumanEval/1", "greedy") == run("greedy")
    assert ledger.get("HumanEval/1", "defaults") is None
    assert ledger.other_levers == 0  # `gone` (an arm since removed) is not read at all


def test_an_arm_reuses_the_runs_of_another_arm_that_had_its_options(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    Ledger(path, CONFIG).record(item("HumanEval/1"), run("sampled", "stalled"))
    Ledger(path, CONFIG).record(item("HumanEval/2"), run("code-noop", "ok"))
    ledger = Ledger(path, CONFIG)
    # Sampling after a no-op is a default: `no-values` measures what `sampled` measured ...
    assert ledger.get("HumanEval/1", "no-values") == run("no-values", "stalled")
    assert ledger.provenance([("HumanEval/1", "no-values")])[0] == 1
    # ... and so is `code_noop` since: `defaults` measures what `code-noop` did.
    assert ledger.get("HumanEval/1", "defaults") is None
    assert ledger.get("HumanEval/2", "defaults") == run("defaults", "ok")
    report = ledger_run(CONFIG.model_copy(update={"arms": ["defaults"]}), ledger)
    assert [(i.item_id, list(i.arms)) for i in report.items] == [("HumanEval/2", ["defaults"])]
    assert ledger.get("HumanEval/1", "greedy") is None


class NoSandbox:
    """Finding mutants the ledger already measured must not run anything."""

    def __getattr__(self, name: str) -> object:
        raise AssertionError(f"the sandbox was used ({name})")


class NoModel(NoSandbox):
    model = "local/m"


def ledger_runner(
    config: BenchConfig, path: Path, heard: list[BenchEvent] | None = None
) -> BenchRunner:
    """A bench over the ledger at `path` that can use neither a model nor a sandbox."""
    listener = heard.append if heard is not None else None
    ledger = Ledger(path, config)
    return BenchRunner(
        config, NoModel(), NoSandbox(), path.parent, listener=listener, ledger=ledger
    )


async def test_the_mutants_an_earlier_sitting_measured_are_not_screened_again(
    tmp_path: Path,
) -> None:
    mutant = seeded_mutants(TASK, 0)[1]  # not the first one: the ledger's, whichever it is
    config = CONFIG.model_copy(update={"suite": "t", "limit": 1})
    path = tmp_path / "ledger.jsonl"
    ledger = Ledger(path, config)
    ledger.record(BenchItem(item_id=f"t/affine#{mutant.id}", task=TASK, mutant=mutant), run())
    heard: list[BenchEvent] = []
    items, skipped = await ledger_runner(config, path, heard).items([TASK])
    assert [(i.item_id, i.mutant) for i in items] == [(f"t/affine#{mutant.id}", mutant)]
    assert skipped == []
    assert "the mutants of t/affine: from the ledger" in [getattr(e, "detail", "") for e in heard]
    # A mutant id this source no longer makes: screened again, never trusted blindly.
    ledger.record(BenchItem(item_id="t/affine#gone@1:1", task=TASK), run())
    assert ledger_runner(config, path).measured_mutants(TASK) == []


def test_a_line_recorded_before_an_option_existed_measured_the_loop_without_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ledger.jsonl"
    Ledger(path, CONFIG).record(item("HumanEval/1"), run("defaults"))
    # Written before `repeat_called` was an option: the loop then always repeated them.
    text = path.read_text().replace('"repeat_called":true,', "")
    assert "repeat_called" not in text
    path.write_text(text)
    ledger = Ledger(path, CONFIG)
    assert ledger.get("HumanEval/1", "defaults") == run("defaults")
    assert ledger.get("HumanEval/1", "lean") is None  # the loop without them: not measured
    assert ledger.other_levers == 0
