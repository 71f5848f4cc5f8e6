"""The interactive app driven with Textual's Pilot, end to end: the scripted model server
over HTTP (through litellm), the real gVisor sandbox and real git.

Each test presses the keys a person would, waits for the screen the run leads to, and checks
what the run did: its events, the commits on its branch, the user's checkout.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import git
import pytest
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets import DataTable, Static, TextArea

from engine.project.paths import run_path, runs_dir, worktree_path
from engine.project.settings import Settings, load_settings
from engine.run.events import CandidateChosen, Event, ReviewResolved, RunStarted, RunStopped
from engine.run.run_directory import read_events
from tests.model_server import ScriptedModelServer, hang, reply
from tests.projects import MEAN_FIX, SKIP_TOP, TOP_FIX, answer
from tests.tui.test_snapshots import app_in, finished_run, review_request, settle, showing
from tui.app import FixloopApp
from tui.screens.candidates import CandidatesScreen
from tui.screens.confirm import ConfirmScreen
from tui.screens.editor import EditorFile, EditorScreen
from tui.screens.end import EndScreen
from tui.screens.quit import QuitScreen
from tui.screens.replay import ReplayScreen
from tui.screens.review import ReviewScreen
from tui.screens.runs import RunsScreen
from tui.screens.suspicious import SuspiciousPassScreen
from tui.screens.task import TaskScreen
from tui.widgets.code import CodePane
from tui.widgets.diff import DiffPane
from tui.widgets.feedback import FeedbackPane
from tui.widgets.header import RunHeader
from tui.widgets.history import HistoryPane
from tui.widgets.model_problem import ModelProblem

F = TypeVar("F", bound=Callable[..., Any])


def sandboxed(test: F) -> F:
    """The test runs the real gVisor sandbox (it fails, never skips, in CI)."""
    marked: F = pytest.mark.sandbox(pytest.mark.usefixtures("needs_gvisor")(test))
    return marked


REPO = Path(__file__).parents[2]
EXAMPLE = REPO / "examples" / "textstats"
KEY = "sk-test-tui-0123456789"
SIZE = (120, 40)
WAIT_S = 120.0  # one step of a run is ~1 s; the first includes loading litellm and the sandbox

S = TypeVar("S", bound=Screen[Any])


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The buggy example as the user's committed checkout, readable by the sandbox's user."""
    root = tmp_path / "textstats"
    shutil.copytree(EXAMPLE, root)
    repo = git.Repo.init(root, initial_branch="main")
    repo.git.add("-A")
    repo.index.commit("the buggy example")
    for path in [tmp_path, *root.rglob("*")]:
        if ".git" not in path.parts:
            path.chmod(0o755 if path.is_dir() else 0o644)
    return root


def make_app(
    server: ScriptedModelServer, root: Path, *, task: str | None = "Fix textstats.", **flags: Any
) -> FixloopApp:
    settings = load_settings(
        root,
        # gvisor by name: with an engine running, auto would pick the docker backend.
        {"model": "openai/scripted", "api_base": server.base_url, "sandbox": "gvisor", **flags},
        environ={},
        user_config=root / "no-user-config.toml",
    )
    return FixloopApp(root, settings, task=task)


async def wait_for(pilot: Pilot[Any], ready: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not ready():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await pilot.pause(0.05)


async def wait_screen(pilot: Pilot[Any], kind: type[S], after: Screen[Any] | None = None) -> S:
    """The next screen of `kind` on top (a different one than `after`)."""
    app = pilot.app
    await wait_for(
        pilot,
        lambda: isinstance(app.screen, kind) and app.screen is not after,
        f"the {kind.__name__}",
    )
    screen = app.screen
    assert isinstance(screen, kind)
    await pilot.pause()
    return screen


async def end_of_run(pilot: Pilot[Any]) -> EndScreen:
    """The end modal, once the engine's thread is done too."""
    end = await wait_screen(pilot, EndScreen)
    app = pilot.app
    assert isinstance(app, FixloopApp)
    await wait_for(pilot, lambda: not app.running, "the engine's thread to finish")
    return end


async def decide(pilot: Pilot[Any], end: EndScreen, key: str) -> None:
    await pilot.press(key)
    await wait_for(pilot, lambda: end.finished is not None and not end.busy, "the git work")


def run_events(app: FixloopApp) -> list[Event]:
    return read_events(run_path(app.project, app.main.view.run_id) / "events.jsonl")


def branch_subjects(root: Path, branch: str) -> list[str]:
    return [c.summary for c in git.Repo(root).iter_commits(branch, max_count=5)]


def text_of(screen: Screen[Any], selector: str) -> str:
    return str(screen.query_one(selector, Static).render())


def report_written(path: str) -> bool:
    return Path(path).is_file()


def history_statuses(app: FixloopApp) -> list[str]:
    table = app.main.query_one(DataTable)
    return [str(table.get_row_at(i)[1]) for i in range(table.row_count)]


# -- opening ----------------------------------------------------------------------------------


def test_opening_the_app_imports_neither_litellm_nor_the_runner() -> None:
    probe = (
        "import sys, tui.app; "
        "print(sorted(m for m in ('litellm', 'openai', 'engine.run.start') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, check=True
    )
    assert done.stdout.strip() == "[]"


async def test_the_first_frame_asks_for_the_task_while_the_project_is_checked(
    model_server: ScriptedModelServer, project: Path
) -> None:
    app = make_app(model_server, project, task=None)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, TaskScreen)
        assert "checking the project in the sandbox" in text_of(screen, "#state-text")
        assert screen.query_one("#task", TextArea).text == "Make the failing tests pass."
        assert screen.query_one("#task", TextArea).has_focus
        await pilot.press("escape")
    assert not app.running
    assert model_server.count == 0


