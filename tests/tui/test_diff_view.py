"""The diff view of every review at 80x24: a long diff read to its last line by keyboard before
deciding, hunks stepped through, the diff full screen and back, two candidates compared, and
nothing drawn outside the screen. Pilot drives the app over fixed data; the acceptance test
drives it end to end with the scripted model server, the real sandbox and real git."""

from __future__ import annotations

import html
import re
from collections import defaultdict
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from textual.geometry import Region
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Button

from engine.edits.proposal import Edit, Proposal
from engine.run.preview import FilePreview, ProposalPreview, file_diff
from tests.model_server import ScriptedModelServer, reply
from tests.projects import MEAN_FIX, TOP_FIX, answer
from tests.tui.test_app import api_key, make_app, project, sandboxed, wait_for, wait_screen
from tests.tui.test_candidates import candidates_shown
from tests.tui.test_review import a_run_at_review, review_shown
from tests.tui.test_snapshots import (
    OUTCOME,
    app_in,
    candidates_request,
    finished_run,
    pass_request,
    review_request,
    showing,
    until_suspicious_pass,
)
from tui.app import FixloopApp
from tui.interactive_gate import ProposalReviewRequest
from tui.screens.candidates import CandidatesScreen
from tui.screens.end import EndScreen
from tui.screens.review import ReviewScreen
from tui.screens.suspicious import SuspiciousPassScreen
from tui.widgets.diff import DiffPane, DiffView, readable_diff
from tui.widgets.diff.render import ADDED, HIGHLIGHT_LIMIT, HUNK, REMOVED

__all__ = ["api_key", "project"]  # the app tests' fixtures: the model's key, the project

SMALL = (80, 24)
WIDE = (120, 36)
LAST_LINE = 'LAST_ADDED = "the last line of the proposal"'


# -- what the screen shows ----------------------------------------------------------------------


def screen_lines(app: Any) -> list[str]:
    """The rendered screen as text, one string per row (read from the SVG screenshot: each
    run of text sits at its row's y and its column's x)."""
    svg = app.export_screenshot()
    rows: dict[float, dict[int, str]] = defaultdict(dict)
    for x, y, text in re.findall(r'<text [^>]*?x="([\d.]+)" y="([\d.]+)"[^>]*>([^<]*)</text>', svg):
        rows[float(y)][round(float(x) / 12.2)] = html.unescape(text).replace("\xa0", " ")
    lines = []
    for y in sorted(rows):
        line = ""
        for column, text in sorted(rows[y].items()):
            line = line.ljust(column) + text
        lines.append(line)
    return lines


def shown(app: Any, text: str) -> bool:
    return any(text in line for line in screen_lines(app))


def outside_the_screen(screen: Screen[Any]) -> list[str]:
    """Every shown widget that is not wholly on the screen, but those a scrolling container
    clips (a long diff's lines), as `Widget: region`."""
    whole = Region(0, 0, *screen.app.size)
    outside = []
    for widget in screen.walk_children(Widget):
        if not widget.display or not widget.visible or inside_a_scroll(widget, screen):
            continue
        region = widget.region
        if region.area and whole.intersection(region) != region:
            outside.append(f"{widget!r}: {region}")
    return outside


def inside_a_scroll(widget: Widget, screen: Screen[Any]) -> bool:
    node = widget.parent
    while isinstance(node, Widget) and node is not screen:
        if node.allow_vertical_scroll or node.allow_horizontal_scroll:
            return True
        node = node.parent
    return False


# -- a proposal of sixty lines, in three hunks -------------------------------------------------

BEFORE = "\n".join(
    [
        "import re",
        "",
        *(f"# line {i}" for i in range(3, 40)),
        "def mean(xs):",
        "    return sum(xs) // len(xs)",
        *(f"# line {i}" for i in range(42, 80)),
        "def top(counts, n):",
        "    return counts.most_common(n - 1)",
    ]
)
AFTER = (
    BEFORE.replace("import re", "import re\nimport math")
    .replace("sum(xs) // len(xs)", "sum(xs) / len(xs)")
    .replace(
        "most_common(n - 1)",
        "most_common(n)\n\n\n" + "\n".join(f"WEIGHT_{i:02} = {i}" for i in range(1, 41)),
    )
    + "\n"
    + LAST_LINE
)
LONG_DIFF = file_diff("textstats/core.py", BEFORE + "\n", AFTER + "\n")


