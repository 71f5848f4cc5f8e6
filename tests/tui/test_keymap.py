"""The one keymap (tui/keymap.py): its rules, docs/keys.md rendered from it, and every view of
the app at 80x24 held to it — each footer key is a row of the table with the row's label, each
view drawn wholly on the screen (a screenshot of each in /tmp/keymap-VIEW.svg), and the keys
that decide do what the table says (approve, reject with a note, abort asks, quit asks, escape
goes back)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets import TextArea

from engine.project.paths import run_path
from engine.run.gate import Review
from tests.tui.test_app import wait_for
from tests.tui.test_diff_view import outside_the_screen, screen_lines
from tests.tui.test_gate import PROPOSAL, WAIT_S, on_engine_thread
from tests.tui.test_review import a_run_at_review, decided, review_shown
from tests.tui.test_snapshots import (
    OUTCOME,
    PAST_RUNS,
    PROJECT,
    REPORT,
    RUN_ID,
    app_in,
    candidates_request,
    check_result,
    finished_run,
    pass_request,
    replay_screen,
    review_request,
    settle,
    showing,
    until_second_review,
)
from tui import keymap
from tui.app import FixloopApp
from tui.screens.candidates import CandidatesScreen
from tui.screens.confirm import ConfirmScreen, abort_question
from tui.screens.editor import EditorFile, EditorScreen
from tui.screens.end import EndScreen
from tui.screens.outage import OutageScreen
from tui.screens.quit import QuitScreen
from tui.screens.report import ReportScreen
from tui.screens.review import ReviewScreen
from tui.screens.runs import RunsScreen
from tui.screens.spec_form import SpecFormScreen
from tui.screens.suspicious import SuspiciousPassScreen
from tui.screens.task import DEFAULT_TASK, TaskScreen
from tui.screens.watch import WatchScreen

SMALL = (80, 24)
DOCS = Path(__file__).resolve().parents[2] / "docs" / "keys.md"


# -- the table's rules --------------------------------------------------------------------------


def test_docs_keys_md_is_the_tables_rendering() -> None:
    assert DOCS.read_text(encoding="utf-8") == keymap.keys_markdown(), (
        "docs/keys.md differs from tui/keymap.py: write keymap.keys_markdown() to it"
    )


def test_every_key_has_one_meaning() -> None:
    assert [row.key for row in keymap.KEYS if keymap.meaning(row.key) == ""] == []


def test_a_key_that_ends_something_ends_something_in_every_view() -> None:
    mixed = {
        row.key
        for row in keymap.KEYS
        if any(other.key == row.key and other.ends != row.ends for other in keymap.KEYS)
    }
    assert mixed == set()


def test_approve_accept_and_pick_never_share_a_key_with_abort_or_discard() -> None:
    yes = {row.key for row in keymap.KEYS if row.label in ("approve", "accept", "pick")}
    ends = {row.key for row in keymap.KEYS if row.ends}
    assert yes == {"a", "enter"}
    assert yes & ends == set()


def test_escape_never_quits() -> None:
    quits = {"quit", "app.quit", "quit_task", "quit_again"}
    assert [row for row in keymap.KEYS if row.key == "escape" and row.action in quits] == []


# -- every view at 80x24 ------------------------------------------------------------------------


def editor() -> EditorScreen:
    return EditorScreen([EditorFile("textstats/core.py", "def f():\n    return 1\n")])


def task() -> TaskScreen:
    screen = TaskScreen(project=str(PROJECT), model="openai/gpt-4o-mini", sandbox="gvisor")
    screen.call_after_refresh(screen.show_check, check_result())
    return screen


def watch() -> WatchScreen:
    screen = WatchScreen(PROJECT, model="openai/gpt-4o-mini", sandbox="gvisor", watch_files=False)
    screen.clock = lambda: "14:15:03"
    screen.call_after_refresh(screen.show_check, check_result())
    return screen


def outage() -> OutageScreen:
    reason = "the model could not be reached after 3 tries: HTTP 500"
    return OutageScreen(reason, RUN_ID, str(PROJECT), "http://127.0.0.1:9/v1", "openai/m")


VIEWS: dict[str, Callable[[], Screen[Any]]] = {
    keymap.TASK: task,
    keymap.REVIEW: lambda: ReviewScreen(review_request()),
    keymap.CANDIDATES: lambda: CandidatesScreen(candidates_request()),
    keymap.SUSPICIOUS: lambda: SuspiciousPassScreen(pass_request()),
    keymap.END: lambda: EndScreen(OUTCOME),
    keymap.QUIT: lambda: QuitScreen(RUN_ID, str(PROJECT)),
    keymap.CONFIRM: abort_question,
    keymap.OUTAGE: outage,
    keymap.REPLAY: replay_screen,
    keymap.RUNS: lambda: RunsScreen(PROJECT, PAST_RUNS),
    keymap.REPORT: lambda: ReportScreen(run_path(PROJECT, RUN_ID) / "report.md", REPORT),
    keymap.EDITOR: editor,
    keymap.SPEC: lambda: SpecFormScreen(),
    keymap.WATCH: watch,
}


async def view_shown(pilot: Pilot[Any], view: str) -> Screen[Any]:
    """The view over a run's panes (the main screen alone for `main`), as the app shows it."""
    app = pilot.app
    assert isinstance(app, FixloopApp)
    events = finished_run() if view in (keymap.MAIN, keymap.END) else until_second_review()
    await showing(events, then=VIEWS.get(view))(pilot)
    app.running = view not in (keymap.MAIN, keymap.END, keymap.TASK)
    app.refresh_bindings()
    await settle(pilot)
    await pilot.pause(0.1)
    return app.screen