async def model_checked(pilot: Pilot[Any]) -> ModelProblem:
    screen = await wait_screen(pilot, TaskScreen)
    problem = screen.query_one(ModelProblem)
    await wait_for(pilot, lambda: problem.checked, "the model's preflight")
    await pilot.pause()
    return problem


async def test_the_task_screen_says_at_once_that_the_model_has_no_key(
    model_server: ScriptedModelServer, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    app = make_app(model_server, project, task=None)
    async with app.run_test(size=(80, 24)) as pilot:
        problem = await model_checked(pilot)
        assert problem.display
        said = str(problem.render())
        assert said.startswith("the model cannot be called: no API key for openai")
        assert "set OPENAI_API_KEY" in said
        assert "checking the project in the sandbox" in text_of(app.screen, "#state-text")
        await pilot.press("escape")
    assert model_server.count == 0


async def test_with_its_key_the_model_line_stays_hidden(
    model_server: ScriptedModelServer, project: Path
) -> None:
    app = make_app(model_server, project, task=None)
    async with app.run_test(size=(80, 24)) as pilot:
        problem = await model_checked(pilot)
        assert (problem.problem, problem.display) == (None, False)
        await pilot.press("escape")


async def test_starting_anyway_ends_as_a_usage_error_with_no_branch(
    model_server: ScriptedModelServer, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    app = make_app(model_server, project, task=None)
    async with app.run_test(size=SIZE) as pilot:
        await model_checked(pilot)
        await pilot.press("ctrl+s")  # enter is a new line in the task
        end = await end_of_run(pilot)
        assert end.outcome.status == "error"
        assert end.outcome.reason.startswith("no API key for openai (openai/scripted)")
        assert not end.outcome.decidable
    assert app.exit_status == 2
    assert [h.name for h in git.Repo(project).heads] == ["main"]
    assert model_server.count == 0


# -- keys on a finished run (fixed data, no sandbox) -----------------------------------------


async def finished_app(pilot: Pilot[Any]) -> FixloopApp:
    app = pilot.app
    assert isinstance(app, FixloopApp)
    await showing(finished_run())(pilot)
    return app


async def test_o_switches_the_feedback_pane_between_packet_and_model_output() -> None:
    app = app_in("dark")
    async with app.run_test(size=SIZE) as pilot:
        await finished_app(pilot)
        feedback = app.main.query_one(FeedbackPane)
        assert feedback.tab == "packet"
        await pilot.press("o")
        assert feedback.tab == "model"
        await pilot.press("o")
        assert feedback.tab == "packet"


async def test_moving_in_the_history_moves_every_pane_and_l_follows_the_live_one() -> None:
    app = app_in("dark")
    async with app.run_test(size=SIZE) as pilot:
        await finished_app(pilot)
        assert app.main.selected == 2
        await pilot.press("up")
        await settle(pilot)
        assert app.main.selected == 1
        assert not app.main.follow
        assert "+    return sum(len(w) for w in found) / len(found)" in str(
            app.main.query_one("#diff-text", Static).render()
        )
        assert "1 of 5 tests failing" in text_of(app.main, "#packet-text")
        await pilot.press("l")
        await settle(pilot)
        assert (app.main.selected, app.main.follow) == (2, True)


async def test_f_shows_the_next_file_under_repair() -> None:
    app = app_in("dark")
    async with app.run_test(size=SIZE) as pilot:
        await finished_app(pilot)
        code = app.main.query_one(CodePane)
        assert [f.path for f in code.files] == ["textstats/core.py", "tests/test_core.py"]
        assert code.current is not None
        assert code.current.path == "textstats/core.py"
        await pilot.press("f")
        assert code.current.path == "tests/test_core.py"
        assert "tests/test_core.py" in str(code.border_title)


async def test_the_four_panes_survive_a_resize_down_to_80x24() -> None:
    app = app_in("dark")
    async with app.run_test(size=SIZE) as pilot:
        await finished_app(pilot)
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        for pane in (CodePane, FeedbackPane, HistoryPane, DiffPane):
            region = app.main.query_one(pane).region
            assert region.width >= 38, pane.__name__
            assert region.height >= 9, pane.__name__
        assert app.main.query_one(RunHeader).region.height == 2
        await pilot.press("up")
        await settle(pilot)
        assert app.main.selected == 1


async def test_every_action_is_in_the_command_palette() -> None:
    app = app_in("dark")
    async with app.run_test(size=SIZE) as pilot:
        await finished_app(pilot)
        titles = {command.title for command in app.get_system_commands(app.main)}
        for wanted in ("Mode", "Code: next file", "Feedback", "History", "Theme: light"):
            assert any(title.startswith(wanted) for title in titles), wanted
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"switch step", "enter")
        await wait_for(pilot, lambda: app.gate.mode == "auto", "the mode to switch")
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"theme light", "enter")
        await wait_for(pilot, lambda: app.theme == "fixloop-light", "the theme to switch")


async def test_a_theme_chosen_in_the_app_is_remembered_but_a_flag_wins() -> None:
    from tui.state import remembered_theme

    settings = Settings(model="openai/gpt-4o-mini", sandbox="gvisor")
    first = FixloopApp(Path("/home/you/textstats"), settings, autostart=False)
    async with first.run_test(size=SIZE) as pilot:
        assert first.theme == "fixloop-dark"
        await pilot.pause()
        first.theme = "fixloop-high-contrast"
        await wait_for(pilot, lambda: remembered_theme() is not None, "the theme to be saved")
    assert remembered_theme() == "fixloop-high-contrast"
    again = FixloopApp(Path("/home/you/textstats"), settings, autostart=False)
    async with again.run_test(size=SIZE):
        assert again.theme == "fixloop-high-contrast"
    flagged = settings.model_copy(update={"theme": "light"})
    told = FixloopApp(Path("/home/you/textstats"), flagged, autostart=False)
    async with told.run_test(size=SIZE):
        assert told.theme == "fixloop-light"
    assert remembered_theme() == "fixloop-high-contrast"


