# ruff: noqa: F811
"""A model outage in the app: the run stops resumable and the app offers to go on, with the
same server once it is back or with another one the person types; the run then ends ok in the
same app, its history kept."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Button, Input

from engine.run.events import RunResumed, RunStopped
from tests.model_server import ScriptedModelServer, reply, status
from tests.projects import MEAN_FIX, TOP_FIX, answer

# api_key and project are test_app's fixtures, taken by name.
from tests.tui.test_app import (  # noqa: F401
    SIZE,
    api_key,
    end_of_run,
    history_statuses,
    make_app,
    project,
    run_events,
    sandboxed,
    text_of,
    wait_for,
    wait_screen,
)
from tui.screens.outage import OutageScreen

DOWN = [status(500)] * 4  # the client's retry budget, every attempt refused
FIXES = (
    reply(answer("use true division in mean_word_length", MEAN_FIX)),
    reply(answer("return n words, not n - 1", TOP_FIX)),
)


@sandboxed
async def test_retry_now_goes_on_in_the_app_once_the_server_answers(
    model_server: ScriptedModelServer, project: Path
) -> None:
    model_server.script(*DOWN)
    app = make_app(model_server, project, approve="auto")
    async with app.run_test(size=SIZE) as pilot:
        outage = await wait_screen(pilot, OutageScreen)
        said = text_of(outage, "#said")
        assert "could not be reached" in said
        assert "HTTP 500" in said
        assert f"fixloop-tui resume {app.stopped}" in said
        assert not app.running
        model_server.script(*FIXES)  # the server is back
        await pilot.press("a")
        end = await end_of_run(pilot)
        assert end.outcome.status == "ok"
        assert history_statuses(app)[-1] == "ok"
    events = run_events(app)
    kinds = [type(event) for event in events]
    assert kinds.index(RunStopped) < kinds.index(RunResumed)
    assert model_server.count == 6
    assert app.exit_status == 0


@sandboxed
async def test_change_endpoint_resumes_with_the_server_the_person_types(
    model_server: ScriptedModelServer, project: Path
) -> None:
    other = ScriptedModelServer().start()
    try:
        other.script(*FIXES)
        model_server.script(*DOWN)
        app = make_app(model_server, project, approve="auto")
        async with app.run_test(size=SIZE) as pilot:
            outage = await wait_screen(pilot, OutageScreen)
            await pilot.press("e")
            typed = outage.query_one("#api-base", Input)
            await wait_for(pilot, lambda: typed.has_focus, "the server's field")
            assert outage.query_one("#retry", Button).label.plain == "retry with these [enter]"
            typed.value = other.base_url
            await pilot.press("enter")
            end = await end_of_run(pilot)
            assert end.outcome.status == "ok"
        resumed = [event for event in run_events(app) if isinstance(event, RunResumed)]
        assert [(e.model, e.endpoint_changed) for e in resumed] == [("openai/scripted", True)]
        assert model_server.count == 4
        assert other.count == 2
    finally:
        other.stop()


@sandboxed
async def test_leaving_it_stopped_keeps_the_run_resumable_from_the_shell(
    model_server: ScriptedModelServer, project: Path
) -> None:
    model_server.script(*DOWN)
    app = make_app(model_server, project, approve="auto")
    async with app.run_test(size=SIZE) as pilot:
        await wait_screen(pilot, OutageScreen)
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, OutageScreen), "the dialog gone")
        assert app.stopped
        assert not app.running
    assert isinstance(run_events(app)[-1], RunStopped)
    assert app.exit_status == 6
