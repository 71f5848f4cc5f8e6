"""The choice among an iteration's verified candidates, driven with Pilot over fixed data: the
request arrives as the engine's gate posts it (`CandidatesAsked`), and the app resolves its
future with the person's Choice when the modal closes."""

from __future__ import annotations

from typing import Any

from textual.pilot import Pilot
from textual.widgets import Static, TextArea

from engine.edits.proposal import Edit
from engine.run.events import BaseEvent, CandidateVerified, RunFinished
from engine.run.gate import Choice
from tests.tui.test_snapshots import (
    CORE_MAP,
    app_in,
    candidates_request,
    showing,
    until_the_candidates,
)
from tui.app import FixloopApp
from tui.interactive_gate import CandidatesAsked, CandidatesRequest, EngineEvent
from tui.screens.candidates import CandidatesScreen
from tui.screens.confirm import ConfirmScreen
from tui.screens.editor import EditorScreen
from tui.screens.end import EndScreen

SMALL = (80, 24)


async def candidates_shown(
    pilot: Pilot[Any], request: CandidatesRequest, *before: BaseEvent
) -> CandidatesScreen:
    """A live run's main screen (and `before`, the iteration's events), then the request
    posted as the gate posts it; the modal."""
    app = pilot.app
    assert isinstance(app, FixloopApp)
    while not app.main.ready:
        await pilot.pause(0.01)
    await showing([*until_the_candidates(), *before])(pilot)
    app.running = True  # as after `begin`: the engine's side is the test's
    app.post_message(CandidatesAsked(request))
    while not isinstance(app.screen, CandidatesScreen):
        await pilot.pause(0.01)
    await pilot.pause()
    return app.screen


def chosen(request: CandidatesRequest) -> Choice:
    assert request.future.done(), "nothing was chosen"
    return request.future.result(timeout=0)


async def test_the_modal_opens_on_the_rankings_best() -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        screen = await candidates_shown(pilot, candidates_request())
        assert screen.candidate.k == 1
        assert "+    return counts.most_common(n)" in screen.diff_text()


async def test_down_then_enter_picks_the_second_candidate() -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        request = candidates_request()
        screen = await candidates_shown(pilot, request)
        await pilot.press("down")
        assert screen.candidate.k == 2
        assert "+    return sum(map(len, found)) / len(found)" in screen.diff_text()
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen is app.main
    assert chosen(request) == Choice(decision="pick", k=2, why="chosen by you", by="person")


async def test_a_candidates_number_selects_it() -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        request = candidates_request()
        screen = await candidates_shown(pilot, request)
        await pilot.press("3")
        assert screen.candidate.k == 3
        assert "+@pytest.mark.skip" in screen.diff_text()
        notice = str(screen.query_one("#notice").render())
        assert "doubtful: test file tests/test_core.py was modified" in notice
        await pilot.press("9", "up", "enter")  # there is no 9: 3 stays, then up to 2
        await pilot.pause()
    assert chosen(request).k == 2


async def test_x_asks_first_and_y_aborts_the_run() -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        request = candidates_request()
        await candidates_shown(pilot, request)
        await pilot.press("x")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        assert not request.future.done()
        await pilot.press("y")
        await pilot.pause()
        assert app.screen is app.main
    choice = chosen(request)
    assert (choice.decision, choice.by) == ("abort", "person")


async def test_x_then_a_fast_enter_keeps_the_choice_open() -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        request = candidates_request()
        screen = await candidates_shown(pilot, request)
        await pilot.press("x", "enter")
        await pilot.pause()
        assert app.screen is screen
        assert not request.future.done()


async def test_a_picks_the_selected_candidate() -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        request = candidates_request()
        await candidates_shown(pilot, request)
        await pilot.press("down", "a")
        await pilot.pause()
        assert app.screen is app.main
    assert chosen(request) == Choice(decision="pick", k=2, why="chosen by you", by="person")


async def test_ctrl_s_with_a_note_rejects_every_candidate_and_asks_again_with_it() -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        request = candidates_request()
        await candidates_shown(pilot, request)
        await pilot.press("n", *"none of these: keep the dict")
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert app.screen is app.main
    assert chosen(request) == Choice(
        decision="reject",
        why="rejected by you",
        comment="none of these: keep the dict",
        by="person",
    )