async def test_the_review_modal_puts_its_decisions_in_the_palette() -> None:
    app = app_in("dark")
    async with app.run_test(size=SIZE) as pilot:
        await finished_app(pilot)
        request = review_request()
        review = ReviewScreen(request)
        await app.push_screen(review)
        titles = [command.title for command in app.get_system_commands(review)]
        assert "Review: approve (a)" in titles
        assert "Review: allow test edits (t)" in titles
        await pilot.press("x")
        await wait_screen(pilot, ConfirmScreen)
        await pilot.press("y")
        await pilot.pause()
        assert app.screen is app.main


# -- step mode --------------------------------------------------------------------------------


@sandboxed
async def test_step_mode_runs_to_ok_with_an_approval_per_proposal(
    model_server: ScriptedModelServer, project: Path
) -> None:
    model_server.script(
        reply(answer("use true division in mean_word_length", MEAN_FIX)),
        reply(answer("return n words, not n - 1", TOP_FIX)),
    )
    app = make_app(model_server, project, task=None)
    async with app.run_test(size=SIZE) as pilot:
        task_screen = await wait_screen(pilot, TaskScreen)
        await wait_for(
            pilot,
            lambda: "3 passed, 2 failed" in text_of(task_screen, "#state-text"),
            "the verifier's verdict on the checkout",
        )
        task_screen.query_one("#task", TextArea).clear()
        await pilot.press(*"Fix the word stats", "enter", *"in textstats/core.py", "ctrl+s")
        first = await wait_screen(pilot, ReviewScreen)
        assert first.request.n == 1
        assert "+    return sum(len(w) for w in found) / len(found)" in first.diff_text()
        assert "use true division" in text_of(first, "#explanation")
        await pilot.press("a")
        second = await wait_screen(pilot, ReviewScreen, after=first)
        assert second.request.n == 2
        assert "+    return counts.most_common(n)" in second.diff_text()
        await pilot.press("a")
        end = await end_of_run(pilot)
        assert end.outcome.status == "ok"
        assert end.outcome.reason == "verified green on iteration 2"
        assert history_statuses(app) == ["failing", "failing", "ok"]
        header = str(app.main.query_one(RunHeader).render())
        assert "iteration 2/4" in header
        assert "sandbox gvisor" in header
        streamed = app.main.query_one(FeedbackPane).answer_text
        assert '"explanation": "return n words, not n - 1"' in streamed
        # Once whole, the answer is laid out a key per line, not left as one line of JSON.
        await wait_for(
            pilot,
            lambda: (
                'explanation: "return n words, not n - 1"'
                in str(app.main.query_one("#model-log", Static).render())
            ),
            "the answer laid out",
        )
    assert model_server.count == 2
    started = next(e for e in run_events(app) if isinstance(e, RunStarted))
    assert started.task == "Fix the word stats\nin textstats/core.py"
    assert branch_subjects(project, end.outcome.branch)[:2] == [
        "fixloop[iter 2/4]: return n words, not n - 1",
        "fixloop[iter 1/4]: use true division in mean_word_length",
    ]
    assert app.exit_status == 0


@sandboxed
async def test_edit_then_approve_commits_the_persons_own_version(
    model_server: ScriptedModelServer, project: Path
) -> None:
    model_server.script(reply(answer("use true division", MEAN_FIX)))
    app = make_app(model_server, project)
    async with app.run_test(size=SIZE) as pilot:
        review = await wait_screen(pilot, ReviewScreen)
        await pilot.press("e")
        editor = await wait_screen(pilot, EditorScreen)
        area = editor.query_one(TextArea)
        assert "/ len(found)" in area.text  # the proposal's version, to start from
        area.load_text(area.text.replace("most_common(n - 1)", "most_common(n)"))
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: app.screen is review, "the review to come back")
        assert "+    return counts.most_common(n)" in review.diff_text()
        assert "your edit" in text_of(review, "#notice")
        await pilot.press("a")
        end = await end_of_run(pilot)
        assert end.outcome.status == "ok"
    assert model_server.count == 1
    assert branch_subjects(project, end.outcome.branch)[0] == "fixloop[iter 1/4]: edited by you"
    resolved = [e for e in run_events(app) if isinstance(e, ReviewResolved)]
    assert [(e.decision, e.note) for e in resolved] == [("edit", "edited by you")]


# Three answers for `--candidates 3`, asked at once (which candidate gets which may vary): the
# ranking's best is RIGHT (ok, the smallest diff); ALT is green too, with a bigger diff.
RIGHT = answer("fix the mean and top_words", MEAN_FIX, TOP_FIX)
ALT = answer(
    "sum the lengths with map and divide exactly; return n words",
    {**MEAN_FIX, "replace": "# exact, not floor\n    return sum(map(len, found)) / len(found)"},
    TOP_FIX,
)
WRONG = answer("fix the mean only", MEAN_FIX)


