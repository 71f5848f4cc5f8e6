# ruff: noqa: F811
"""Talking to a running loop, at 80x24, with the scripted model over HTTP, the real sandbox and
real git: a note typed while the model answers, and a file added from the picker, reach the
model's next request (never the one under way); `resume --file` shows a file from there on."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import git
import pytest
from textual.widgets import Input, OptionList, Static

from engine.run.events import FilesShown, PersonNoted
from tests.model_server import RecordedRequest, ScriptedModelServer, held, reply, status
from tests.projects import EXAMPLES, MEAN_FIX, TOP_FIX, answer, committed_copy, readable

# api_key and project are test_app's fixtures, taken by name.
from tests.tui.test_app import (  # noqa: F401
    api_key,
    end_of_run,
    make_app,
    project,
    run_events,
    sandboxed,
    wait_for,
    wait_screen,
)
from tui.screens.files import FilesScreen, fuzzy_matches
from tui.screens.note import NoteScreen

SMALL = (80, 24)
NOTE = "mind the empty list: len(found) may be 0"
GLOSSARY = "docs/glossary.md"
GLOSSARY_TEXT = "glossary-canary-7f3a: a word is a run of letters"
REPO = Path(__file__).parents[2]
KEY = "sk-fixloop-canary-1b6f0c2e-4d8a-4f1e-9c3b-7a2d5e8f0b14"


def prompt_of(request: RecordedRequest) -> str:
    return "\n".join(str(message.get("content", "")) for message in request.body["messages"])


def fixes_held(until: threading.Event) -> tuple[object, ...]:
    """Two iterations: the first answer (held until `until`) fixes one bug, the second the
    other, so the run asks twice and ends ok."""
    return (
        held(reply(answer("use true division in mean_word_length", MEAN_FIX)), until),
        reply(answer("return n words, not n - 1", TOP_FIX)),
    )


@pytest.fixture
def with_glossary(project: Path) -> Path:
    """The project with a tracked file no prompt shows unless someone adds it."""
    (project / "docs").mkdir()
    (project / GLOSSARY).write_text(GLOSSARY_TEXT + "\n")
    (project / "docs").chmod(0o755)
    (project / GLOSSARY).chmod(0o644)
    repo = git.Repo(project)
    repo.index.add([GLOSSARY])
    repo.index.commit("a glossary")
    return project


@sandboxed
async def test_a_note_typed_while_the_model_answers_goes_into_the_next_request_as_yours(
    model_server: ScriptedModelServer, project: Path
) -> None:
    answering = threading.Event()
    model_server.script(*fixes_held(answering))
    app = make_app(model_server, project, approve="auto")
    try:
        async with app.run_test(size=SMALL) as pilot:
            await wait_for(pilot, lambda: model_server.count == 1, "the first request")
            await pilot.press("n")
            box = await wait_screen(pilot, NoteScreen)
            box.query_one(Input).value = NOTE
            await pilot.press("enter")
            await wait_for(pilot, lambda: app.screen is not box, "the note box closed")
            levers = app.main.query_one("#levers", Static)
            await wait_for(pilot, lambda: "you: mind" in str(levers.render()), "the note shown")
            answering.set()
            await end_of_run(pilot)
    finally:
        answering.set()
    first, second = (prompt_of(request) for request in model_server.requests)
    assert NOTE not in first
    assert NOTE in second
    noted = [event for event in run_events(app) if isinstance(event, PersonNoted)]
    assert [(event.n, event.text) for event in noted] == [(2, NOTE)]


@sandboxed
async def test_escape_closes_the_note_box_and_sends_nothing(
    model_server: ScriptedModelServer, project: Path
) -> None:
    answering = threading.Event()
    model_server.script(*fixes_held(answering))
    app = make_app(model_server, project, approve="auto")
    try:
        async with app.run_test(size=SMALL) as pilot:
            await wait_for(pilot, lambda: model_server.count == 1, "the first request")
            await pilot.press("n")
            box = await wait_screen(pilot, NoteScreen)
            box.query_one(Input).value = NOTE
            await pilot.press("escape")
            await wait_for(pilot, lambda: app.screen is not box, "the note box closed")
            answering.set()
            await end_of_run(pilot)
    finally:
        answering.set()
    assert all(NOTE not in prompt_of(request) for request in model_server.requests)
    assert not [event for event in run_events(app) if isinstance(event, PersonNoted)]


@sandboxed
async def test_a_file_added_from_the_picker_is_in_the_next_request(
    model_server: ScriptedModelServer, with_glossary: Path
) -> None:
    answering = threading.Event()
    model_server.script(*fixes_held(answering))
    app = make_app(model_server, with_glossary, approve="auto")
    try:
        async with app.run_test(size=SMALL) as pilot:
            await wait_for(pilot, lambda: model_server.count == 1, "the first request")
            await pilot.press("plus")
            picker = await wait_screen(pilot, FilesScreen)
            await wait_for(pilot, lambda: not picker.loading, "the project's files listed")
            await pilot.press(*"gloss")
            listed = picker.query_one(OptionList)
            await wait_for(pilot, lambda: listed.option_count == 1, "one file matching")
            await pilot.press("enter")
            await wait_for(pilot, lambda: app.screen is not picker, "the picker closed")
            answering.set()
            await end_of_run(pilot)
    finally:
        answering.set()
    first, second = (prompt_of(request) for request in model_server.requests)
    assert GLOSSARY_TEXT not in first
    assert GLOSSARY_TEXT in second
    assert f"see these files: {GLOSSARY}" in second
    shown = [event for event in run_events(app) if isinstance(event, FilesShown)]
    assert [(event.n, event.added, event.shown) for event in shown] == [(2, [GLOSSARY], [GLOSSARY])]


def fixloop(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`fixloop-tui ARGS` as the user runs it, the user's key a canary."""
    env = {
        "PATH": "/usr/bin:/bin",
        "OPENAI_API_KEY": KEY,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "PYTHONPATH": str(REPO),
    }
    return subprocess.run(
        [sys.executable, "-m", "tui.cli", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=600,
        check=False,
    )


@pytest.mark.sandbox
@pytest.mark.usefixtures("needs_gvisor")
def test_resume_with_a_file_shows_it_in_every_request_from_there_on(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    project = committed_copy(EXAMPLES / "textstats", tmp_path, "the buggy example")
    (project / "docs").mkdir()
    (project / GLOSSARY).write_text(GLOSSARY_TEXT + "\n")
    repo = git.Repo(project)
    repo.index.add([GLOSSARY])
    repo.index.commit("a glossary")
    readable(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    model_server.script(*[status(500)] * 4)  # the client's retries, every one refused
    flags = ["--model", "openai/scripted", "--api-base", model_server.base_url]
    done = fixloop(home, "run", str(project), "--headless", "--json", "--sandbox", "gvisor", *flags)
    stopped = json.loads(done.stdout)
    assert stopped["status"] == "stopped", done.stderr
    model_server.script(
        reply(answer("use true division in mean_word_length", MEAN_FIX)),
        reply(answer("return n words, not n - 1", TOP_FIX)),
    )
    done = fixloop(home, "resume", stopped["run_id"], str(project), "--json", "--file", GLOSSARY)
    assert json.loads(done.stdout)["status"] == "ok", done.stderr
    before, after = model_server.requests[:4], model_server.requests[4:]
    assert len(after) == 2
    assert all(GLOSSARY_TEXT not in prompt_of(request) for request in before)
    assert all(GLOSSARY_TEXT in prompt_of(request) for request in after)


def test_the_picker_keeps_the_names_that_hold_the_typed_letters_in_order() -> None:
    names = ["README.md", "docs/glossary.md", "textstats/core.py", "tests/test_core.py"]
    assert fuzzy_matches("gls", names) == ["docs/glossary.md"]
    assert set(fuzzy_matches("core", names)) == {"textstats/core.py", "tests/test_core.py"}
    assert fuzzy_matches("", names) == names


@sandboxed
async def test_a_file_dropped_with_minus_is_not_in_the_next_request(
    model_server: ScriptedModelServer, with_glossary: Path
) -> None:
    answering = threading.Event()
    model_server.script(*fixes_held(answering))
    app = make_app(model_server, with_glossary, approve="auto")
    try:
        async with app.run_test(size=SMALL) as pilot:
            await wait_for(pilot, lambda: model_server.count == 1, "the first request")
            await pilot.press("plus")
            adding = await wait_screen(pilot, FilesScreen)
            await wait_for(pilot, lambda: not adding.loading, "the project's files listed")
            await pilot.press(*"gloss", "enter")
            await wait_for(pilot, lambda: app.screen is not adding, "the picker closed")
            await pilot.press("minus")
            dropping = await wait_screen(pilot, FilesScreen, after=adding)
            listed = dropping.query_one(OptionList)
            assert [listed.get_option_at_index(0).id, listed.option_count] == [GLOSSARY, 1]
            await pilot.press("enter")
            await wait_for(pilot, lambda: app.screen is not dropping, "the picker closed")
            answering.set()
            await end_of_run(pilot)
    finally:
        answering.set()
    assert GLOSSARY_TEXT not in prompt_of(model_server.requests[1])
    assert not [event for event in run_events(app) if isinstance(event, FilesShown)]
