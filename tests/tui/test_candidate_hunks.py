"""Keeping some hunks of a candidate, as the single review does (`git add -p`): in the
candidates view `space` drops the selected candidate's hunk being read, `A` keeps them all;
picking it then commits only the kept hunks as the person's edit, and the model hears which
were dropped. Pilot over fixed data first, then a whole run: the scripted model server over
HTTP, the real sandbox, real git."""

from __future__ import annotations

import json
from concurrent.futures import Future
from pathlib import Path

import git
from textual.widgets import Static

from engine.edits.diff import parse_diff
from engine.edits.proposal import Edit, Proposal
from engine.run.events import CandidateChosen
from engine.run.gate import CandidateView, Choice
from engine.run.preview import preview_proposal
from engine.verify.results import TestCounts
from tests.model_server import ScriptedModelServer, reply
from tests.projects import MEAN_FIX, TOP_FIX, answer
from tests.tui.test_app import (
    api_key,  # noqa: F401 (an autouse fixture)
    end_of_run,
    make_app,
    project,  # noqa: F401 (a fixture)
    run_events,
    sandboxed,
    wait_for,
    wait_screen,
)
from tests.tui.test_candidates import SMALL, candidates_shown, chosen
from tests.tui.test_hunks import COMMENT, EXTRA, MODULE
from tests.tui.test_snapshots import app_in
from tui.interactive_gate import CandidatesRequest
from tui.screens.candidates import CandidatesScreen
from tui.screens.review import ReviewScreen
from tui.widgets.diff import DiffView