@sandboxed
async def test_the_person_picks_a_candidate_that_is_not_the_best_and_its_diff_is_committed(
    model_server: ScriptedModelServer, project: Path
) -> None:
    model_server.script(reply(RIGHT), reply(ALT), reply(WRONG))
    app = make_app(model_server, project, candidates=3)
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_screen(pilot, CandidatesScreen)
        views = screen.request.candidates
        assert sorted(v.verdict for v in views) == ["failing", "ok", "ok"]
        alt = next(v for v in views if v.explanation.startswith("sum the lengths"))
        assert screen.request.best.k != alt.k  # the policy would have taken another
        await pilot.press(str(alt.k))
        assert "+    return sum(map(len, found)) / len(found)" in screen.diff_text()
        await pilot.press("enter")
        end = await end_of_run(pilot)
        assert end.outcome.status == "ok"
        assert end.outcome.reason == "verified green on iteration 1"
        assert history_levers(app) == [
            "1 · candidates 2-3 asked in one request (n = 2)",
            f"1 · candidate {alt.k} of 3 chosen by you",
        ]
    # The server ignores `n`: of the two asked together, one answer came, and the third was
    # asked on its own.
    assert model_server.count == 3
    repo = git.Repo(project)
    branch = end.outcome.branch
    assert branch_subjects(project, branch)[0] == (
        "fixloop[iter 1/4]: sum the lengths with map and divide exactly; return n words"
    )
    committed = repo.git.diff(f"{branch}~1", branch, "--", "textstats/core.py")
    # What was committed is what the person picked, line for line.
    assert changed_lines(committed) == changed_lines(alt.diff)
    chosen = [e for e in run_events(app) if isinstance(e, CandidateChosen)]
    assert [(e.k, e.why, e.by) for e in chosen] == [(alt.k, "chosen by you", "person")]


@sandboxed
async def test_ctrl_s_rejects_every_candidate_and_the_model_is_asked_again_with_the_note(
    model_server: ScriptedModelServer, project: Path
) -> None:
    model_server.script(reply(RIGHT), reply(WRONG), reply(RIGHT), reply(WRONG))
    app = make_app(model_server, project, candidates=2)
    async with app.run_test(size=SIZE) as pilot:
        first = await wait_screen(pilot, CandidatesScreen)
        await pilot.press("n", *"none of these: name the rounding", "ctrl+s")
        second = await wait_screen(pilot, CandidatesScreen, after=first)
        assert second.request.n == 2
        await pilot.press("a")
        end = await end_of_run(pilot)
        assert end.outcome.status == "ok"
        assert history_statuses(app) == ["failing", "rejected", "ok"]
    told = model_server.requests[2].body["messages"][-1]["content"]
    assert "None of your last 2 answers were applied: the reviewer rejected them all." in told
    assert "The reviewer said: none of these: name the rounding." in told
    resolved = [e for e in run_events(app) if isinstance(e, ReviewResolved)]
    assert [(e.n, e.decision, e.comment) for e in resolved] == [
        (1, "reject", "none of these: name the rounding")
    ]
    assert [e.n for e in run_events(app) if isinstance(e, CandidateChosen)] == [2]


def changed_lines(diff: str) -> list[str]:
    """A diff's added and removed lines, without its file headers."""
    return [
        line
        for line in diff.splitlines()
        if line.startswith(("+", "-")) and not line.startswith(("+++", "---"))
    ]


def history_levers(app: FixloopApp) -> list[str]:
    return str(app.main.query_one("#levers", Static).render()).splitlines()


@sandboxed
async def test_escape_leaves_the_editor_without_changing_the_proposal(
    model_server: ScriptedModelServer, project: Path
) -> None:
    model_server.script(reply(answer("true division; n words", MEAN_FIX, TOP_FIX)))
    app = make_app(model_server, project)
    async with app.run_test(size=SIZE) as pilot:
        review = await wait_screen(pilot, ReviewScreen)
        await pilot.press("e")
        editor = await wait_screen(pilot, EditorScreen)
        editor.query_one(TextArea).load_text("garbage")
        await pilot.press("escape")  # typed edits: it asks before dropping them
        await wait_screen(pilot, ConfirmScreen)
        await pilot.press("y")
        await wait_for(pilot, lambda: app.screen is review, "the review to come back")
        assert review.edited is None
        await pilot.press("a")
        end = await end_of_run(pilot)
        assert end.outcome.status == "ok"
    subject = branch_subjects(project, end.outcome.branch)[0]
    assert subject == "fixloop[iter 1/4]: true division; n words"


@sandboxed
async def test_abort_at_review_ends_the_run_aborted_and_keeps_its_trail(
    model_server: ScriptedModelServer, project: Path
) -> None:
    model_server.script(reply(answer("use true division", MEAN_FIX)))
    app = make_app(model_server, project)
    async with app.run_test(size=SIZE) as pilot:
        await wait_screen(pilot, ReviewScreen)
        await pilot.press("x")
        await wait_screen(pilot, ConfirmScreen)
        await pilot.press("y")
        end = await end_of_run(pilot)
        assert end.outcome.status == "aborted"
        assert end.outcome.reason == "aborted by you at review"
        assert end.outcome.report.endswith("report.md")
    assert report_written(end.outcome.report)
    assert app.exit_status == 130
    assert model_server.count == 1


@sandboxed
async def test_x_stops_a_run_while_the_model_is_answering(
    model_server: ScriptedModelServer, project: Path
) -> None:
    model_server.script(hang(60))
    app = make_app(model_server, project)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: model_server.count == 1, "the model request")
        await pilot.press("x")
        await wait_screen(pilot, ConfirmScreen)
        await pilot.press("y")
        end = await end_of_run(pilot)
        assert end.outcome.status == "aborted"
        assert history_statuses(app)[-1] == "aborted"
    assert app.exit_status == 130


@sandboxed
async def test_q_then_abort_mid_run_ends_the_run_before_the_app_exits(
    model_server: ScriptedModelServer, project: Path
) -> None:
    model_server.script(hang(60))
    app = make_app(model_server, project)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: model_server.count == 1, "the model request")
        await pilot.press("q")
        await wait_screen(pilot, QuitScreen)
        await pilot.press("x")  # abort: the run ends for good
        await wait_for(pilot, lambda: app.return_code is not None, "the app to exit")
    assert not app.running
    assert app.return_value == 130
    assert app.outcome is not None
    assert app.outcome.status == "aborted"


