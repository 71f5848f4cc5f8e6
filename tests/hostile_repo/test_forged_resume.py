# ruff: noqa: F811
"""A repository that commits its own `.fixloop/runs/<run>/` (test_forged_runs' `forged`): the
app opened by `resume`, and replay's finish, never obey a run record fixloop did not seal for
this user."""

from __future__ import annotations

from pathlib import Path

import git

from engine.project.paths import run_path
from engine.project.settings import Settings
from tests.hostile_repo.test_forged_runs import HOSTILE, RUN, fixloop, forged  # noqa: F401


def test_resume_opens_no_app_on_a_run_record_the_repository_wrote(
    forged: Path, tmp_path: Path
) -> None:
    # The app takes a resumed run's settings from its record: only from one sealed for you.
    done = fixloop(tmp_path / "home", "resume", RUN, str(forged))
    assert done.returncode == 2
    assert done.stderr.startswith(f"fixloop-tui: error: {run_path(forged, RUN) / 'run.json'} was")
    assert len(done.stderr.strip().splitlines()) == 1
    assert done.stdout == ""  # no app was drawn


async def test_replay_offers_no_finish_for_a_run_the_repository_wrote(forged: Path) -> None:
    from tui.app import FixloopApp
    from tui.screens.replay import ReplayScreen

    app = FixloopApp(forged, Settings(model="openai/x"), browse=RUN)
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(200):
            await pilot.pause(0.05)
            screen = app.screen
            if isinstance(screen, ReplayScreen) and screen.view.run_id == RUN:
                break
        else:
            raise AssertionError("the replay did not open")
        await pilot.pause(0.5)
        assert screen.undecided is False
        assert screen.check_action("finish", ()) is False
        await pilot.press("s")
        await pilot.pause(0.2)
        assert isinstance(app.screen, ReplayScreen)  # no end modal
    assert git.Repo(forged).head.commit.message.strip() == "a run"
    assert (forged / "calc.py").read_text() != HOSTILE
