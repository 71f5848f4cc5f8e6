"""The end of a run and the task screen, driven with Pilot over real git and real run
directories (no sandbox, no model): what the end modal shows before a choice, what it lets you
do after one, what `runs` says became of each run, and where the task screen refuses to start.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import git
import pytest
from textual.pilot import Pilot
from textual.widgets import Button, DataTable, TextArea
from textual.widgets._toast import Toast

from engine.project.paths import run_path
from engine.project.settings import Settings
from engine.run.events import RunFinished
from engine.run.finish import finish_run
from engine.run.run_directory import RunDirectory
from tests.engine.test_finish import ended_run, started
from tests.engine.test_workspace import isolated_git, make_project, root_of
from tests.tui.test_app import text_of, wait_for, wait_screen
from tests.tui.test_snapshots import app_in, no_tests_check, showing
from tui.app import FixloopApp
from tui.interactive_gate import EngineEvent
from tui.screens.confirm import ConfirmScreen
from tui.screens.end import EndScreen
from tui.screens.runs import RunsScreen
from tui.screens.task import TaskScreen

__all__ = ["isolated_git"]  # the autouse fixture: no git config from outside tmp_path

RUN = "20261203-100000-aaaa"
SMALL = (80, 24)
SKIP_REASON = "added @pytest.mark.skip at tests/test_stats.py:4"


@pytest.fixture
def repo(tmp_path: Path) -> git.Repo:
    return make_project(tmp_path / "project")


def settings() -> Settings:
    return Settings(model="openai/scripted", sandbox="gvisor", approve="step")


async def run_ended(
    pilot: Pilot[Any],
    branch: str,
    *,
    accepted_suspicious: list[str] | None = None,
    reason: str = "verified green on iteration 1",
) -> EndScreen:
    """The app told that run RUN started and ended (the events the engine would post)."""
    app = pilot.app
    assert isinstance(app, FixloopApp)
    app.post_message(EngineEvent(started(RUN)))
    app.post_message(
        EngineEvent(
            RunFinished(
                run_id=RUN,
                status="ok",
                reason=reason,
                iterations=1,
                branch=branch,
                accepted_suspicious=accepted_suspicious or [],
            )
        )
    )
    end = await wait_screen(pilot, EndScreen)
    if end.outcome.decidable:
        await wait_for(pilot, lambda: end.outcome.diff is not None, "the squash diff")
        await pilot.pause()
    return end


def has_branch(repo: git.Repo, name: str) -> bool:
    return name in [b.name for b in repo.branches]


def finish_recorded(root: Path) -> str | None:
    finish = RunDirectory(run_path(root, RUN)).finish()
    return finish.choice if finish else None


# -- the end modal --------------------------------------------------------------------------


async def test_the_end_modal_shows_the_whole_change_accept_squashes(repo: git.Repo) -> None:
    root = ended_run(repo, RUN)
    app = FixloopApp(root, settings(), autostart=False)
    async with app.run_test(size=SMALL) as pilot:
        end = await run_ended(pilot, f"fixloop/{RUN}")
        squash = text_of(end, "#squash .diff-lines")
        assert "diff --git a/pkg/stats.py b/pkg/stats.py" in squash
        assert "+    if not xs:" in squash
        assert end.query_one("#accept", Button).has_focus
        assert "status: ok\n" in text_of(end, "#summary") + "\n"


async def test_an_accepted_suspicious_pass_is_never_a_plain_ok(repo: git.Repo) -> None:
    root = ended_run(repo, RUN, accepted_suspicious=[SKIP_REASON])
    app = FixloopApp(root, settings(), autostart=False)
    async with app.run_test(size=SMALL) as pilot:
        end = await run_ended(pilot, f"fixloop/{RUN}", accepted_suspicious=[SKIP_REASON])
        assert "status: ok (suspicious pass accepted by you)" in text_of(end, "#summary")
        warning = text_of(end, "#suspicious")
        assert "you accepted a pass the verifier doubted" in warning
        assert SKIP_REASON in warning
        assert "dialog" in end.query_one("#dialog").classes
        assert "warning" in end.query_one("#dialog").classes


async def test_the_doubted_pass_reasons_are_said_once_in_the_end_modal(repo: git.Repo) -> None:
    root = ended_run(repo, RUN, accepted_suspicious=[SKIP_REASON])
    reason = f"suspicious pass accepted (accepted by you): {SKIP_REASON}"  # as the engine says
    app = FixloopApp(root, settings(), autostart=False)
    async with app.run_test(size=SMALL) as pilot:
        end = await run_ended(
            pilot, f"fixloop/{RUN}", accepted_suspicious=[SKIP_REASON], reason=reason
        )
        summary = text_of(end, "#summary")
        assert "suspicious pass accepted (accepted by you): why it was doubted, below" in summary
        assert (summary + text_of(end, "#suspicious")).count(SKIP_REASON) == 1


async def test_accept_says_what_it_did_in_the_modal_with_no_toast_over_it(repo: git.Repo) -> None:
    root = ended_run(repo, RUN)
    app = FixloopApp(root, settings(), autostart=False)
    async with app.run_test(size=SMALL, notifications=True) as pilot:  # toasts shown
        end = await run_ended(pilot, f"fixloop/{RUN}")
        await pilot.press("a")
        await wait_for(pilot, lambda: end.finished is not None and not end.busy, "accept")
        await pilot.pause(0.3)  # a toast is mounted after the message that raised it
        assert "accepted as" in text_of(end, "#result")
        assert not end.query(Toast)


async def test_after_keep_the_other_choices_are_disabled_and_say_so(repo: git.Repo) -> None:
    root = ended_run(repo, RUN)
    head = repo.head.commit.hexsha
    app = FixloopApp(root, settings(), autostart=False)
    async with app.run_test(size=SMALL) as pilot:
        end = await run_ended(pilot, f"fixloop/{RUN}")
        await pilot.press("k")
        await wait_for(pilot, lambda: end.finished is not None and not end.busy, "keep")
        for name in ("accept", "keep", "discard"):
            assert end.query_one(f"#{name}", Button).disabled
        result = text_of(end, "#result")
        assert f"kept on branch fixloop/{RUN}" in result
        assert "nothing more to decide" in result
        await pilot.press("a")
        await pilot.pause()
        assert "accept no longer applies" in text_of(end, "#result")
        await pilot.press("x")
        await pilot.pause()
        assert app.screen is end  # no confirmation asked: there is nothing to discard now
        assert "discard no longer applies" in text_of(end, "#result")
        assert end.finished is not None
        assert end.finished.choice == "keep"
    assert repo.head.commit.hexsha == head
    assert has_branch(repo, f"fixloop/{RUN}")
    assert finish_recorded(root) == "keep"


async def test_discard_asks_first_and_enter_or_escape_keeps_the_branch(repo: git.Repo) -> None:
    root = ended_run(repo, RUN)
    app = FixloopApp(root, settings(), autostart=False)
    async with app.run_test(size=SMALL) as pilot:
        end = await run_ended(pilot, f"fixloop/{RUN}")
        for no in ("enter", "escape"):
            await pilot.press("x")
            confirm = await wait_screen(pilot, ConfirmScreen)
            assert f"delete branch fixloop/{RUN}" in text_of(confirm, "#question")
            await pilot.press(no)
            await wait_screen(pilot, EndScreen)
            assert end.finished is None
            assert not end.busy
            assert not end.query_one("#discard", Button).disabled
        assert has_branch(repo, f"fixloop/{RUN}")
        assert finish_recorded(root) is None
        await pilot.press("x")
        await wait_screen(pilot, ConfirmScreen)
        await pilot.press("y")
        await wait_for(pilot, lambda: end.finished is not None and end.finished.done, "discard")
        assert "discarded" in text_of(end, "#result")
    assert not has_branch(repo, f"fixloop/{RUN}")
    assert finish_recorded(root) == "discard"


async def test_a_run_that_changed_nothing_offers_no_choice(repo: git.Repo) -> None:
    root = root_of(repo)
    app = FixloopApp(root, settings(), autostart=False)
    async with app.run_test(size=SMALL) as pilot:
        end = await run_ended(pilot, "")
        assert "nothing changed: no branch was kept" in text_of(end, "#summary")
        assert not end.query("#accept")
        assert not end.query("#squash")
        await pilot.press("a", "k", "x")
        await pilot.pause()
        assert app.screen is end
        assert end.finished is None
    assert finish_recorded(root) is None


# -- what became of each run --------------------------------------------------------------------


async def test_runs_shows_accepted_kept_discarded_and_accepted_suspicious(repo: git.Repo) -> None:
    root = ended_run(repo, "20261203-100000-aaaa")
    ended_run(repo, "20261203-100001-bbbb", accepted_suspicious=[SKIP_REASON])
    ended_run(repo, "20261203-100002-cccc")
    ended_run(repo, "20261203-100003-dddd")
    finish_run(root, "20261203-100000-aaaa", "accept")
    finish_run(root, "20261203-100001-bbbb", "keep")
    finish_run(root, "20261203-100002-cccc", "discard")
    app = FixloopApp(root, settings(), autostart=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        await pilot.press("r")
        runs = await wait_screen(pilot, RunsScreen)
        table = runs.query_one(DataTable)
        await wait_for(pilot, lambda: table.row_count == 4, "the runs")
        rows = {
            str(table.get_row_at(i)[0]): (str(table.get_row_at(i)[2]), str(table.get_row_at(i)[3]))
            for i in range(table.row_count)
        }
    assert rows == {
        "20261203-100000-aaaa": ("ok", "accepted"),
        "20261203-100001-bbbb": ("ok (accepted suspicious)", "kept"),
        "20261203-100002-cccc": ("ok", "discarded"),
        "20261203-100003-dddd": ("ok", "undecided"),
    }


# -- the task screen ------------------------------------------------------------------------


async def test_the_task_takes_several_lines_and_ctrl_s_starts_it() -> None:
    app = app_in("dark")
    chosen: list[str | None] = []
    async with app.run_test(size=SMALL) as pilot:
        screen = TaskScreen(project="/home/you/textstats", model="m", sandbox="gvisor")
        await app.push_screen(screen, chosen.append)
        await pilot.pause()
        box = screen.query_one("#task", TextArea)
        box.clear()
        await pilot.press(*"Fix mean", "enter", *"and keep the API")
        assert app.screen is screen  # enter is a new line, not a start
        assert box.text == "Fix mean\nand keep the API"
        await pilot.press("ctrl+s")
        await pilot.pause()
    assert chosen == ["Fix mean\nand keep the API"]


async def test_escape_keeps_the_task_and_says_so_in_the_task_box_not_a_toast() -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL, notifications=True) as pilot:  # toasts shown
        screen = TaskScreen(project="/home/you/textstats", model="m", sandbox="gvisor")
        await app.push_screen(screen)
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is screen
        box = screen.query_one("#task-box")
        assert "your task is kept" in str(box.border_subtitle)
        assert not screen.query(Toast)
        await pilot.press("x")  # typing on: the box names its keys again
        await pilot.pause()
        assert "ctrl+s: start the run" in str(box.border_subtitle)
        assert "kept" not in str(box.border_subtitle)


async def refused_task_screen(pilot: Pilot[Any]) -> TaskScreen:
    screen = await wait_screen(pilot, TaskScreen)
    await wait_for(pilot, lambda: screen.refusal is not None, "the refusal")
    return screen


async def test_a_directory_that_is_not_a_git_repository_is_refused_at_once(
    tmp_path: Path,
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    app = FixloopApp(plain, settings())
    async with app.run_test(size=SMALL) as pilot:
        screen = await refused_task_screen(pilot)
        state = text_of(screen, "#state-text")
        assert f"{plain} is not a git repository" in state
        assert "checking the project in the sandbox" not in state
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert app.screen is screen
        assert not app.running


async def test_a_subdirectory_of_a_repository_names_the_top_to_use(repo: git.Repo) -> None:
    root = root_of(repo)
    app = FixloopApp(root / "tests", settings())
    async with app.run_test(size=SMALL) as pilot:
        screen = await refused_task_screen(pilot)
        state = text_of(screen, "#state-text")
        assert "is not the top level of its git work tree" in state
        assert f"point fixloop at {root.resolve()}" in state
        assert "not installed" not in state  # the old, wrong env-failure diagnosis
        assert "cannot start" in str(screen.query_one("#task-box").border_subtitle)
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert app.screen is screen
        await pilot.press("ctrl+n")  # spec mode needs the top of a repository too
        await pilot.pause()
        assert app.screen is screen
        assert not app.running


async def test_no_tests_at_the_baseline_refuses_a_repair_but_ctrl_n_opens_spec_mode() -> None:
    from tui.screens.spec_form import SpecFormScreen

    app = app_in("dark")
    chosen: list[str | None] = []
    async with app.run_test(size=SMALL) as pilot:
        await showing([])(pilot)
        screen = TaskScreen(project="/home/you/calc", model="m", sandbox="gvisor")
        await app.push_screen(screen, chosen.append)
        screen.show_check(no_tests_check())
        await pilot.pause()
        state = text_of(screen, "#state-text")
        assert "no tests at the baseline: the test command ran none" in state
        assert "write a test that shows the bug, or build from a spec with ctrl+n" in state
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert app.screen is screen
        assert chosen == []
        await pilot.press("ctrl+n")
        await wait_screen(pilot, SpecFormScreen)
    assert chosen == []


async def test_tests_written_since_lift_the_refusal() -> None:
    from tests.tui.test_snapshots import check_result

    app = app_in("dark")
    chosen: list[str | None] = []
    async with app.run_test(size=SMALL) as pilot:
        screen = TaskScreen(project="/home/you/calc", model="m", sandbox="gvisor")
        await app.push_screen(screen, chosen.append)
        screen.show_check(no_tests_check())
        assert screen.refusal is not None
        screen.show_check(check_result())  # watch mode: a save, verified again
        assert screen.refusal is None
        await pilot.press("ctrl+s")
        await pilot.pause()
    assert chosen == ["Make the failing tests pass."]