async def test_e_edits_the_selected_candidate_and_enter_commits_the_edit() -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        request = candidates_request()
        screen = await candidates_shown(pilot, request)
        await pilot.press("down", "e")
        while not isinstance(app.screen, EditorScreen):
            await pilot.pause(0.01)
        area = app.screen.query_one(TextArea)
        assert area.text == CORE_MAP  # candidate 2's version, to start from
        area.load_text(CORE_MAP.replace("return 0.0", "return 0.5"))
        await pilot.press("ctrl+s")
        while app.screen is not screen:
            await pilot.pause(0.01)
        assert "+        return 0.5" in screen.diff_text()
        assert "your edit" in str(screen.query_one("#notice").render())
        await pilot.press("up")  # another candidate shows its own diff, unedited
        assert "return 0.5" not in screen.diff_text()
        await pilot.press("down", "enter")
        await pilot.pause()
    choice = chosen(request)
    assert (choice.decision, choice.k, choice.why, choice.by) == (
        "edit",
        2,
        "edited by you",
        "person",
    )
    assert choice.proposal is not None
    assert choice.proposal.edits == [
        Edit(path="textstats/core.py", content=CORE_MAP.replace("return 0.0", "return 0.5"))
    ]


async def test_escape_leaves_the_editor_and_the_candidate_as_it_was() -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        request = candidates_request()
        screen = await candidates_shown(pilot, request)
        await pilot.press("e")
        while not isinstance(app.screen, EditorScreen):
            await pilot.pause(0.01)
        app.screen.query_one(TextArea).load_text("garbage")
        await pilot.press("escape")  # typed text is not dropped without asking
        while not isinstance(app.screen, ConfirmScreen):
            await pilot.pause(0.01)
        await pilot.press("y")
        while app.screen is not screen:
            await pilot.pause(0.01)
        await pilot.press("enter")
        await pilot.pause()
    assert chosen(request) == Choice(decision="pick", k=1, why="chosen by you", by="person")


async def test_n_writes_a_note_and_ctrl_g_picks_with_it() -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        request = candidates_request()
        screen = await candidates_shown(pilot, request)
        await pilot.press("down", "n")
        assert screen.query_one("#note", TextArea).has_focus
        await pilot.press(*"keep map", "enter", *"it reads better")  # enter is a new line here
        assert not request.future.done()
        await pilot.press("ctrl+g")
        await pilot.pause()
    assert chosen(request) == Choice(
        decision="pick", k=2, why="chosen by you", comment="keep map\nit reads better", by="person"
    )


async def test_escape_closes_the_note_and_it_goes_with_the_next_pick() -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        request = candidates_request()
        screen = await candidates_shown(pilot, request)
        await pilot.press("n", *"fine", "escape")
        assert app.screen is screen
        assert not screen.noting
        assert "ctrl+s" not in screen.active_bindings  # the note's keys left with the box
        assert "ctrl+g" not in screen.active_bindings
        assert "your note: fine" in str(screen.query_one("#notice").render())
        await pilot.press("enter")
        await pilot.pause()
    assert (chosen(request).k, chosen(request).comment) == (1, "fine")


async def test_the_modal_says_why_a_candidate_was_not_verified() -> None:
    app = app_in("dark")
    unusable = "unusable: your textstats/core.py leaves out top_words"
    dropped = CandidateVerified(ts=0.0, n=1, k=4, dropped=unusable)
    async with app.run_test(size=SMALL) as pilot:
        screen = await candidates_shown(pilot, candidates_request(), dropped)
        title = screen.query_one("#dialog").border_title
        assert title == "iteration 1/4 · 3 of 4 candidates verified: pick one"
        notice = str(screen.query_one("#notice", Static).render())
        assert f"candidate 4 dropped: {unusable}" in notice
        await pilot.press("2")  # said whichever one is selected
        assert f"candidate 4 dropped: {unusable}" in str(
            screen.query_one("#notice", Static).render()
        )


async def test_the_end_of_the_run_closes_an_open_choice() -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        await candidates_shown(pilot, candidates_request())
        ended = RunFinished(ts=0.0, status="aborted", reason="aborted by you", iterations=1)
        app.post_message(EngineEvent(ended))
        while not isinstance(app.screen, EndScreen):
            await pilot.pause(0.01)
        assert not any(isinstance(s, CandidatesScreen) for s in app.screen_stack)
