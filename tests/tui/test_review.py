"""The person's decisions at the review and on quitting, driven with Pilot over fixed data.

A review arrives as the engine sends it (`ReviewAsked`, its request's future resolved by the
app when the modal closes); where the engine's side matters (a stop), a thread with its own
event loop awaits the app's real InteractiveGate, as the engine does in the app.
"""

from __future__ import annotations

from typing import Any

import pytest
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets import Button, Footer, TextArea
from textual.widgets._footer import FooterKey

from engine.run.events import ReviewResolved, RunFinished
from engine.run.gate import Review
from engine.run.guards import RunInterrupted
from tests.tui.test_app import wait_screen
from tests.tui.test_gate import PROPOSAL, WAIT_S, on_engine_thread
from tests.tui.test_snapshots import (
    RUN_ID,
    app_in,
    replay_screen,
    review_request,
    settle,
    showing,
    until_second_review,
)
from tui.app import FixloopApp
from tui.interactive_gate import EngineEvent, ProposalReviewRequest, ReviewAsked
from tui.screens.editor import EditorScreen
from tui.screens.end import EndScreen
from tui.screens.quit import QuitScreen
from tui.screens.review import ReviewScreen
from tui.widgets.header import RunHeader
from tui.widgets.history import HistoryPane

SMALL = (80, 24)


async def a_run_at_review(pilot: Pilot[Any]) -> FixloopApp:
    """The main screen of a live run (fixed events), waiting for the review of iteration 2."""
    app = pilot.app
    assert isinstance(app, FixloopApp)
    await showing(until_second_review())(pilot)
    app.running = True  # as after `begin`: the engine's side is the test's
    return app


async def review_shown(pilot: Pilot[Any], request: ProposalReviewRequest) -> ReviewScreen:
    """The request posted as the engine's gate posts it; the modal it opens."""
    app = pilot.app
    app.post_message(ReviewAsked(request))
    while not isinstance(app.screen, ReviewScreen):
        await pilot.pause(0.01)
    await pilot.pause()
    return app.screen


def decided(request: ProposalReviewRequest) -> Review:
    assert request.future.done(), "the review was not decided"
    return request.future.result(timeout=0)


# -- a note to the model ----------------------------------------------------------------------


async def test_n_opens_a_note_and_ctrl_s_rejects_the_proposal_with_it() -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        await a_run_at_review(pilot)
        request = review_request()
        review = await review_shown(pilot, request)
        await pilot.press("n")
        note = review.query_one("#note", TextArea)
        assert note.has_focus
        await pilot.press(*"use a Counter, not a dict", "enter", *"and keep the order")
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert app.screen is app.main
    assert decided(request) == Review(
        decision="reject",
        comment="use a Counter, not a dict\nand keep the order",
        note="rejected by you",
        by="person",
    )


async def test_the_reject_button_sends_the_note_too() -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        await a_run_at_review(pilot)
        request = review_request()
        review = await review_shown(pilot, request)
        await pilot.click("#open_note")
        await pilot.press(*"wrong file")
        assert review.noting
        await pilot.click("#reject")
        await pilot.pause()
        assert app.screen is app.main
    assert (decided(request).decision, decided(request).comment) == ("reject", "wrong file")


async def test_ctrl_g_approves_with_the_note_and_keeps_test_edits_allowed() -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        await a_run_at_review(pilot)
        request = review_request()
        await review_shown(pilot, request)
        await pilot.press("t", "n", *"good, but also handle an empty text", "ctrl+g")
        await pilot.pause()
    review = decided(request)
    assert (review.decision, review.comment) == ("approve", "good, but also handle an empty text")
    assert review.allow_test_edits
    assert review.by == "person"