@sandboxed
async def test_a_hang_up_at_the_review_stops_the_run_resumable_and_exits(
    model_server: ScriptedModelServer, project: Path
) -> None:
    # What SIGHUP, SIGTERM or a closed terminal call (tests/tui/test_hangup.py starts the
    # app on a pty for those); here the run waits at a review, not on the model.
    model_server.script(reply(answer("use true division", MEAN_FIX)))
    app = make_app(model_server, project)
    async with app.run_test(size=SIZE) as pilot:
        await wait_screen(pilot, ReviewScreen)
        app.hang_up("the terminal closed")
        app.hang_up("the terminal closed (SIGHUP)")  # a second one changes nothing
        await wait_for(pilot, lambda: app.return_code is not None, "the app to exit")
    assert app.stopped == app.main.view.run_id
    assert app.return_value == 130
    stopped = [e for e in run_events(app) if isinstance(e, RunStopped)]
    assert [e.reason for e in stopped] == ["stopped: the terminal closed"]


async def test_a_hang_up_with_no_run_exits_at_once() -> None:
    settings = Settings(model="openai/gpt-4o-mini", sandbox="gvisor")
    app = FixloopApp(Path("/home/you/textstats"), settings, autostart=False)
    async with app.run_test(size=SIZE) as pilot:
        app.hang_up("the terminal closed")
        await wait_for(pilot, lambda: app.return_code is not None, "the app to exit")
    assert app.return_value == 0


@sandboxed
async def test_n_rejects_a_proposal_with_a_note_and_the_model_is_asked_again_with_it(
    model_server: ScriptedModelServer, project: Path
) -> None:
    model_server.script(
        reply(answer("floor division is fine", MEAN_FIX)),
        reply(answer("true division; n words", MEAN_FIX, TOP_FIX)),
    )
    app = make_app(model_server, project)
    async with app.run_test(size=SIZE) as pilot:
        first = await wait_screen(pilot, ReviewScreen)
        await pilot.press("n", *"wrong: also return n words", "ctrl+s")
        second = await wait_screen(pilot, ReviewScreen, after=first)
        assert second.request.n == 2
        assert "last check: 3 passed, 2 failed (before any edit)" in text_of(second, "#notice")
        await pilot.press("a")
        end = await end_of_run(pilot)
        assert end.outcome.status == "ok"
        assert history_statuses(app) == ["failing", "rejected", "ok"]
    told = model_server.requests[1].body["messages"][-1]["content"]
    assert "The reviewer said: wrong: also return n words." in told
    assert branch_subjects(project, end.outcome.branch)[0] == (
        "fixloop[iter 2/4]: true division; n words"
    )
    resolved = [e for e in run_events(app) if isinstance(e, ReviewResolved)]
    assert [(e.decision, e.comment) for e in resolved] == [
        ("reject", "wrong: also return n words"),
        ("approve", ""),
    ]


@sandboxed
async def test_q_then_stop_at_the_review_keeps_the_run_resumable(
    model_server: ScriptedModelServer, project: Path
) -> None:
    model_server.script(reply(answer("use true division", MEAN_FIX)))
    app = make_app(model_server, project)
    async with app.run_test(size=SIZE) as pilot:
        await wait_screen(pilot, ReviewScreen)
        await pilot.press("q")
        await wait_screen(pilot, QuitScreen)
        await pilot.press("p")
        await wait_for(pilot, lambda: app.return_code is not None, "the app to exit")
    assert app.stopped == app.main.view.run_id
    assert app.outcome is None  # no ending: `resume` goes on from here
    assert app.return_value == 130
    kinds = [e.type for e in run_events(app)]
    assert kinds[-1] == "RunStopped"
    assert "RunFinished" not in kinds


@sandboxed
async def test_q_then_stop_while_the_model_answers_keeps_the_run_resumable(
    model_server: ScriptedModelServer, project: Path
) -> None:
    model_server.script(hang(60))
    app = make_app(model_server, project)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: model_server.count == 1, "the model request")
        await pilot.press("q")
        await wait_screen(pilot, QuitScreen)
        await pilot.press("p")
        await wait_for(pilot, lambda: app.return_code is not None, "the app to exit")
    assert app.stopped == app.main.view.run_id
    kinds = [e.type for e in run_events(app)]
    assert kinds[-1] == "RunStopped"
    assert "RunFinished" not in kinds


# -- auto mode and switching ------------------------------------------------------------------


@sandboxed
async def test_m_switches_to_auto_and_back_while_the_run_goes_on(
    model_server: ScriptedModelServer, project: Path
) -> None:
    model_server.script(
        reply(answer("use true division", MEAN_FIX)),
        reply(answer("return n words", TOP_FIX)),
    )
    app = make_app(model_server, project)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("m")
        assert app.gate.mode == "auto"
        assert "auto mode" in str(app.main.query_one(RunHeader).render())
        first = lambda: app.main.view.iterations.get(1)  # noqa: E731
        await wait_for(pilot, lambda: (it := first()) is not None and it.decision != "", "1")
        assert not isinstance(app.screen, ReviewScreen)
        await pilot.press("m")
        assert app.gate.mode == "step"
        review = await wait_screen(pilot, ReviewScreen)
        assert review.request.n == 2
        await pilot.press("a")
        end = await end_of_run(pilot)
        assert end.outcome.status == "ok"
    resolved = [e for e in run_events(app) if isinstance(e, ReviewResolved)]
    assert [(e.n, e.note, e.by) for e in resolved] == [
        (1, "auto mode", "policy"),
        (2, "", "person"),
    ]


# -- pause --------------------------------------------------------------------------------------


def header_text(app: FixloopApp) -> str:
    return str(app.main.query_one(RunHeader).render())


