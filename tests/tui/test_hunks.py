"""Keeping some hunks of a proposal at the single review, as `git add -p` does: `space` drops
the hunk being read (or keeps it again), `A` keeps them all; approving commits only the kept
hunks as the person's edit, and the model hears which were dropped. Pilot over fixed data
first, then a whole run: the scripted model server over HTTP, the real sandbox, real git."""

from __future__ import annotations

import json
from concurrent.futures import Future
from dataclasses import replace
from pathlib import Path

import git
from textual.widgets import Static, TextArea

from engine.edits.diff import parse_diff
from engine.edits.proposal import Edit, Proposal
from engine.run.events import ReviewResolved
from engine.run.gate import Review
from engine.run.preview import ProposalPreview, preview_proposal
from tests.model_server import ScriptedModelServer, reply
from tests.projects import MEAN_FIX, TOP_FIX, answer
from tests.tui.test_app import (
    api_key,  # noqa: F401 (an autouse fixture)
    branch_subjects,
    end_of_run,
    make_app,
    project,  # noqa: F401 (a fixture)
    run_events,
    sandboxed,
    wait_screen,
)
from tests.tui.test_review import SMALL, a_run_at_review, decided, review_shown
from tests.tui.test_snapshots import app_in
from tui.interactive_gate import ProposalReviewRequest
from tui.screens.editor import EditorScreen
from tui.screens.review import ReviewScreen
from tui.widgets.diff import DiffPane, DiffView

# Three functions far enough apart that a change to each is a hunk of its own.
MODULE = "".join(
    f"def f{i}(x):\n    '''f{i}'''\n    a = x\n    b = a\n    c = b\n    d = c\n"
    f"    return x + {i}\n\n\n"
    for i in range(1, 4)
)


