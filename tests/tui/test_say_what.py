"""The app says what happened in the words of what happened: an iteration whose test edits were
held back is named so in the history (not "no change"). Driven with Pilot on fixed events, as
the snapshots are."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from textual.widgets import Static

from engine.model.local import EMBEDDED_MODEL
from engine.project.settings import Settings
from engine.run.events import EditsApplied, IterationStarted, ReviewResolved
from tests.tui.test_snapshots import OUTCOME, app_in, finished_run, showing, started
from tui.app import FixloopApp
from tui.screens.end import EndScreen
from tui.screens.task import TaskScreen
from tui.widgets.header import RunHeader
from tui.widgets.history import HistoryPane
from tui.widgets.model_problem import ModelProblem

SIZE = (120, 36)
HELD_BACK = "the answer changed only test files, which are held back"


async def test_the_history_names_test_edits_held_back_instead_of_no_change() -> None:
    events = [
        *started(),
        IterationStarted(n=1, max_n=4),
        ReviewResolved(n=1, kind="proposal", decision="approve", by="person"),
        EditsApplied(
            n=1, files=[], held_back=["tests/test_core.py"], unchanged=True, because=HELD_BACK
        ),
    ]
    app = app_in("dark")
    async with app.run_test(size=SIZE) as pilot:
        await showing(events)(pilot)
        history = app.main.query_one(HistoryPane)
        assert str(history.table.get_cell("1", "status")) == "held back"
        levers = str(history.query_one("#levers", Static).render())
        assert "1 · test edits held back: tests/test_core.py" in levers


async def test_the_task_screen_names_the_embedded_model_when_none_is_configured(
    tmp_path: Path,
) -> None:
    app = FixloopApp(tmp_path, Settings(sandbox="gvisor"), task=None)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, TaskScreen)
        problem = screen.query_one(ModelProblem)
        while not problem.checked:
            await pilot.pause(0.05)
        await pilot.pause()
        header = screen.query_one(RunHeader)
        assert header.model == EMBEDDED_MODEL
        assert "local/qwen2.5-coder-1.5b" in str(header.render())
        await pilot.press("escape")


async def test_the_end_modal_says_a_long_run_in_minutes_and_seconds() -> None:
    outcome = replace(OUTCOME, duration_s=1348.0)
    app = app_in("dark")
    async with app.run_test(size=SIZE) as pilot:
        await showing(finished_run(), then=lambda: EndScreen(outcome))(pilot)
        summary = str(app.screen.query_one("#summary", Static).render())
        assert "1,696 tokens · $0.0003 · 22m28s" in summary