def footer_keys(screen: Screen[Any]) -> list[tuple[str, str, str]]:
    """What the footer shows: (view, key, label) of each enabled, shown binding, the view being
    the screen's or the app's, whichever binds it."""
    view_of = {type(screen): shown_view(screen), FixloopApp: keymap.APP}
    shown = []
    for key, active in screen.active_bindings.items():
        if not active.binding.show or not active.enabled:
            continue
        owner = view_of.get(type(active.node), type(active.node).__name__)
        shown.append((owner, key, active.binding.description))
    return shown


def shown_view(screen: Screen[Any]) -> str:
    by_name = {name: view for view, name in NAMES.items()}
    return by_name.get(type(screen).__name__, keymap.MAIN)


NAMES = {
    keymap.TASK: "TaskScreen",
    keymap.REVIEW: "ReviewScreen",
    keymap.CANDIDATES: "CandidatesScreen",
    keymap.SUSPICIOUS: "SuspiciousPassScreen",
    keymap.END: "EndScreen",
    keymap.QUIT: "QuitScreen",
    keymap.CONFIRM: "ConfirmScreen",
    keymap.OUTAGE: "OutageScreen",
    keymap.REPLAY: "ReplayScreen",
    keymap.RUNS: "RunsScreen",
    keymap.REPORT: "ReportScreen",
    keymap.EDITOR: "EditorScreen",
    keymap.SPEC: "SpecFormScreen",
    keymap.WATCH: "WatchScreen",
}
ALL_VIEWS = [keymap.MAIN, *VIEWS]


@pytest.mark.parametrize("view", ALL_VIEWS)
async def test_every_footer_key_is_the_tables_with_its_label(view: str) -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        screen = await view_shown(pilot, view)
        shown = footer_keys(screen)
    table = {(v, row.key, row.label) for row in keymap.KEYS for v in row.views}
    assert shown, "the footer shows no key"
    assert [key for key in shown if key not in table] == []