def three_hunks(tmp_path: Path) -> ProposalReviewRequest:
    """A review of a proposal that changes each of MODULE's three functions."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "mod.py").write_text(MODULE)
    edits = [Edit(path="mod.py", search=f"x + {i}", replace=f"x * {i}") for i in (1, 2, 3)]
    proposal = Proposal(explanation="multiply", edits=edits, format="json")
    preview = preview_proposal(proposal, root)
    assert len(parse_diff(preview.diff).files[0].hunks) == 3
    return request_for(proposal, preview)


def request_for(proposal: Proposal, preview: ProposalPreview) -> ProposalReviewRequest:
    return ProposalReviewRequest(
        n=1,
        max_n=4,
        proposal=proposal,
        held_back=[],
        preview=preview,
        future=Future(),
        last_check=None,
    )


def notice(review: ReviewScreen) -> str:
    return str(review.query_one("#notice", Static).render())


def diff_lines(review: ReviewScreen) -> str:
    return str(review.query_one("#review-diff .diff-lines", Static).render())


async def test_space_drops_the_hunk_being_read_and_its_header_says_so(tmp_path: Path) -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        await a_run_at_review(pilot)
        review = await review_shown(pilot, three_hunks(tmp_path))
        await pilot.press("right_square_bracket", "space")
        await pilot.pause()
        assert review.dropped == {1}
        shown = diff_lines(review)
        assert shown.count("✓ kept") == 2
        assert shown.count("✗ dropped") == 1
        assert "2 of 3 hunks kept" in notice(review)
        assert "hunk 2/3 dropped" in str(review.query_one(DiffView).border_subtitle)


async def test_space_on_a_dropped_hunk_keeps_it_again(tmp_path: Path) -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        await a_run_at_review(pilot)
        review = await review_shown(pilot, three_hunks(tmp_path))
        await pilot.press("space", "space")
        await pilot.pause()
        assert review.dropped == set()
        assert "✗ dropped" not in diff_lines(review)


async def test_shift_a_keeps_every_hunk_again(tmp_path: Path) -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        await a_run_at_review(pilot)
        review = await review_shown(pilot, three_hunks(tmp_path))
        await pilot.press("space", "right_square_bracket", "space", "A")
        await pilot.pause()
        assert review.dropped == set()
        assert "hunks kept" not in notice(review)


async def test_approving_with_a_hunk_dropped_commits_the_rest_as_your_edit(
    tmp_path: Path,
) -> None:
    app = app_in("dark")
    request = three_hunks(tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await a_run_at_review(pilot)
        await review_shown(pilot, request)
        await pilot.press("right_square_bracket", "space", "a")
        await pilot.pause()
    review = decided(request)
    assert (review.decision, review.note, review.by) == ("edit", "edited by you", "person")
    assert review.proposal is not None
    [edit] = review.proposal.edits
    assert (edit.path, edit.content) == (
        "mod.py",
        MODULE.replace("x + 1", "x * 1").replace("x + 3", "x * 3"),
    )
    assert review.dropped == ["mod.py lines 13-19"]


async def test_every_hunk_dropped_rejects_the_proposal_with_the_note(tmp_path: Path) -> None:
    app = app_in("dark")
    request = three_hunks(tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await a_run_at_review(pilot)
        await review_shown(pilot, request)
        for _ in range(3):
            await pilot.press("space", "right_square_bracket")
        await pilot.press("n", *"none of this", "ctrl+g")
        await pilot.pause()
    assert decided(request) == Review(
        decision="reject", comment="none of this", note="rejected by you", by="person"
    )


async def test_e_after_a_hunk_is_dropped_edits_the_kept_hunks_only(tmp_path: Path) -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        await a_run_at_review(pilot)
        review = await review_shown(pilot, three_hunks(tmp_path))
        await pilot.press("space", "e")
        editor = await wait_screen(pilot, EditorScreen)
        [shown] = editor.files
        assert shown.text == MODULE.replace("x + 2", "x * 2").replace("x + 3", "x * 3")
        await pilot.press("ctrl+s")
        while app.screen is not review:
            await pilot.pause(0.01)
        assert review.dropped == set()  # the person's version is taken whole from here


async def test_space_in_the_note_is_a_space_not_a_hunk_dropped(tmp_path: Path) -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        await a_run_at_review(pilot)
        review = await review_shown(pilot, three_hunks(tmp_path))
        await pilot.press("n", *"keep f1")
        await pilot.pause()
        assert review.query_one("#note", TextArea).text == "keep f1"
        assert review.dropped == set()


# -- a whole run ------------------------------------------------------------------------------

REGEX = 'WORD = re.compile(r"[A-Za-z\']+")'
# Three hunks: a comment on the regex (line 4), the mean's fix (line 19), a new file.
COMMENT = {"path": "textstats/core.py", "search": REGEX, "replace": REGEX + "  # word letters"}
EXTRA = {"path": "textstats/extra.py", "content": "def extra() -> int:\n    return 1\n"}


@sandboxed
async def test_a_hunk_dropped_with_a_note_is_left_out_of_the_commit_and_told_to_the_model(
    model_server: ScriptedModelServer,
    project: Path,  # noqa: F811 (the fixture imported above)
) -> None:
    model_server.script(
        reply(answer("comment the regex, true division, a helper", COMMENT, MEAN_FIX, EXTRA)),
        reply(answer("return n words", TOP_FIX)),
    )
    app = make_app(model_server, project)
    async with app.run_test(size=SMALL) as pilot:
        review = await wait_screen(pilot, ReviewScreen)
        assert review.hunk_total() == 3
        await pilot.press("space")  # the first hunk: the regex's comment
        await pilot.pause()
        assert "2 of 3 hunks kept" in notice(review)
        await pilot.press("n", *"leave the regex alone", "ctrl+g")
        second = await wait_screen(pilot, ReviewScreen, after=review)
        await pilot.press("a")
        end = await end_of_run(pilot)
        assert end.outcome.status == "ok"
    repo = git.Repo(project)
    first = repo.commit(f"{end.outcome.branch}~1")
    assert first.summary == "fixloop[iter 1/4]: edited by you"
    committed = parse_diff(repo.git.show(first.hexsha, "--format=", "--no-color"))
    assert [(f.path, len(f.hunks)) for f in committed.files] == [
        ("textstats/core.py", 1),
        ("textstats/extra.py", 1),
    ]
    [mean] = committed.files[0].hunks
    assert [line.text for line in mean.lines if line.kind == "added"] == [
        "    return sum(len(w) for w in found) / len(found)"
    ]
    core = repo.git.show(f"{first.hexsha}:textstats/core.py")
    assert f"{REGEX}\n" in core  # the dropped hunk's line, as it was
    resolved = [e for e in run_events(app) if isinstance(e, ReviewResolved)]
    assert (resolved[0].decision, resolved[0].note) == ("edit", "edited by you")
    assert resolved[0].dropped == ["textstats/core.py lines 1-7"]
    told = json.dumps(model_server.requests[1].body["messages"])
    assert "leave the regex alone" in told
    assert "dropped your changes to textstats/core.py lines 1-7" in told
    assert branch_subjects(project, end.outcome.branch)[0] == "fixloop[iter 2/4]: return n words"
    assert second.request.n == 2


# -- `v`: the run's panes while the review waits ------------------------------------------------


async def test_v_with_a_hunk_dropped_shows_only_the_kept_hunks_in_the_diff_pane(
    tmp_path: Path,
) -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        await a_run_at_review(pilot)
        request = replace(three_hunks(tmp_path), n=2)  # the iteration the panes show
        await review_shown(pilot, request)
        await pilot.press("right_square_bracket", "space", "v")
        await pilot.pause()
        assert app.screen is app.main
        pane = app.main.query_one(DiffPane)
        assert pane.border_title == "diff · what approving commits: 2 of 3 hunks"
        assert "+    return x * 1" in pane.text
        assert "+    return x * 3" in pane.text
        assert "x * 2" not in pane.text  # the dropped hunk is absent


async def test_v_with_every_hunk_dropped_says_approving_commits_nothing(tmp_path: Path) -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        await a_run_at_review(pilot)
        await review_shown(pilot, replace(three_hunks(tmp_path), n=2))
        for _ in range(3):
            await pilot.press("space", "right_square_bracket")
        await pilot.press("v")
        await pilot.pause()
        pane = app.main.query_one(DiffPane)
        assert pane.text == ""
        assert "every hunk dropped: approving commits nothing" in str(
            pane.query_one("#diff-text", Static).render()
        )