@sandboxed
async def test_p_holds_the_loop_before_its_next_iteration_and_p_lets_it_go_on(
    model_server: ScriptedModelServer, project: Path
) -> None:
    model_server.script(
        reply(answer("use true division", MEAN_FIX)),
        reply(answer("return n words", TOP_FIX)),
    )
    app = make_app(model_server, project, approve="auto")
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.running, "the run to start")
        await pilot.press("p")
        assert app.gate.paused
        await wait_for(
            pilot, lambda: "paused before iteration 1" in header_text(app), "the loop to hold"
        )
        await pilot.pause(1.0)
        assert model_server.count == 0, "a paused loop asked the model"
        assert app.main.view.iterations.keys() == {0}
        await pilot.press("p")
        assert not app.gate.paused
        end = await end_of_run(pilot)
        assert end.outcome.status == "ok"
        assert "paused" not in header_text(app)
    assert model_server.count == 2


@sandboxed
async def test_x_while_paused_ends_the_run_aborted_without_asking_the_model(
    model_server: ScriptedModelServer, project: Path
) -> None:
    app = make_app(model_server, project)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.running, "the run to start")
        await pilot.press("p")
        await wait_for(
            pilot, lambda: "paused before iteration 1" in header_text(app), "the loop to hold"
        )
        await pilot.press("x")
        await wait_screen(pilot, ConfirmScreen)
        await pilot.press("y")
        end = await end_of_run(pilot)
        assert end.outcome.status == "aborted"
        assert end.outcome.reason == "aborted by you"
    assert model_server.count == 0
    assert app.exit_status == 130


# -- suspicious passes ------------------------------------------------------------------------


