"""The smoke test in a real terminal: `fixloop-tui` started in tmux on the buggy example with
the scripted model server, driven with send-keys to `ok`, read back with capture-pane.

It runs the console script exactly as a user would (a fresh process, a real pty, the real
sandbox), so it catches what Pilot cannot: the entry point, terminal set-up, the exit code.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import git
import pytest

from tests.model_server import ScriptedModelServer, reply
from tests.projects import EXAMPLES, MEAN_FIX, TOP_FIX, answer, committed_copy

pytestmark = [pytest.mark.sandbox, pytest.mark.usefixtures("needs_gvisor")]

SCRIPT = Path(sys.executable).with_name("fixloop-tui")
WAIT_S = 120.0


class Terminal:
    """One tmux session on a private server socket (no other tmux is touched)."""

    def __init__(self, socket: str, width: int = 120, height: int = 40) -> None:
        self.socket, self.width, self.height = socket, width, height

    def tmux(self, *args: str) -> str:
        # os.environ, not the C-level environment a child inherits by default: in a test
        # process something sets COLUMNS=80 LINES=24 there, and the app would believe it.
        done = subprocess.run(
            ["tmux", "-L", self.socket, *args],
            capture_output=True,
            text=True,
            check=True,
            env=dict(os.environ),
        )
        return done.stdout

    def start(self, command: str, env: dict[str, str]) -> None:
        flags = [item for name, value in env.items() for item in ("-e", f"{name}={value}")]
        size = ["-x", str(self.width), "-y", str(self.height)]
        self.tmux("new-session", "-d", "-s", "smoke", *size, *flags, command)

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "smoke")

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "smoke", *keys)

    def wait(self, ready: Callable[[str], bool], what: str) -> str:
        deadline = time.monotonic() + WAIT_S
        while True:
            screen = self.screen()
            if ready(screen):
                return screen
            assert time.monotonic() < deadline, f"timed out waiting for {what}:\n{screen}"
            time.sleep(0.2)

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True)


def app_command(root: Path, server: ScriptedModelServer) -> list[str]:
    """`fixloop-tui ROOT` on the scripted model, as a user would start it."""
    model = ["--model", "openai/scripted", "--api-base", server.base_url]
    return [str(SCRIPT), str(root), *model, "--task", "Fix textstats."]


@pytest.fixture
def terminal() -> Iterator[Terminal]:
    assert shutil.which("tmux"), "tmux is missing: `make setup` installs it"
    assert SCRIPT.is_file(), f"{SCRIPT} is missing: install the package (`make setup`)"
    term = Terminal(f"fixloop-test-{os.getpid()}")
    yield term
    term.close()


def test_the_app_in_a_real_terminal_runs_to_ok_with_two_approvals(
    terminal: Terminal, model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    root = committed_copy(EXAMPLES / "textstats", tmp_path)
    model_server.script(
        reply(answer("use true division", MEAN_FIX)),
        reply(answer("return n words, not n - 1", TOP_FIX)),
    )
    command = shlex.join(app_command(root, model_server))
    env = {"OPENAI_API_KEY": "sk-test-tmux-0123456789", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    terminal.start(f"{command}; echo EXIT=$?; sleep 600", env)

    # Wait for whole frames: a capture can catch a modal's title before its buttons.
    terminal.wait(lambda s: "iteration 1/4 · review the proposal" in s and "approve [a]" in s, "1")
    terminal.keys("a")
    terminal.wait(lambda s: "iteration 2/4 · review the proposal" in s and "approve [a]" in s, "2")
    terminal.keys("a")
    ended = terminal.wait(
        lambda s: "the run has ended" in s and "reason: verified green" in s, "the end of the run"
    )
    assert "status: ok" in ended
    assert "reason: verified green on iteration 2" in ended
    terminal.keys("Escape")
    panes = terminal.wait(lambda s: "the run has ended" not in s, "the end modal to close")
    for title in ("╭─ code", "╭─ feedback", "╭─ history", "╭─ diff"):
        assert title in panes, f"no {title!r} pane on screen:\n{panes}"
    assert "finished: ok — verified green on iteration 2" in panes, panes
    terminal.keys("q")
    terminal.wait(lambda s: "EXIT=0" in s, "the app to exit 0")
    branches = [head.name for head in git.Repo(root).heads]
    assert any(name.startswith("fixloop/") for name in branches)
    assert model_server.count == 2
