"""A model's answer is data: nasty text (lone surrogates, escape sequences, control
characters, the user's key echoed back) neither crashes the run nor reaches a terminal, the
trail or git as it came. The sanitizer on real nasty inputs, then the answer's way from the
model server through parsing, the trail and the commit."""

from __future__ import annotations

import asyncio
import io
import json
import subprocess
import uuid
from pathlib import Path
from types import ModuleType

import pytest

from engine.edits.apply import apply
from engine.edits.parse import parse
from engine.edits.proposal import Edit
from engine.errors import EditFormatError
from engine.model.client import LiteLLMClient
from engine.model.litellm_module import load_litellm
from engine.model.types import Message
from engine.project.workspace import Workspace, iteration_message
from engine.run.events import IterationStarted, ProposalReady
from engine.run.run_directory import RunDirectory, read_events
from engine.text.untrusted import printable, valid_unicode, visible_controls
from tests.model_server import ScriptedModelServer, model_server, reply
from tui.headless import ProgressPrinter

__all__ = ["model_server"]  # the fixture, imported for the test that asks it

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:litellm")

MODULE = "def double(x):\n    return x * 3\n"
FIXED = "def double(x):\n\treturn x * 2  # ünïcode, 中文, 🙂\r\n"
# What a terminal would obey: a colour, a window title (OSC 0), a hyperlink (OSC 8), an 8-bit
# CSI clearing the screen, a bell, a carriage return that rewrites the line, a bidi override.
NASTY = (
    "\x1b[31mred\x1b[0m \x1b]0;pwned\x07title \x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\ "
    "\x9b2Jclear\x07 bell\rover \u202eevil"
)


def json_answer(explanation: str, *edits: dict[str, str]) -> str:
    """An answer in the json edit format as a model writes it: non-ASCII as JSON escapes."""
    return "```json\n" + json.dumps({"explanation": explanation, "edits": list(edits)}) + "\n```"


def canary_key() -> str:
    return f"sk-fixloop-canary-{uuid.uuid4().hex}"


def test_a_lone_surrogate_becomes_the_replacement_character_and_pairs_stay() -> None:
    assert valid_unicode("a\ud800b\udfffc 🙂") == "a\ufffdb\ufffdc 🙂"


def test_printable_drops_escape_sequences_and_controls_but_keeps_tabs_and_newlines() -> None:
    shown = printable(NASTY + "\n\tnext\x00\x7f\x85line")
    assert shown == "red title link clear bellover evil\n\tnextline"


def test_code_on_screen_shows_controls_as_pictures_and_keeps_layout() -> None:
    assert (
        visible_controls("a\x1b[2J\tb\r\n\x00\x7f\x9b\ud800")
        == "a\u241b[2J\tb\r\n\u2400\u2421\ufffd\ufffd"
    )


def test_code_keeps_tabs_carriage_returns_and_unicode_but_no_lone_surrogate() -> None:
    edit = Edit(path="pkg/mod.py", content=FIXED + "s = '\ud800'\n")
    assert edit.content == FIXED + "s = '\ufffd'\n"


def test_a_surrogate_escape_in_the_explanation_is_read_as_a_replacement_character() -> None:
    text = json_answer("fix \ud800 double", {"path": "pkg/mod.py", "content": FIXED})
    assert "\\ud800" in text  # the model's JSON escape, as finding 6 sent it
    proposal = parse(text, "json")
    assert proposal.explanation == "fix \ufffd double"
    assert proposal.edits[0].content == FIXED


def test_escape_sequences_in_the_explanation_are_removed() -> None:
    proposal = parse(json_answer(NASTY, {"path": "pkg/mod.py", "content": FIXED}), "json")
    assert proposal.explanation == printable(NASTY)
    assert not {"\x1b", "\x9b"} & set(proposal.explanation)


def test_a_path_with_a_control_character_is_refused_for_the_model() -> None:
    text = json_answer("x", {"path": "pkg/mod\x1b[2J.py", "content": FIXED})
    with pytest.raises(EditFormatError, match="control character") as refused:
        parse(text, "json")
    assert "\x1b" not in str(refused.value)


def make_project(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "mod.py").write_text(MODULE)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "commit", "-q", "-m", "base"], cwd=root, check=True)
    return root


def last_message(root: Path, rev: str) -> bytes:
    return subprocess.run(
        ["git", "log", "-1", "--format=%B", rev], cwd=root, capture_output=True, check=True
    ).stdout.rstrip(b"\n")


@pytest.mark.usefixtures("git_as_tester")
def test_a_surrogate_in_the_explanation_goes_through_the_trail_and_the_commit(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "project")
    text = json_answer(
        "fix \ud800 \x1b]0;pwned\x07double", {"path": "pkg/mod.py", "content": FIXED}
    )
    proposal = parse(text, "json")
    run_dir = RunDirectory.create(root, "r1")
    run_dir.emit(ProposalReady(n=1, explanation=proposal.explanation))
    ws = Workspace.create(root, "r1")
    apply(proposal, ws.root)
    tip = ws.commit(iteration_message(1, 4, proposal.explanation))
    assert tip is not None
    assert last_message(root, tip).decode() == "fixloop[iter 1/4]: fix \ufffd double"
    (event,) = [e for e in read_events(run_dir.events_path) if e.type == "ProposalReady"]
    assert event.explanation == "fix \ufffd double"


@pytest.mark.usefixtures("git_as_tester")
def test_a_commit_message_from_an_answer_echoing_the_users_key_has_no_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = canary_key()
    monkeypatch.setenv("OPENAI_API_KEY", key)  # where the redactor finds the user's keys
    root = make_project(tmp_path / "project")
    proposal = parse(
        json_answer(f"debug: key is {key}", {"path": "pkg/mod.py", "content": FIXED}), "json"
    )
    ws = Workspace.create(root, "r1")
    apply(proposal, ws.root)
    tip = ws.commit(iteration_message(1, 4, proposal.explanation))
    assert tip is not None
    message = last_message(root, tip).decode()
    assert key not in message
    assert message == "fixloop[iter 1/4]: debug: key is [REDACTED]"
    reflog = subprocess.run(
        ["git", "reflog", "show", "--format=%gs", ws.branch], cwd=root, capture_output=True
    ).stdout.decode()
    assert key not in reflog


def test_the_headless_printer_shows_no_key_and_no_escape_sequence(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    key = canary_key()
    monkeypatch.setenv("OPENAI_API_KEY", key)
    stream = io.StringIO()
    printer = ProgressPrinter(stream)
    printer.emit(IterationStarted(n=1, max_n=4))
    printer.emit(ProposalReady(n=1, explanation=f"\x1b]0;pwned\x07key is {key}"))
    assert stream.getvalue() == "fixloop: [1/4] proposal: key is [REDACTED]\n"


@pytest.fixture(scope="module")
def litellm_module() -> ModuleType:
    return asyncio.run(load_litellm())


async def test_a_surrogate_escape_sent_by_the_server_arrives_as_a_replacement_character(
    model_server: ScriptedModelServer, litellm_module: ModuleType
) -> None:
    model_server.script(reply("fixed \ud800 it"))  # the server's JSON carries "\ud800"
    client = LiteLLMClient(
        "openai/scripted", api_base=model_server.base_url, api_key=canary_key(), timeout_s=5
    )
    shown: list[str] = []
    completion = await client.complete(
        [Message(role="user", content="Fix it.")], on_text=shown.append
    )
    assert completion.text == "fixed \ufffd it"
    assert "".join(shown) == "fixed \ufffd it"
