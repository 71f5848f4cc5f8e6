"""The loop says what happened: answers whose test edits were all held back are named so in
the iteration's record, the next prompt, the stall's reason and report.md, and a resumed run
remembers them. The scripted model and gate of test_loop, over a real git repository."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import git
import pytest

from engine.run.gate import PolicyGate, Review
from engine.run.guards import Guards, Spend
from engine.run.resume import resume_state
from engine.run.run_directory import RunDirectory
from tests.engine.test_loop import (
    CHEAT,
    FIXED,
    ScriptedGate,
    ScriptedModel,
    answer,
    events,
    run_loop,
)

pytestmark = pytest.mark.usefixtures("git_as_tester")

TEST_FILE = "tests/test_app.py"
HELD_BACK_STALL = "2 answers in a row changed only test files, which are held back"


def approving() -> ScriptedGate:
    """The person approves each proposal without letting its test edits through."""
    return ScriptedGate(reviews=[Review(decision="approve", by="person")] * 4)


async def test_an_answer_of_only_test_edits_is_recorded_as_held_back(tmp_path: Path) -> None:
    model = ScriptedModel(answer((TEST_FILE, CHEAT)), answer((TEST_FILE, CHEAT)))
    result = await run_loop(tmp_path, model, gate=approving(), restart_on_stall=False)
    assert [(r.status, r.summary) for r in result.iterations] == [
        ("no_change", f"test edits held back: {TEST_FILE}")
    ] * 2


async def test_the_next_prompt_says_the_test_edits_were_held_back(tmp_path: Path) -> None:
    model = ScriptedModel(answer((TEST_FILE, CHEAT)), answer((TEST_FILE, CHEAT)))
    await run_loop(tmp_path, model, gate=approving(), restart_on_stall=False)
    assert f"Your edits to {TEST_FILE} were NOT applied" in model.prompt(2)
    assert "It changed nothing else, so nothing was applied" in model.prompt(2)


async def test_a_stall_of_held_back_test_edits_says_so_in_its_reason(tmp_path: Path) -> None:
    model = ScriptedModel(answer((TEST_FILE, CHEAT)), answer((TEST_FILE, CHEAT)))
    result = await run_loop(tmp_path, model, gate=approving(), restart_on_stall=False)
    assert (result.status.value, result.reason) == ("stalled", HELD_BACK_STALL)


async def test_auto_mode_stalls_on_held_back_test_edits_naming_the_cause(tmp_path: Path) -> None:
    model = ScriptedModel(answer((TEST_FILE, CHEAT)), answer((TEST_FILE, CHEAT)))
    result = await run_loop(tmp_path, model, gate=PolicyGate(), restart_on_stall=False)
    assert result.reason == HELD_BACK_STALL


async def test_the_report_names_held_back_test_edits_and_what_to_do(tmp_path: Path) -> None:
    model = ScriptedModel(answer((TEST_FILE, CHEAT)), answer((TEST_FILE, CHEAT)))
    result = await run_loop(tmp_path, model, gate=approving(), restart_on_stall=False)
    assert result.report is not None
    report = await asyncio.to_thread(Path(result.report).read_text)
    assert f"**Ended:** `stalled` — {HELD_BACK_STALL}" in report
    assert "The model kept changing the tests, which are pinned" in report
    assert f"Verifier: test edits held back: {TEST_FILE}" in report


async def test_the_report_says_the_time_as_a_person_reads_it(tmp_path: Path) -> None:
    model = ScriptedModel(answer((TEST_FILE, CHEAT)), answer((TEST_FILE, CHEAT)))
    result = await run_loop(tmp_path, model, gate=approving(), restart_on_stall=False)
    assert result.report is not None
    report = await asyncio.to_thread(Path(result.report).read_text)
    assert re.search(r"\*\*time:\*\* \d+\.\ds$", report, re.M)


async def test_a_resumed_run_counts_held_back_answers_toward_the_stall(tmp_path: Path) -> None:
    model = ScriptedModel(answer((TEST_FILE, CHEAT)), answer((TEST_FILE, CHEAT)))
    result = await run_loop(tmp_path, model, gate=approving(), restart_on_stall=False)
    events = RunDirectory(Path(result.run_dir)).events()
    first_only = [e for e in events if getattr(e, "n", 0) <= 1 and e.type != "RunFinished"]
    state = resume_state(first_only)
    assert state.next_n == 2
    guards = Guards(no_progress_limit=9)
    state.prime(guards, Spend())
    trip = guards.after_no_change(1, held_back=True)
    assert trip is not None
    assert trip.detail == HELD_BACK_STALL


async def test_a_commit_without_explanation_names_what_it_changed(tmp_path: Path) -> None:
    silent = json.dumps({"explanation": "", "edits": [{"path": "app.py", "content": FIXED}]})
    result = await run_loop(tmp_path, ScriptedModel(silent))
    [committed] = [e for e in events(result) if e["type"] == "Committed"]
    assert committed["message"] == "fixloop[iter 1/4]: edit app.py"
    tip = git.Repo(Path(result.run_dir).parents[2]).commit(result.branch)
    assert tip.message.strip() == "fixloop[iter 1/4]: edit app.py"