@pytest.mark.parametrize("view", ALL_VIEWS)
async def test_every_view_is_drawn_wholly_on_the_screen_at_80x24(view: str) -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        screen = await view_shown(pilot, view)
        app.save_screenshot(f"keymap-{view}.svg", "/tmp")  # to look at: every view at 80x24
        assert outside_the_screen(screen) == []


@pytest.mark.parametrize("view", ALL_VIEWS)
async def test_no_footer_label_is_cut_at_80x24(view: str) -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        screen = await view_shown(pilot, view)
        labels = [label for _, _, label in footer_keys(screen)]
        footer = screen_lines(app)[-1]
    # The footer drops the keys that do not fit (never half a label): each label it shows ends
    # at a word's end.
    cut = [label for label in labels if label[:3] in footer and label not in footer]
    assert cut == []


# -- the keys do what the table says -----------------------------------------------------------


async def test_a_approves_the_proposal_at_the_review() -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        await a_run_at_review(pilot)
        request = review_request()
        await review_shown(pilot, request)
        await pilot.press("a")
        await pilot.pause()
    assert decided(request).decision == "approve"


async def test_n_then_ctrl_s_rejects_the_proposal_with_the_note() -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        await a_run_at_review(pilot)
        request = review_request()
        await review_shown(pilot, request)
        await pilot.press("n", *"not like this", "ctrl+s")
        await pilot.pause()
    assert decided(request) == Review(
        decision="reject", comment="not like this", note="rejected by you", by="person"
    )


async def test_x_at_the_review_asks_first_and_a_fast_enter_keeps_the_review() -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        await a_run_at_review(pilot)
        request = review_request()
        review = await review_shown(pilot, request)
        await pilot.press("x")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen is review
        assert not request.future.done()


async def test_x_on_the_run_asks_first_and_escape_keeps_it_running() -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        await a_run_at_review(pilot)
        await pilot.press("x")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is app.main
        # The gate still asks the person: an aborted run's gate would answer "abort" at once.
        engine = on_engine_thread(lambda: app.gate.review(2, PROPOSAL, []))
        await wait_for(pilot, lambda: isinstance(app.screen, ReviewScreen), "the review")
        await pilot.press("a")
        assert engine.result(timeout=WAIT_S).decision == "approve"


async def test_the_palettes_abort_asks_first() -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        await a_run_at_review(pilot)
        abort = next(c for c in app.get_system_commands(app.screen) if "Abort" in c.title)
        abort.callback()
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        assert app.running


async def test_q_while_a_run_goes_on_asks_what_to_do_with_it() -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        await a_run_at_review(pilot)
        await pilot.press("q")
        await pilot.pause()
        assert isinstance(app.screen, QuitScreen)
        assert app.return_code is None


async def test_escape_on_the_task_screen_keeps_the_typed_task_and_the_app() -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        screen = await view_shown(pilot, keymap.TASK)
        area = screen.query_one("#task", TextArea)
        area.load_text("Fix top_words for ties")
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is screen
        assert app.return_code is None
        assert area.text == "Fix top_words for ties"


async def test_ctrl_q_on_the_task_screen_asks_before_dropping_a_typed_task() -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        screen = await view_shown(pilot, keymap.TASK)
        screen.query_one("#task", TextArea).load_text("Fix top_words for ties")
        await pilot.press("ctrl+q")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("enter")  # the default answer keeps the task
        await pilot.pause()
        assert app.screen is screen
        assert app.return_code is None


async def test_ctrl_q_on_the_task_screen_quits_at_once_with_the_default_task() -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        screen = await view_shown(pilot, keymap.TASK)
        screen.query_one("#task", TextArea).load_text(DEFAULT_TASK)
        await pilot.press("ctrl+q")
        await pilot.pause()
    assert app.return_code == 0


async def test_m_in_a_replay_leaves_the_live_runs_mode_alone() -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        await view_shown(pilot, keymap.REPLAY)
        before = app.gate.approval
        await pilot.press("m", "p")
        await pilot.pause()
        assert app.gate.approval == before
        assert not app.gate.paused