@sandboxed
async def test_a_suspicious_pass_accepted_ends_ok_and_is_recorded(
    model_server: ScriptedModelServer, project: Path
) -> None:
    model_server.script(reply(answer("fix the mean, skip the other", MEAN_FIX, SKIP_TOP)))
    app = make_app(model_server, project, allow_test_edits=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_screen(pilot, ReviewScreen)
        await pilot.press("a")
        doubt = await wait_screen(pilot, SuspiciousPassScreen)
        assert any("@pytest.mark.skip" in reason for reason in doubt.request.reasons)
        assert "+@pytest.mark.skip" in doubt.request.test_diff
        await pilot.press("a")
        end = await end_of_run(pilot)
        assert end.outcome.status == "ok"
        assert end.outcome.reason.startswith("suspicious pass accepted (accepted by you)")
        assert history_statuses(app)[-1] == "accepted"
    resolved = [e for e in run_events(app) if isinstance(e, ReviewResolved) and e.kind == "pass"]
    assert [(e.decision, e.note) for e in resolved] == [("accept", "accepted by you")]


@sandboxed
async def test_t_lets_a_test_edit_through_and_a_rejected_pass_keeps_repairing(
    model_server: ScriptedModelServer, project: Path
) -> None:
    model_server.script(
        reply(answer("fix the mean, skip the other", MEAN_FIX, SKIP_TOP)),
        reply(answer("n words", TOP_FIX)),
    )
    app = make_app(model_server, project)
    async with app.run_test(size=SIZE) as pilot:
        review = await wait_screen(pilot, ReviewScreen)
        assert review.request.held_back == ["tests/test_core.py"]
        assert "will be held back" in text_of(review, "#notice")
        await pilot.press("t")
        assert "WILL be changed" in text_of(review, "#notice")
        await pilot.press("a")
        doubt = await wait_screen(pilot, SuspiciousPassScreen)
        assert doubt.request.n == 1
        await pilot.press("ctrl+s")
        # The skip is reverted on the branch, so the honest fix raises no doubt again.
        second = await wait_screen(pilot, ReviewScreen)
        assert second.request.n == 2
        assert second.request.held_back == []
        await pilot.press("a")
        end = await end_of_run(pilot)
        assert end.outcome.status == "ok"
    assert model_server.count == 2
    told = model_server.requests[1].body["messages"][-1]["content"]
    assert "the pass was rejected as not honest" in told
    assert "test_top_words_returns_n" in told  # the packet of what still failed
    assert app.exit_status == 0


# -- the end of a run -------------------------------------------------------------------------


async def finished_ok(pilot: Pilot[Any]) -> EndScreen:
    await wait_screen(pilot, ReviewScreen)
    await pilot.press("a")
    end = await end_of_run(pilot)
    assert end.outcome.status == "ok"
    return end


@sandboxed
async def test_accept_squashes_the_run_onto_the_users_branch(
    model_server: ScriptedModelServer, project: Path
) -> None:
    model_server.script(reply(answer("true division; n words", MEAN_FIX, TOP_FIX)))
    repo = git.Repo(project)
    start = repo.head.commit.hexsha
    app = make_app(model_server, project)
    async with app.run_test(size=SIZE) as pilot:
        end = await finished_ok(pilot)
        # Before deciding, the modal shows the whole change the accept brings, both fixes.
        await wait_for(pilot, lambda: end.outcome.diff is not None, "the squash diff")
        squash = text_of(end, "#squash .diff-lines")
        assert "+    return sum(len(w) for w in found) / len(found)" in squash
        assert "+    return counts.most_common(n)" in squash
        await decide(pilot, end, "a")
        assert end.finished is not None
        assert end.finished.done
        assert end.finished.commit is not None
        assert end.finished.commit[:10] in text_of(end, "#result")
    head = repo.head.commit
    assert head.hexsha == end.finished.commit
    assert [p.hexsha for p in head.parents] == [start]
    assert head.summary == "Fix textstats."
    assert repo.active_branch.name == "main"
    assert "most_common(n)" in (project / "textstats" / "core.py").read_text()
    assert not repo.is_dirty(untracked_files=False)
    assert end.outcome.branch not in [b.name for b in repo.branches]


@sandboxed
async def test_r_at_the_end_of_a_run_that_failed_opens_its_report(
    model_server: ScriptedModelServer, project: Path
) -> None:
    from textual.widgets import Markdown

    from tui.screens.report import ReportScreen

    model_server.script(reply(answer("true division only", MEAN_FIX)))
    app = make_app(model_server, project, approve="auto", max_iters=1)
    async with app.run_test(size=SIZE) as pilot:
        end = await end_of_run(pilot)
        assert end.outcome.status == "exhausted"
        assert end.outcome.report.endswith("report.md")
        await pilot.press("r")
        report = await wait_screen(pilot, ReportScreen)
        await wait_for(
            pilot,
            lambda: "test_top_words_returns_n" in report.query_one(Markdown).source,
            "the report's text",
        )
        written = Path(end.outcome.report).read_text()  # noqa: ASYNC240 - a small local file
        assert report.query_one(Markdown).source == written
        await pilot.press("escape")
        await wait_screen(pilot, EndScreen)


@sandboxed
async def test_keep_leaves_the_branch_and_the_checkout_alone(
    model_server: ScriptedModelServer, project: Path
) -> None:
    model_server.script(reply(answer("true division; n words", MEAN_FIX, TOP_FIX)))
    repo = git.Repo(project)
    start = repo.head.commit.hexsha
    app = make_app(model_server, project)
    async with app.run_test(size=SIZE) as pilot:
        end = await finished_ok(pilot)
        await decide(pilot, end, "k")
        assert end.finished is not None
        assert end.finished.done
        assert "kept on branch" in text_of(end, "#result")
        assert app.screen is end  # it stays up to show what was done; q quits from there
        await pilot.press("q")
        await pilot.pause()
        assert app.return_value == 0
    assert repo.head.commit.hexsha == start
    assert end.outcome.branch in [b.name for b in repo.branches]
    assert "most_common(n - 1)" in (project / "textstats" / "core.py").read_text()


@sandboxed
async def test_discard_deletes_the_branch(model_server: ScriptedModelServer, project: Path) -> None:
    model_server.script(reply(answer("true division; n words", MEAN_FIX, TOP_FIX)))
    repo = git.Repo(project)
    start = repo.head.commit.hexsha
    app = make_app(model_server, project)
    async with app.run_test(size=SIZE) as pilot:
        end = await finished_ok(pilot)
        await pilot.press("x")
        await wait_screen(pilot, ConfirmScreen)
        await decide(pilot, end, "y")
        assert end.finished is not None
        assert end.finished.done
    assert repo.head.commit.hexsha == start
    assert end.outcome.branch not in [b.name for b in repo.branches]
    assert not worktree_path(project, app.main.view.run_id).exists()


@sandboxed
async def test_a_refused_accept_says_why_and_discard_still_works(
    model_server: ScriptedModelServer, project: Path
) -> None:
    model_server.script(reply(answer("true division; n words", MEAN_FIX, TOP_FIX)))
    repo = git.Repo(project)
    app = make_app(model_server, project)
    async with app.run_test(size=SIZE) as pilot:
        end = await finished_ok(pilot)
        core = project / "textstats" / "core.py"
        core.write_text(core.read_text() + "\n# the person's own edit\n")
        await decide(pilot, end, "a")
        assert end.finished is not None
        assert not end.finished.done
        assert "accept refused" in text_of(end, "#result")
        assert "you changed textstats/core.py" in text_of(end, "#result")
        await pilot.press("x")
        await wait_screen(pilot, ConfirmScreen)
        await decide(pilot, end, "y")
        await wait_for(pilot, lambda: end.finished is not None and end.finished.done, "discard")
    assert "# the person's own edit" in core.read_text()
    assert end.outcome.branch not in [b.name for b in repo.branches]


# -- past runs ----------------------------------------------------------------------------------


@sandboxed
async def test_a_past_run_opens_read_only_from_the_runs_list_and_steps_through(
    model_server: ScriptedModelServer, project: Path
) -> None:
    from engine.run.gate import PolicyGate
    from engine.run.start import start_run

    model_server.script(
        reply(answer("use true division", MEAN_FIX)),
        reply(answer("return n words, not n - 1", TOP_FIX)),
    )
    settings = load_settings(
        project,
        {"model": "openai/scripted", "api_base": model_server.base_url, "task": "Fix it."},
        environ={},
        user_config=project / "no-user-config.toml",
    )
    result = await start_run(project, settings, gate=PolicyGate())
    assert result.status == "ok"
    head = git.Repo(project).head.commit.hexsha
    app = FixloopApp(project, settings, autostart=False, browse="")
    async with app.run_test(size=SIZE) as pilot:
        runs = await wait_screen(pilot, RunsScreen)
        await wait_for(pilot, lambda: runs.runs is not None, "the list of runs")
        table = runs.query_one(DataTable)
        assert table.row_count == 1
        assert [str(c) for c in table.get_row_at(0)][2:] == ["ok", "undecided", "2", "Fix it."]
        await pilot.press("enter")
        replay = await wait_screen(pilot, ReplayScreen)
        await wait_for(pilot, lambda: bool(replay.view.run_id), "the run's trail")
        assert replay.view.run_id == result.run_id
        assert replay.selected == 0
        assert "finished: ok" in str(replay.query_one(RunHeader).render())
        await pilot.press("]")
        await wait_for(
            pilot,
            lambda: (
                "+    return sum(len(w) for w in found) / len(found)"
                in replay.query_one(DiffPane).text
            ),
            "iteration 1's diff",
        )
        assert replay.selected == 1
        await pilot.press("]", "]")  # past the last one: stays there
        assert replay.selected == 2
        await wait_for(
            pilot, lambda: "most_common(n)" in replay.query_one(DiffPane).text, "iteration 2"
        )
        await pilot.press("[")
        assert replay.selected == 1
        await pilot.press("escape")
        await wait_screen(pilot, RunsScreen, after=runs)
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.return_code is not None, "the app to exit")
    assert app.return_code == 0
    assert git.Repo(project).head.commit.hexsha == head, "a replay changed the checkout"
    assert not git.Repo(project).is_dirty(untracked_files=True)