async def test_an_edit_approved_with_a_note_keeps_both() -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        await a_run_at_review(pilot)
        request = review_request()
        review = await review_shown(pilot, request)
        await pilot.press("e")
        while not isinstance(app.screen, EditorScreen):
            await pilot.pause(0.01)
        await pilot.press("ctrl+s")
        while app.screen is not review:
            await pilot.pause(0.01)
        await pilot.press("n", *"I kept your version", "ctrl+g")
        await pilot.pause()
    decision = decided(request)
    assert (decision.decision, decision.note, decision.comment) == (
        "edit",
        "edited by you",
        "I kept your version",
    )
    assert decision.proposal is not None


async def test_escape_closes_the_note_without_deciding_and_the_note_waits_for_n() -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        await a_run_at_review(pilot)
        request = review_request()
        review = await review_shown(pilot, request)
        await pilot.press("n", *"not yet", "escape")
        assert app.screen is review
        assert not review.noting
        assert review.query_one("#approve", Button).has_focus
        assert not request.future.done()
        assert "ctrl+s" not in review.active_bindings  # the note's keys left with the box
        await pilot.press("n")
        assert review.note_text() == "not yet"
        await pilot.press("escape", "a")
        await pilot.pause()
    assert decided(request) == Review(decision="approve", by="person")


# -- seeing the run before deciding -----------------------------------------------------------


async def test_v_hides_the_review_to_show_the_panes_and_brings_it_back_pending() -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        await a_run_at_review(pilot)
        request = review_request()
        review = await review_shown(pilot, request)
        await pilot.press("n", *"maybe", "escape")
        await pilot.press("v")
        await pilot.pause()
        assert app.screen is app.main
        assert not request.future.done()
        assert "v brings it back" in str(app.main.query_one(RunHeader).render())
        assert "v" in app.main.active_bindings
        await pilot.press("up")  # the panes are the person's: look at iteration 1
        await settle(pilot)
        assert app.main.selected == 1
        await pilot.press("v")
        await pilot.pause()
        assert app.screen is review  # the same review: its note is still there
        assert "v" not in app.main.active_bindings
        await pilot.press("n")
        assert review.note_text() == "maybe"
        await pilot.press("ctrl+s")
        await pilot.pause()
    assert (decided(request).decision, decided(request).comment) == ("reject", "maybe")


async def test_the_review_shows_the_last_checks_test_counts() -> None:
    from tui.interactive_gate import LastCheck

    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        await a_run_at_review(pilot)
        request = review_request()
        request.last_check = LastCheck(1, {"passed": 4, "failed": 1})
        review = await review_shown(pilot, request)
        notice = str(review.query_one("#notice").render())
        assert "last check: 4 passed, 1 failed (iteration 1)" in notice


async def test_a_rejected_proposal_and_its_note_show_in_the_history_and_feedback() -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        await a_run_at_review(pilot)
        note = "use a Counter, it keeps the order of first use\nand nothing else"
        app.main.apply(
            ReviewResolved(
                ts=0.0,
                n=2,
                kind="proposal",
                decision="reject",
                note="rejected by you",
                comment=note,
                by="person",
            )
        )
        await settle(pilot)
        table = app.main.query_one(HistoryPane).table
        row = [str(cell) for cell in table.get_row("2")]
        assert row[1] == "rejected"
        assert row[-1] == "“use a Counter, it keeps the o…”"
        assert [str(cell) for cell in table.get_row("1")][-1] == ""
        packet = str(app.main.query_one("#packet-text").render())
        assert "rejected by you: nothing was applied" in packet
        assert "you told the model: use a Counter, it keeps the order" in packet


# -- quitting ---------------------------------------------------------------------------------


async def test_q_in_the_review_opens_the_quit_dialog_and_escape_goes_back() -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        await a_run_at_review(pilot)
        request = review_request()
        review = await review_shown(pilot, request)
        await pilot.press("q")
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, QuitScreen)
        assert dialog.run_id == RUN_ID
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is review
        assert not request.future.done()
        assert app.return_code is None