def long_review() -> ProposalReviewRequest:
    files = [FilePreview(path="textstats/core.py", before=BEFORE + "\n", after=AFTER + "\n")]
    return ProposalReviewRequest(
        n=2,
        max_n=4,
        proposal=Proposal(
            explanation="true division, n words, and a table of weights",
            edits=[Edit(path="textstats/core.py", content=AFTER + "\n")],
            format="json",
        ),
        held_back=[],
        preview=ProposalPreview(files=files, diff=LONG_DIFF),
        future=Future(),
    )


async def long_review_shown(pilot: Pilot[Any]) -> ReviewScreen:
    await a_run_at_review(pilot)
    return await review_shown(pilot, long_review())


# -- the rendering ------------------------------------------------------------------------------


def test_the_highlighted_diff_keeps_every_line_of_the_diff_as_it_is() -> None:
    shown = readable_diff(LONG_DIFF)
    assert shown.content.plain.split("\n") == LONG_DIFF.rstrip("\n").split("\n")
    context = next(line for line in shown.lines if line.plain == " def mean(xs):")
    assert context.spans  # highlighted: `def` and the name have styles of their own


def test_added_and_removed_lines_keep_their_colour_beneath_the_highlighting() -> None:
    diff = readable_diff(file_diff("a.py", "x = 1\n", "x = 2\n"))
    removed, added = diff.lines[-2], diff.lines[-1]
    assert (removed.plain, added.plain) == ("-x = 1", "+x = 2")
    assert any(str(span.style) == REMOVED and span.end == len("-x = 1") for span in removed.spans)
    assert any(str(span.style) == ADDED and span.end == len("+x = 2") for span in added.spans)
    # Highlighted: the number has a style of its own on top.
    assert len({str(span.style) for span in added.spans}) > 2


def test_each_hunk_header_line_is_recorded_for_hunk_navigation() -> None:
    diff = readable_diff(LONG_DIFF)
    assert len(LONG_DIFF.splitlines()) >= 60
    assert len(diff.hunks) == 3
    assert [diff.lines[line].plain[:2] for line in diff.hunks] == ["@@"] * 3
    assert all(any(str(s.style) == HUNK for s in diff.lines[line].spans) for line in diff.hunks)


def test_a_line_separator_inside_a_line_leaves_the_hunk_plain_and_whole() -> None:
    diff = file_diff("a.py", "x = 1\n", "x = '\u2028'\n")
    assert readable_diff(diff).content.plain.split("\n") == diff.rstrip("\n").split("\n")


def test_an_escape_sequence_in_a_proposal_is_shown_as_a_picture_not_obeyed() -> None:
    diff = file_diff("a.py", "x = 1\n", "x = '\x1b]52;c;c2VjcmV0\x07\x1b[2J'\n")
    shown = readable_diff(diff).content.plain
    assert "\x1b" not in shown
    assert "\x07" not in shown
    assert "+x = '␛]52;c;c2VjcmV0␇␛[2J'" in shown


def test_a_diff_longer_than_the_highlight_limit_is_shown_with_the_plain_line_styles() -> None:
    long = file_diff("a.py", "", "".join(f"x{i} = {i}\n" for i in range(HIGHLIGHT_LIMIT + 1)))
    added = readable_diff(long).lines[-1]
    assert {str(span.style) for span in added.spans} == {ADDED}


# -- the single review --------------------------------------------------------------------------


async def test_end_brings_the_last_line_of_a_long_proposal_into_view() -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        await long_review_shown(pilot)
        assert not shown(app, LAST_LINE)
        await pilot.press("end")
        await pilot.pause()
        assert shown(app, "+" + LAST_LINE)


async def test_page_down_reaches_every_line_of_a_long_proposal() -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        await long_review_shown(pilot)
        seen = set(screen_lines(app))
        for _ in range(20):
            await pilot.press("pagedown")
            await pilot.pause()
            seen.update(screen_lines(app))
        text = "\n".join(seen)
        missing = [line for line in LONG_DIFF.splitlines() if line.strip() and line not in text]
        assert missing == []


