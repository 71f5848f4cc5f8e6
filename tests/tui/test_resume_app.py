# ruff: noqa: F811
"""`fixloop-tui resume` opens the app on a stopped run: its history shown as it was, the run
going on in the mode it ran in (step mode's reviews shown), with the scripted model over HTTP,
the real sandbox and real git."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.errors import ResumeError
from engine.run.events import RunResumed
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
    wait_for,
    wait_screen,
)
from tui.interactive import resumed_app
from tui.screens.outage import OutageScreen
from tui.screens.quit import QuitScreen
from tui.screens.review import ReviewScreen

FIRST = reply(answer("use true division in mean_word_length", MEAN_FIX))
SECOND = reply(answer("return n words, not n - 1", TOP_FIX))


@sandboxed
async def test_a_step_mode_run_stopped_at_a_review_is_resumed_in_the_app_at_its_next_review(
    model_server: ScriptedModelServer, project: Path
) -> None:
    model_server.script(FIRST, SECOND)
    app = make_app(model_server, project, approve="step")
    async with app.run_test(size=SIZE) as pilot:
        first = await wait_screen(pilot, ReviewScreen)
        await pilot.press("a")
        await wait_screen(pilot, ReviewScreen, after=first)
        await pilot.press("q")
        await wait_screen(pilot, QuitScreen)
        await pilot.press("p")
        await wait_for(pilot, lambda: app.return_code is not None, "the app to exit")
    run_id = app.stopped
    assert run_id

    model_server.script(SECOND)  # the cut-off iteration is asked again
    resumed = resumed_app(project, run_id)
    async with resumed.run_test(size=SIZE) as pilot:
        review = await wait_screen(pilot, ReviewScreen)
        assert review.request.n == 2
        assert resumed.mode == "step"
        assert history_statuses(resumed)[:2] == ["failing", "failing"]  # its trail, shown
        await pilot.press("a")
        end = await end_of_run(pilot)
        assert end.outcome.status == "ok"
        assert resumed.main.view.run_id == run_id
    assert [type(e) for e in run_events(resumed)].count(RunResumed) == 1
    assert resumed.exit_status == 0


@sandboxed
async def test_a_run_whose_model_server_died_is_resumed_in_the_app_after_the_server_is_back(
    model_server: ScriptedModelServer, project: Path
) -> None:
    model_server.script(FIRST)
    app = make_app(model_server, project, approve="auto")
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: model_server.count == 1, "the first answer")
        port = model_server.port
        model_server.stop()  # the server dies: every request after it is refused
        await wait_screen(pilot, OutageScreen)
        await pilot.press("escape")  # left stopped, to resume from the shell
        await wait_for(pilot, lambda: not app.running, "the run to stop")
    run_id = app.stopped
    assert run_id
    assert "connection failed" in next(
        e.reason for e in reversed(run_events(app)) if e.type == "RunStopped"
    )

    back = ScriptedModelServer(port=port).start()  # the same address, serving again
    try:
        back.script(SECOND)
        resumed = resumed_app(project, run_id)
        async with resumed.run_test(size=SIZE) as pilot:
            end = await end_of_run(pilot)
            assert end.outcome.status == "ok"
            assert history_statuses(resumed)[-1] == "ok"
        assert back.count == 1
    finally:
        back.stop()


@sandboxed
async def test_a_run_that_ended_is_refused_before_the_app_opens(
    model_server: ScriptedModelServer, project: Path
) -> None:
    model_server.script(status(400))  # a request the model refuses: the run ends, error
    app = make_app(model_server, project, approve="auto")
    async with app.run_test(size=SIZE) as pilot:
        await end_of_run(pilot)
    with pytest.raises(ResumeError, match=r"^the run already ended \(error\): nothing to resume$"):
        resumed_app(project, app.main.view.run_id)