async def test_stop_in_the_quit_dialog_raises_run_stopped_where_the_engine_awaits() -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        await a_run_at_review(pilot)
        engine = on_engine_thread(lambda: app.gate.review(2, PROPOSAL, []))
        while not isinstance(app.screen, ReviewScreen):
            await pilot.pause(0.01)
        await pilot.press("q")
        await pilot.pause()
        assert isinstance(app.screen, QuitScreen)
        await pilot.press("p")
        await pilot.pause()
        with pytest.raises(RunInterrupted) as stopped:
            engine.result(timeout=WAIT_S)
        assert stopped.value.reason == "stopped by you"
        app.post_message(FixloopApp.RunOver(stopped=True))  # what the engine's thread posts
        while app.return_code is None:
            await pilot.pause(0.01)
    assert app.stopped == RUN_ID
    assert app.return_value == 130


async def test_abort_in_the_quit_dialog_ends_the_run_at_the_review() -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        await a_run_at_review(pilot)
        engine = on_engine_thread(lambda: app.gate.review(2, PROPOSAL, []))
        while not isinstance(app.screen, ReviewScreen):
            await pilot.pause(0.01)
        await pilot.press("q", "x")
        review = engine.result(timeout=WAIT_S)
        assert (review.decision, review.note) == ("abort", "aborted by you")
        assert app.stopped == ""


async def test_a_run_still_starting_cannot_be_stopped_only_aborted() -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        app.running = True
        await pilot.press("q")
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, QuitScreen)
        assert not dialog.query("#stop")
        await pilot.press("p")
        await pilot.pause()
        assert app.screen is dialog
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is app.main


async def test_q_in_the_suspicious_pass_modal_opens_the_quit_dialog() -> None:
    from tests.tui.test_snapshots import pass_request
    from tui.interactive_gate import PassReviewAsked
    from tui.screens.suspicious import SuspiciousPassScreen

    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        await a_run_at_review(pilot)
        request = pass_request()
        app.post_message(PassReviewAsked(request))
        while not isinstance(app.screen, SuspiciousPassScreen):
            await pilot.pause(0.01)
        assert "q" in app.screen.active_bindings  # its footer lists it
        await pilot.press("q")
        await pilot.pause()
        assert isinstance(app.screen, QuitScreen)
        assert not request.future.done()


async def test_n_in_the_suspicious_pass_modal_rejects_with_a_note_and_q_is_typed() -> None:
    from engine.run.gate import PassReview
    from tests.tui.test_snapshots import pass_request
    from tui.interactive_gate import PassReviewAsked
    from tui.screens.suspicious import SuspiciousPassScreen

    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        await a_run_at_review(pilot)
        request = pass_request()
        app.post_message(PassReviewAsked(request))
        while not isinstance(app.screen, SuspiciousPassScreen):
            await pilot.pause(0.01)
        await pilot.press("n")
        assert app.screen.query_one("#note", TextArea).has_focus
        await pilot.press(*"no skips: fix quietly", "enter", *"the code")
        assert isinstance(app.screen, SuspiciousPassScreen)  # a, r, n and q were typed
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert app.screen is app.main
    assert request.future.result(timeout=0) == PassReview(
        accept=False,
        note="rejected by you",
        comment="no skips: fix quietly\nthe code",
        keep_repairing=True,
        by="person",
    )


async def test_ctrl_q_in_the_editor_opens_the_quit_dialog_and_q_is_typed() -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        await a_run_at_review(pilot)
        await review_shown(pilot, review_request())
        await pilot.press("e")
        while not isinstance(app.screen, EditorScreen):
            await pilot.pause(0.01)
        editor = app.screen
        area = editor.query_one(TextArea)
        before = area.text
        await pilot.press("q")
        assert app.screen is editor
        assert area.text == "q" + before
        await pilot.press("ctrl+q")
        await pilot.pause()
        assert isinstance(app.screen, QuitScreen)


