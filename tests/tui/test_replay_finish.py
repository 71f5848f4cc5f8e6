# ruff: noqa: F811
"""Replay finishes an undecided run: `s` opens the end modal's choice and carries it out as
the shell's accept/keep/discard does (the scripted model over HTTP, the real sandbox, real
git)."""

from __future__ import annotations

from pathlib import Path

import git

from engine.run.finish import finish_run
from engine.run.run_directory import list_runs
from tests.model_server import ScriptedModelServer, reply
from tests.projects import MEAN_FIX, TOP_FIX, answer

# api_key and project are test_app's fixtures, taken by name.
from tests.tui.test_app import (  # noqa: F401
    SIZE,
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
from tui.screens.confirm import ConfirmScreen
from tui.screens.end import EndScreen
from tui.screens.replay import ReplayScreen

FIXES = (
    reply(answer("use true division in mean_word_length", MEAN_FIX)),
    reply(answer("return n words, not n - 1", TOP_FIX)),
)


async def undecided_run(server: ScriptedModelServer, root: Path) -> FixloopApp:
    """A run that ended ok, its end modal closed with nothing chosen: undecided."""
    server.script(*FIXES)
    app = make_app(server, root, approve="auto")
    async with app.run_test(size=SIZE) as pilot:
        await end_of_run(pilot)
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, EndScreen), "the modal closed")
    assert [run.outcome for run in list_runs(root)] == ["undecided"]
    return app


def replaying(app: FixloopApp) -> FixloopApp:
    return FixloopApp(app.project, app.settings, browse=app.main.view.run_id)


@sandboxed
async def test_an_undecided_run_is_accepted_from_replay(
    model_server: ScriptedModelServer, project: Path
) -> None:
    ran = await undecided_run(model_server, project)
    app = replaying(ran)
    async with app.run_test(size=SIZE) as pilot:
        replay = await wait_screen(pilot, ReplayScreen)
        await wait_for(pilot, lambda: replay.undecided, "the run read as undecided")
        await pilot.press("s")
        end = await wait_screen(pilot, EndScreen)
        assert end.run_id == ran.main.view.run_id
        await pilot.press("a")
        await wait_for(pilot, lambda: end.finished is not None and not end.busy, "the git work")
        assert end.finished is not None
        assert end.finished.done
        await pilot.press("escape")
        await wait_for(pilot, lambda: not replay.undecided, "the run read as decided")
        assert replay.check_action("finish", ()) is False
    main = git.Repo(project).commit("main")
    assert f"fixloop run {ran.main.view.run_id}" in str(main.message)
    assert "most_common(n)" in (project / "textstats" / "core.py").read_text()
    assert [run.outcome for run in list_runs(project)] == ["accepted"]
    assert app.finished is None  # the app's own run (there is none) is not the one decided


@sandboxed
async def test_discard_from_replay_asks_first(
    model_server: ScriptedModelServer, project: Path
) -> None:
    ran = await undecided_run(model_server, project)
    app = replaying(ran)
    async with app.run_test(size=SIZE) as pilot:
        replay = await wait_screen(pilot, ReplayScreen)
        await wait_for(pilot, lambda: replay.undecided, "the run read as undecided")
        await pilot.press("s")
        await wait_screen(pilot, EndScreen)
        await pilot.press("x")
        await wait_screen(pilot, ConfirmScreen)
    assert [run.outcome for run in list_runs(project)] == ["undecided"]
    assert f"fixloop/{ran.main.view.run_id}" in [h.name for h in git.Repo(project).heads]


@sandboxed
async def test_a_run_decided_from_the_shell_while_replay_shows_it_is_not_decided_again(
    model_server: ScriptedModelServer, project: Path
) -> None:
    ran = await undecided_run(model_server, project)
    run_id = ran.main.view.run_id
    app = replaying(ran)
    async with app.run_test(size=SIZE) as pilot:
        replay = await wait_screen(pilot, ReplayScreen)
        await wait_for(pilot, lambda: replay.undecided, "the run read as undecided")
        await pilot.press("s")
        end = await wait_screen(pilot, EndScreen)
        assert finish_run(project, run_id, "keep", only_undecided=True).done  # the shell's keep
        await pilot.press("a")
        await wait_for(pilot, lambda: end.finished is not None and not end.busy, "the git work")
        assert end.finished is not None
        assert not end.finished.done
        assert text_of(end, "#result").startswith(f"accept refused: run {run_id} was kept")
    assert [run.outcome for run in list_runs(project)] == ["kept"]
    assert f"fixloop/{run_id}" in [h.name for h in git.Repo(project).heads]