def two_candidates(tmp_path: Path) -> CandidatesRequest:
    """Two verified candidates on MODULE: 1 changes f1 only (the ranking's best), 2 changes
    each of its three functions (three hunks)."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "mod.py").write_text(MODULE)
    views, previews = [], {}
    for k, numbers in ((1, (1,)), (2, (1, 2, 3))):
        edits = [Edit(path="mod.py", search=f"x + {i}", replace=f"x * {i}") for i in numbers]
        proposal = Proposal(explanation=f"multiply {numbers}", edits=edits, format="json")
        preview = preview_proposal(proposal, root)
        previews[k] = preview
        views.append(
            CandidateView(
                k=k,
                verdict="ok",
                tests=TestCounts(collected=3, passed=3),
                explanation=proposal.explanation,
                files=["mod.py"],
                diff=preview.diff,
                proposal=proposal,
            )
        )
    assert len(parse_diff(previews[2].diff).files[0].hunks) == 3
    best = Choice(decision="pick", k=1, why="the smallest diff")
    return CandidatesRequest(
        n=1, max_n=4, candidates=views, best=best, previews=previews, future=Future()
    )


def notice(screen: CandidatesScreen) -> str:
    return str(screen.query_one("#notice", Static).render())


async def test_space_drops_the_hunk_being_read_of_the_selected_candidate(tmp_path: Path) -> None:
    app = app_in("dark")
    async with app.run_test(size=SMALL) as pilot:
        screen = await candidates_shown(pilot, two_candidates(tmp_path))
        await pilot.press("2", "right_square_bracket", "space")
        await pilot.pause()
        assert screen.hunks_dropped == {2: {1}}
        shown = str(screen.query_one("#candidate-diff .diff-lines", Static).render())
        assert (shown.count("✓ kept"), shown.count("✗ dropped")) == (2, 1)
        assert "2 of 3 hunks kept: picking commits only those" in notice(screen)
        assert "hunk 2/3 dropped" in str(screen.query_one(DiffView).border_subtitle)


async def test_picking_a_candidate_with_a_hunk_dropped_commits_the_rest_as_your_edit(
    tmp_path: Path,
) -> None:
    app = app_in("dark")
    request = two_candidates(tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await candidates_shown(pilot, request)
        await pilot.press("2", "right_square_bracket", "space", "n", *"keep f2 as is", "ctrl+g")
        await pilot.pause()
    choice = chosen(request)
    assert (choice.decision, choice.k, choice.why, choice.by) == (
        "edit",
        2,
        "edited by you",
        "person",
    )
    assert choice.comment == "keep f2 as is"
    assert choice.dropped == ["mod.py lines 13-19"]
    assert choice.proposal is not None
    [edit] = choice.proposal.edits
    assert (edit.path, edit.content) == (
        "mod.py",
        MODULE.replace("x + 1", "x * 1").replace("x + 3", "x * 3"),
    )


async def test_shift_a_keeps_every_hunk_and_the_candidate_is_picked_whole(tmp_path: Path) -> None:
    app = app_in("dark")
    request = two_candidates(tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        screen = await candidates_shown(pilot, request)
        await pilot.press("2", "space")
        await pilot.pause()
        assert "2 of 3 hunks kept" in notice(screen)
        await pilot.press("A")
        await pilot.pause()
        assert "hunks kept" not in notice(screen)
        await pilot.press("a")
        await pilot.pause()
    assert chosen(request) == Choice(decision="pick", k=2, why="chosen by you", by="person")


async def test_every_hunk_of_the_candidate_dropped_asks_again(tmp_path: Path) -> None:
    app = app_in("dark")
    request = two_candidates(tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        screen = await candidates_shown(pilot, request)
        await pilot.press("space")  # candidate 1, the best: its one hunk
        await pilot.pause()
        assert "0 of 1 hunks kept: picking asks again" in notice(screen)
        await pilot.press("a")
        await pilot.pause()
    assert chosen(request) == Choice(
        decision="reject", why="rejected by you", comment="", by="person"
    )


async def test_dropped_hunks_stay_with_their_candidate(tmp_path: Path) -> None:
    app = app_in("dark")
    request = two_candidates(tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        screen = await candidates_shown(pilot, request)
        await pilot.press("2", "space", "1")
        await pilot.pause()
        assert "hunks kept" not in notice(screen)  # candidate 1 is whole
        await pilot.press("2")
        await pilot.pause()
        assert "2 of 3 hunks kept" in notice(screen)  # candidate 2 as the person left it
        await pilot.press("1", "a")
        await pilot.pause()
    assert chosen(request) == Choice(decision="pick", k=1, why="chosen by you", by="person")


# -- a whole run ------------------------------------------------------------------------------

# Candidate "mean only" is the ranking's best (failing as the other, with a smaller diff); the
# person picks the other, whose three hunks are the regex's comment (dropped), the mean's fix
# and a new file.
MEAN_ONLY = answer("fix the mean only", MEAN_FIX)
THREE = answer("comment the regex, true division, a helper", COMMENT, MEAN_FIX, EXTRA)
TOP = answer("return n words", TOP_FIX)


@sandboxed
async def test_a_picked_candidate_minus_a_hunk_commits_the_rest_and_tells_the_model(
    model_server: ScriptedModelServer,
    project: Path,  # noqa: F811 (the fixture imported above)
) -> None:
    model_server.script(reply(MEAN_ONLY), reply(THREE), reply(TOP), reply(TOP))
    app = make_app(model_server, project, candidates=2)
    async with app.run_test(size=SMALL) as pilot:
        screen = await wait_screen(pilot, CandidatesScreen)
        three = next(v for v in screen.request.candidates if v.explanation.startswith("comment"))
        try:
            assert screen.request.best.k != three.k
            assert sum(len(f.hunks) for f in parse_diff(three.diff).files) == 3
        except BaseException:  # a failed check still ends the run: its thread would wait on
            await pilot.press("x", "y")
            raise
        await pilot.press(str(three.k))
        await pilot.press("space")  # the first hunk: the regex's comment
        await pilot.press("n", *"leave the regex alone", "ctrl+g")
        await wait_for(
            pilot,
            lambda: (
                isinstance(app.screen, CandidatesScreen | ReviewScreen) and app.screen is not screen
            ),
            "iteration 2's decision",
        )
        await pilot.press("a")  # iteration 2: the top_words fix
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
    core = repo.git.show(f"{first.hexsha}:textstats/core.py")
    assert "# word letters" not in core  # the dropped hunk's line, as it was
    assert "/ len(found)" in core
    picked = [e for e in run_events(app) if isinstance(e, CandidateChosen)]
    assert (picked[0].k, picked[0].why, picked[0].dropped) == (
        three.k,
        "edited by you",
        ["textstats/core.py lines 1-7"],
    )
    told = json.dumps(model_server.requests[2].body["messages"])
    assert "leave the regex alone" in told
    assert "dropped your changes to textstats/core.py lines 1-7" in told
