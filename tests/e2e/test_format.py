"""The fix pass end to end: `fix_cmd = "ruff format ."` from `[tool.fixloop]`, ruff itself
inside the real gVisor sandbox, the scripted model server over HTTP and real git. A badly
formatted fix ends `ok` after one model request, with the formatting in a commit of its
own; a pinned test file ruff would reformat is left as it was, and said."""

from __future__ import annotations

import json
from pathlib import Path

import git
import pytest

from engine.project.settings import load_settings
from engine.run.events import Formatted
from engine.run.gate import PolicyGate
from engine.run.run_directory import read_events
from engine.run.start import start_run
from tests.model_server import ScriptedModelServer, reply

pytestmark = [pytest.mark.sandbox, pytest.mark.usefixtures("needs_gvisor")]

TEST = "from app import VALUE\n\n\ndef test_value():\n    assert VALUE == 2\n"
UGLY_TEST = "def test_style( ):\n    assert  1 == 1\n"  # pinned: ruff would reformat it
PYPROJECT = """\
[tool.fixloop]
fix_cmd = "ruff format ."
format_cmd = "ruff format --check app.py"
"""


def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "tests").mkdir(parents=True)
    (root / "app.py").write_text("VALUE = 1\n")
    (root / "tests" / "test_app.py").write_text(TEST)
    (root / "tests" / "test_style.py").write_text(UGLY_TEST)
    (root / "pyproject.toml").write_text(PYPROJECT)
    repo = git.Repo.init(root)
    repo.git.add(A=True)
    repo.index.commit("baseline")
    return root


async def test_a_badly_formatted_fix_is_formatted_in_its_own_commit_with_no_model_call(
    model_server: ScriptedModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-format-0123456789")
    root = project(tmp_path)
    edit = {"path": "app.py", "content": "VALUE=2\n"}
    model_server.script(reply(json.dumps({"explanation": "two", "edits": [edit]})))
    settings = load_settings(
        root,
        {
            "model": "openai/scripted",
            "api_base": model_server.base_url,
            "sandbox": "gvisor",
            "edit_format": "json",
        },
    )
    assert settings.fix_cmd == "ruff format ."
    result = await start_run(root, settings, gate=PolicyGate())
    assert (result.status.value, result.reason) == ("ok", "verified green on iteration 1")
    assert model_server.count == 1
    repo = git.Repo(root)
    subjects = repo.git.log("--format=%s", result.branch).splitlines()
    assert subjects[:3] == ["fixloop[iter 1/4]: formatted", "fixloop[iter 1/4]: two", "baseline"]
    tip = repo.commit(result.branch)
    assert (tip.tree / "app.py").data_stream.read() == b"VALUE = 2\n"
    assert (tip.tree / "tests" / "test_style.py").data_stream.read() == UGLY_TEST.encode()
    events = read_events(Path(result.run_dir) / "events.jsonl")
    formatted = [e for e in events if isinstance(e, Formatted)]
    assert [(e.n, e.files, e.held_back) for e in formatted] == [
        (0, [], ["tests/test_style.py"]),
        (1, ["app.py"], ["tests/test_style.py"]),
    ]