async def test_right_bracket_steps_to_the_next_hunk_and_the_border_counts_them() -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        review = await long_review_shown(pilot)
        view = review.query_one(DiffView)
        assert view.border_subtitle.startswith("hunk 1/3")
        await pilot.press("right_square_bracket", "right_square_bracket")
        assert view.hunk == 2
        assert view.border_subtitle.startswith("hunk 3/3")
        assert shown(app, "hunk 3/3")
        await pilot.press("left_square_bracket")
        assert view.hunk == 1


async def test_d_shows_the_diff_alone_and_d_brings_the_review_back() -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        review = await long_review_shown(pilot)
        view = review.query_one(DiffView)
        normal = view.region.height
        await pilot.press("d")
        assert not review.query_one("#decisions").display
        assert view.has_focus
        assert view.region.height >= 19 > normal
        await pilot.press("d")
        assert review.query_one("#decisions").display
        assert review.query_one("#approve", Button).has_focus


async def test_escape_leaves_the_full_screen_diff_and_then_nothing_is_decided() -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        review = await long_review_shown(pilot)
        await pilot.press("d")
        assert not review.query_one("#decisions").display
        await pilot.press("escape")
        assert review.query_one("#decisions").display
        assert app.screen is review
        assert not review.request.future.done()


async def test_v_shows_the_pending_proposal_in_the_runs_diff_pane() -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        await a_run_at_review(pilot)
        request = review_request()
        await review_shown(pilot, request)
        await pilot.press("v")
        await wait_for(pilot, lambda: app.screen is app.main, "the review to step aside")
        pane = app.main.query_one(DiffPane)
        assert pane.text == request.preview.diff
        assert pane.border_title == "diff · the proposal you review"
        assert not shown(app, "no commit yet")
        await pilot.press("v")
        await wait_for(pilot, lambda: isinstance(app.screen, ReviewScreen), "the review back")
        assert app.main.query_one(DiffPane).border_title == "diff"


# -- the candidates modal -----------------------------------------------------------------------


async def test_page_down_scrolls_the_candidates_diff_while_the_table_has_the_focus() -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        screen = await candidates_shown(pilot, candidates_request())
        await pilot.press("3")  # the doubtful one: its skip is below the fold
        assert not shown(app, "+@pytest.mark.skip")
        await pilot.press("end")
        await pilot.pause()
        assert shown(app, "+@pytest.mark.skip")
        assert screen.candidate.k == 3  # the table did not move


async def test_c_compares_the_selected_candidate_with_the_next_one_after_the_other() -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        screen = await candidates_shown(pilot, candidates_request())
        await pilot.press("c")
        both = screen.query_one("#compare-both", DiffView)
        assert both.display
        assert both.has_focus
        assert not screen.query_one("#candidates-table").display
        assert shown(app, "candidate 1 · ok")
        await pilot.press("end")
        await pilot.pause()
        assert shown(app, "+    return counts.most_common(n)")
        await pilot.press("c")
        assert screen.query_one("#candidates-table").display


async def test_c_compares_two_candidates_side_by_side_from_120_columns() -> None:
    app = app_in("dark")
    async with app.run_test(size=WIDE) as pilot:
        screen = await candidates_shown(pilot, candidates_request())
        await pilot.press("2", "c")
        left = screen.query_one("#compare-left", DiffView)
        right = screen.query_one("#compare-right", DiffView)
        assert not screen.query_one("#compare-both", DiffView).display
        assert (left.border_title, right.border_title) == (
            "candidate 2 · ok",
            "candidate 3 · suspicious pass",
        )
        assert left.region.y == right.region.y
        assert left.region.right <= right.region.x
        assert shown(app, "sum(map(len, found))")


async def test_enter_on_the_candidates_diff_shows_it_alone_and_picks_nothing() -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        request = candidates_request()
        screen = await candidates_shown(pilot, request)
        while not isinstance(screen.focused, DiffView):  # past the explanation
            await pilot.press("tab")
        await pilot.press("enter")
        assert not screen.query_one("#candidates-table").display
        assert not request.future.done()
        await pilot.press("d", "enter")  # back to the table: enter picks again
        await pilot.pause()
        assert request.future.done()


# -- the suspicious pass and the end ------------------------------------------------------------