async def test_at_80x24_a_long_explanation_leaves_every_button_in_sight() -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        await a_run_at_review(pilot)
        request = review_request()
        said = "The tests expect true division, and top_words must return n words. " * 6
        request.proposal = request.proposal.model_copy(update={"explanation": said})
        review = await review_shown(pilot, request)
        inside = review.query_one("#dialog").content_region
        for button in ("#approve", "#open_note", "#edit", "#abort"):
            assert inside.contains_region(review.query_one(button).region), button
        await pilot.press("n")
        await pilot.pause()
        for button in ("#reject", "#approve_with_note", "#close_note"):
            assert inside.contains_region(review.query_one(button).region), button
        assert review.query_one("#note").region.height >= 3


async def test_a_review_put_aside_goes_away_when_the_run_ends() -> None:
    from engine.run.events import RunFinished
    from tui.interactive_gate import EngineEvent
    from tui.screens.end import EndScreen

    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        await a_run_at_review(pilot)
        request = review_request()
        await review_shown(pilot, request)
        await pilot.press("v")
        await pilot.pause()
        assert "v" in app.main.active_bindings
        ended = RunFinished(ts=0.0, status="aborted", reason="aborted by you", iterations=2)
        app.post_message(EngineEvent(ended))
        while not isinstance(app.screen, EndScreen):
            await pilot.pause(0.01)
        assert "v" not in app.main.active_bindings
        assert "waits" not in str(app.main.query_one(RunHeader).render())
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is app.main
        await pilot.press("v")  # nothing to bring back
        await pilot.pause()
        assert app.screen is app.main


async def test_q_after_the_run_ended_quits_without_asking_once_its_thread_is_done() -> None:
    """The end of a run is shown before its thread has closed the sandbox (a warm pool takes
    seconds on a loaded machine): q then waits for the thread, it asks nothing."""
    from engine.run.events import RunFinished
    from tui.interactive_gate import EngineEvent
    from tui.screens.end import EndScreen

    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        await a_run_at_review(pilot)
        ended = RunFinished(ts=0.0, status="ok", reason="verified green on iteration 2")
        app.post_message(EngineEvent(ended))
        while not isinstance(app.screen, EndScreen):
            await pilot.pause(0.01)
        await pilot.press("escape")
        await pilot.pause()
        assert app.running  # the thread is still closing the sandbox
        await pilot.press("q")
        await pilot.pause()
        assert not isinstance(app.screen, QuitScreen)
        assert app.return_code is None
        app.post_message(FixloopApp.RunOver())  # what the engine's thread posts at its end
        while app.return_code is None:
            await pilot.pause(0.01)
    assert app.return_value == 0


async def test_the_runs_footer_fits_80_columns_with_the_review_aside_and_an_old_iteration() -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        await a_run_at_review(pilot)
        await review_shown(pilot, review_request())
        await pilot.press("v", "up")  # `v review` and `l` (back to the live one) both shown
        await settle(pilot)
        assert {"v", "l", "q"} <= footer_keys_clear_of_the_palette(app.main)


async def test_the_replay_footer_fits_80_columns_after_the_live_run_ended() -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        await a_run_at_review(pilot)
        ended = RunFinished(status="error", reason="the model failed", iterations=1, branch="")
        app.post_message(EngineEvent(ended))  # the app's `s` (the end of its run) is shown
        await wait_screen(pilot, EndScreen)
        await pilot.press("escape")
        await showing([], then=replay_screen)(pilot)
        await pilot.press("right_square_bracket")
        await settle(pilot)
        assert {"s", "l", "r", "q"} <= footer_keys_clear_of_the_palette(app.screen)


def footer_keys_clear_of_the_palette(screen: Screen[Any]) -> set[str]:
    """The keys a screen's footer shows, each checked to end left of the palette's key (an
    overflowing footer slides its last keys beneath it: `q qu▏^p palette`)."""
    keys = list(screen.query_one(Footer).query(FooterKey))
    palette = next(key for key in keys if key.has_class("-command-palette"))
    for key in keys:
        if key is not palette:
            assert key.region.right <= palette.region.x, f"{key.key} is under the palette"
    return {key.key for key in keys if key is not palette}
