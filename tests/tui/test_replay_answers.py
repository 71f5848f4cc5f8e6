# ruff: noqa: F811
"""Replay shows what the model said in an iteration with candidates: every candidate's answer,
one after another under its label (which of how many, chosen or not, its verdict), read from
the run directory the run wrote (the scripted model over HTTP, the real sandbox, real git)."""

from __future__ import annotations

from pathlib import Path

from tests.model_server import ScriptedModelServer, reply

# api_key and project are test_app's fixtures, taken by name.
from tests.tui.test_app import (  # noqa: F401
    RIGHT,
    SIZE,
    WRONG,
    api_key,
    end_of_run,
    make_app,
    project,
    sandboxed,
    text_of,
    wait_for,
    wait_screen,
)
from tui.app import FixloopApp
from tui.screens.candidates import CandidatesScreen
from tui.screens.replay import ReplayScreen
from tui.widgets.feedback import FeedbackPane


@sandboxed
async def test_replay_shows_each_candidates_answer_under_its_label(
    model_server: ScriptedModelServer, project: Path
) -> None:
    model_server.script(reply(RIGHT), reply(WRONG))
    ran = make_app(model_server, project, candidates=2)
    async with ran.run_test(size=SIZE) as pilot:
        picker = await wait_screen(pilot, CandidatesScreen)
        best = picker.request.best.k
        await pilot.press("enter")  # the ranking's best: the one that passes
        await end_of_run(pilot)

    app = FixloopApp(project, ran.settings, browse=ran.main.view.run_id)
    async with app.run_test(size=SIZE) as pilot:
        replay = await wait_screen(pilot, ReplayScreen)
        await wait_for(pilot, lambda: 1 in replay.view.iterations, "the run read")
        replay.select(1)
        await pilot.press("o")  # the model tab
        feedback = replay.query_one(FeedbackPane)
        await wait_for(
            pilot, lambda: "candidate" in text_of(feedback, "#model-log"), "the answers shown"
        )
        said = text_of(feedback, "#model-log")
    other = 3 - best
    assert f"candidate {best} of 2 · chosen · ok" in said
    assert f"candidate {other} of 2 · failing" in said
    assert "fix the mean and top_words" in said
    assert "fix the mean only" in said
    assert "(no answer for this iteration)" not in said