async def test_the_suspicious_pass_diff_scrolls_to_its_last_line() -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        await showing(until_suspicious_pass(), then=lambda: SuspiciousPassScreen(pass_request()))(
            pilot
        )
        last = pass_request().test_diff.rstrip("\n").splitlines()[-1]
        assert not shown(app, last)
        await pilot.press("end")
        await pilot.pause()
        assert shown(app, last)


async def test_enter_on_the_end_modals_diff_shows_it_alone_and_escape_brings_it_back() -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        await showing(finished_run(), then=lambda: EndScreen(OUTCOME))(pilot)
        end = app.screen
        assert isinstance(end, EndScreen)
        end.query_one(DiffView).focus()
        await pilot.press("enter")
        assert not end.query_one("#summary").display
        await pilot.press("escape")
        assert end.query_one("#summary").display
        assert app.screen is end  # escape left the full screen, not the modal


# -- nothing outside the screen -----------------------------------------------------------------


async def test_no_review_draws_outside_the_screen_at_80x24() -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        review = await long_review_shown(pilot)
        assert outside_the_screen(review) == []
        await pilot.press("d")
        assert outside_the_screen(review) == []
        await pilot.press("d", "x", "y")
        await wait_for(pilot, lambda: app.screen is app.main, "the review to close")
        candidates = await candidates_shown(pilot, candidates_request())
        assert outside_the_screen(candidates) == []
        await pilot.press("c")
        assert outside_the_screen(candidates) == []
        await pilot.press("n")
        assert outside_the_screen(candidates) == []
        await pilot.press("escape", "x", "y")
        await wait_for(pilot, lambda: app.screen is app.main, "the candidates to close")
        await app.push_screen(SuspiciousPassScreen(pass_request()))
        await pilot.pause()
        assert outside_the_screen(app.screen) == []
        app.pop_screen()
        await app.push_screen(EndScreen(OUTCOME))
        await pilot.pause()
        assert outside_the_screen(app.screen) == []


# -- end to end: a sixty-line candidate read before it is picked ---------------------------------

WEIGHTS = {
    "path": "textstats/core.py",
    "search": "return counts.most_common(n - 1)",
    "replace": "return counts.most_common(n)\n\n\n"
    + "\n".join(f"WEIGHT_{i:02} = {i}" for i in range(1, 56))
    + "\n"
    + LAST_LINE,
}
LONG = answer("true division, n words, and a table of weights", MEAN_FIX, WEIGHTS)
SHORT = answer("fix the mean and top_words", MEAN_FIX, TOP_FIX)


async def read_to_the_end(pilot: Pilot[Any], screen: CandidatesScreen) -> None:
    """Select the long candidate and read every line it adds by keyboard, at 80x24."""
    app = pilot.app
    long = next(c for c in screen.request.candidates if "weights" in c.explanation)
    assert len(long.diff.splitlines()) >= 60
    await pilot.press(str(long.k))
    assert screen.candidate.k == long.k
    assert not shown(app, "+" + LAST_LINE)
    assert outside_the_screen(screen) == []
    seen = set(screen_lines(app))
    for _ in range(20):
        await pilot.press("pagedown")
        await pilot.pause()
        seen.update(screen_lines(app))
    text = "\n".join(seen)
    added = [line for line in long.diff.splitlines() if line.startswith("+")]
    added = [line for line in added if not line.startswith("+++")]
    assert [line for line in added if line not in text] == []
    await pilot.press("home", "end")
    await pilot.pause()
    assert shown(app, "+" + LAST_LINE)
    assert outside_the_screen(screen) == []


@sandboxed
async def test_a_sixty_line_candidate_is_read_to_its_end_at_80x24_before_it_is_picked(
    model_server: ScriptedModelServer, project: Path
) -> None:
    model_server.script(reply(LONG), reply(SHORT))
    app = make_app(model_server, project, candidates=2)
    async with app.run_test(size=SMALL) as pilot:
        screen = await wait_screen(pilot, CandidatesScreen)
        try:
            await read_to_the_end(pilot, screen)
        except BaseException:  # a failed check still ends the run: its thread would wait on
            await pilot.press("x", "y")
            raise
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, EndScreen), "the end")
    assert isinstance(app, FixloopApp)
    assert app.main.view.iterations[1].status == "ok"