async def test_replay_of_a_missing_run_says_so_and_returns_to_the_list(tmp_path: Path) -> None:
    runs_dir(tmp_path).mkdir(parents=True)
    settings = load_settings(tmp_path, {}, environ={}, user_config=tmp_path / "none.toml")
    app = FixloopApp(tmp_path, settings, autostart=False, browse="20990101-000000-dead")
    async with app.run_test(size=SIZE) as pilot:
        runs = await wait_screen(pilot, RunsScreen)
        await wait_for(pilot, lambda: runs.runs == [], "the empty list")
        assert "no runs yet" in text_of(runs, "#runs-note")
        assert any("no run '20990101-000000-dead'" in n.message for n in app._notifications)


# -- watch mode ---------------------------------------------------------------------------------


@sandboxed
async def test_watch_mode_verifies_again_on_each_save_and_ctrl_s_starts_a_repair(
    model_server: ScriptedModelServer, project: Path
) -> None:
    from tui.screens.watch import WatchScreen

    model_server.script(reply(answer("return n words, not n - 1", TOP_FIX)))
    settings = load_settings(
        project,
        {"model": "openai/scripted", "api_base": model_server.base_url},
        environ={},
        user_config=project / "no-user-config.toml",
    )
    app = FixloopApp(project, settings, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        watching = await wait_screen(pilot, WatchScreen)
        await wait_for(
            pilot,
            lambda: "3 passed, 2 failed" in text_of(watching, "#state-text"),
            "the first verdict",
        )
        core = project / "textstats" / "core.py"
        core.write_text(core.read_text().replace(MEAN_FIX["search"], MEAN_FIX["replace"]))
        await wait_for(
            pilot,
            lambda: "4 passed, 1 failed" in text_of(watching, "#state-text"),
            "the verdict after the save",
        )
        subtitle = str(watching.query_one("#state").border_subtitle)
        assert "after a save of textstats/core.py" in subtitle
        assert watching.checks == 2
        assert model_server.count == 0, "watching alone asked the model"
        await pilot.press("ctrl+s")
        review = await wait_screen(pilot, ReviewScreen)
        assert review.request.n == 1
        await pilot.press("a")
        end = await end_of_run(pilot)
        assert end.outcome.status == "ok"
    # The run started from the checkout as saved: the uncommitted fix is its baseline.
    assert branch_subjects(project, end.outcome.branch)[:2] == [
        "fixloop[iter 1/4]: return n words, not n - 1",
        "fixloop[baseline]: your uncommitted changes",
    ]


# -- an outside editor ----------------------------------------------------------------------------


async def test_ctrl_o_edits_in_the_persons_editor_and_each_save_shows_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # An editor that runs beside the app (headless: no terminal to hand over) and saves twice.
    saves = "sleep 0.3; printf 'X = 2\\n' > \"$1\"; sleep 0.6; printf 'X = 3\\n' > \"$1\""
    monkeypatch.setenv("VISUAL", f"sh -c {shlex.quote(saves)} editor")
    app = app_in("dark")
    answers: list[dict[str, str] | None] = []
    files = [EditorFile("textstats/core.py", "X = 1\n"), EditorFile("README.md", "# r\n")]
    async with app.run_test(size=SIZE) as pilot:
        await finished_app(pilot)
        screen = EditorScreen(files)
        await app.push_screen(screen, answers.append)
        await pilot.pause()
        await pilot.press("ctrl+o")
        area = screen.query_one("#editor-0", TextArea)
        await wait_for(pilot, lambda: area.text == "X = 3\n", "the second save")
        scratch = screen.scratch
        assert scratch is not None
        assert (scratch / "textstats/core.py").is_file()
        await pilot.press("ctrl+s")
        await pilot.pause()
    assert answers == [{"textstats/core.py": "X = 3\n", "README.md": "# r\n"}]
    assert not scratch.exists(), "the editor's copies were left behind"


async def test_ctrl_o_without_an_editor_says_how_to_set_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.delenv("EDITOR", raising=False)
    app = app_in("dark")
    async with app.run_test(size=SIZE) as pilot:
        await finished_app(pilot)
        screen = EditorScreen([EditorFile("a.py", "X = 1\n")])
        await app.push_screen(screen)
        await pilot.pause()
        await pilot.press("ctrl+o")
        await pilot.pause()
        assert screen.scratch is None
        assert any("$VISUAL or $EDITOR" in n.message for n in app._notifications)


# -- spec mode from the form --------------------------------------------------------------------


@sandboxed
async def test_ctrl_n_starts_spec_mode_from_the_form_and_the_draft_is_reviewed(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    from engine.spec.definition import load_spec
    from tests.e2e.test_spec import RIGHT, SPEC, WEAK_TESTS, draft, spec_project
    from tui.screens.spec_form import SpecFormScreen

    root = spec_project(tmp_path)
    model_server.script(reply(draft("parse each part", RIGHT, WEAK_TESTS)))
    app = make_app(model_server, root, task=None)
    async with app.run_test(size=SIZE) as pilot:
        await wait_screen(pilot, TaskScreen)
        await pilot.press("ctrl+n")
        form = await wait_screen(pilot, SpecFormScreen)
        form.dismiss(load_spec(SPEC))  # the form's own filling is tested in test_spec_form
        review = await wait_screen(pilot, ReviewScreen)
        assert review.request.n == 1
        assert "durations.py" in review.diff_text()
        start = app.main.view.iterations[0]
        assert start.status == "spec"
        assert "5 examples are tests in tests/test_parse_duration_examples.py" in (
            start.explanation
        )
        await pilot.press("a")
        end = await end_of_run(pilot)
        assert end.outcome.status == "ok"
    started = next(e for e in run_events(app) if isinstance(e, RunStarted))
    assert started.config["spec"]["name"] == "parse_duration"
