"""`--prompt-profile` end to end: the real CLI process, the scripted model server over HTTP
(through litellm), the real gVisor sandbox and real git, on the bundled buggy example. What
the server receives is the prompt a small model would have read."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.model_server import ScriptedModelServer, reply
from tests.projects import EXAMPLES, MEAN_FIX, TOP_FIX, answer, committed_copy

REPO = Path(__file__).parents[2]
KEY = "sk-test-e2e-0123456789"

pytestmark = [pytest.mark.sandbox, pytest.mark.usefixtures("needs_gvisor")]


def fixloop(server: ScriptedModelServer, root: Path, *extra: str) -> dict[str, Any]:
    """A headless run against the scripted server (a hosted model's name: auto is full)."""
    done = subprocess.run(
        [
            *(sys.executable, "-m", "tui.cli", str(root), "--headless", "--json"),
            *("--model", "openai/scripted", "--api-base", server.base_url),
            *("--sandbox", "gvisor", *extra),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={"PATH": "/usr/bin:/bin", "OPENAI_API_KEY": KEY, "HOME": str(root.parent)},
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def prompts_sent(server: ScriptedModelServer) -> list[tuple[str, str]]:
    """(system, user) of every request the server received."""
    found = []
    for request in server.requests:
        messages = request.body["messages"]
        found.append((messages[0]["content"], messages[-1]["content"]))
    return found


def two_fixes(server: ScriptedModelServer) -> None:
    server.script(
        reply(answer("use true division in mean_word_length", MEAN_FIX)),
        reply(answer("return n words, not n - 1", TOP_FIX)),
    )


def test_the_small_profile_changes_what_the_server_receives(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    root = committed_copy(EXAMPLES / "textstats", tmp_path / "small")
    two_fixes(model_server)
    result = fixloop(model_server, root, "--prompt-profile", "small")
    assert result["status"] == "ok"
    assert [it["status"] for it in result["iterations"]] == ["failing", "ok"]
    sent = prompts_sent(model_server)
    assert len(sent) == 2
    for system, user in sent:
        assert (
            system == "You fix bugs in Python code so that its tests pass. Never change the tests."
        )
        assert user.startswith("textstats/core.py\n```python\nimport re")
        assert "def test_word_count_empty" not in user  # no test file
        assert user.count("def mean_word_length") == 1  # the function once
        assert "textstats/__init__.py" not in user
        assert user.rsplit("\n\n", 1)[1].startswith("Answer with one JSON object")
    assert "1 test now passes that failed before" in sent[1][1]
    assert "return sum(len(w) for w in found) / len(found)" in sent[1][1]  # the edited file


def test_without_the_flag_a_hosted_model_gets_the_full_prompt(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    root = committed_copy(EXAMPLES / "textstats", tmp_path / "full")
    two_fixes(model_server)
    result = fixloop(model_server, root)
    assert result["status"] == "ok"
    system, user = prompts_sent(model_server)[0]
    assert system.startswith("You are fixloop's code repair model")
    assert user.startswith("Task: Make the failing tests pass.\n\nFiles:")
    assert "def test_word_count_empty" in user
    assert user.count("def mean_word_length") == 2
