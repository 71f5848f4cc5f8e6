"""The app when nobody is left to watch it: its terminal closed (with SIGHUP, or with no signal
at all, as after `runuser` or a dropped SSH connection: stdin just hangs up) or a SIGTERM.

Each test starts the console script on a pty of its own, as a user's terminal would, lets a
run reach its first model request (held by the scripted server), then takes the terminal away.
The app must stop the run as the person's stop does (resumable, the reason in its trail) and
exit 130, its warm sandboxes closed. Before, SIGHUP and SIGTERM killed it on the spot (no word
in the trail), and a hung-up stdin left it spinning on a core for ever.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import struct
import subprocess
import termios
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import git
import pytest

from engine.run.exit_codes import EXIT_INTERRUPTED
from tests.model_server import ScriptedModelServer, held, reply
from tests.projects import EXAMPLES, MEAN_FIX, TOP_FIX, answer, committed_copy
from tests.tui.test_tmux import WAIT_S, app_command

pytestmark = [pytest.mark.sandbox, pytest.mark.usefixtures("needs_gvisor")]


class Pty:
    """The app on a pseudo-terminal that is not its controlling terminal (so closing it sends
    no SIGHUP: only the hang-up itself tells the app), its output drained as a terminal would."""

    def __init__(self, command: list[str], env: dict[str, str]) -> None:
        self.command, self.env = command, env
        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        self.output = bytearray()
        self.process = subprocess.Popen(
            command, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True
        )
        os.close(slave)
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:  # closed, by the test or by the app's end
                return
            if not chunk:
                return
            self.output += chunk

    def close(self) -> None:
        """The terminal goes away: its master end is closed."""
        if self.master >= 0:
            os.close(self.master)
            self.master = -1

    def wait(self) -> int | None:
        """The app's exit code, or None while it still runs after WAIT_S."""
        try:
            return self.process.wait(timeout=WAIT_S)
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.close()


def wait_for(ready: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not ready():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def model_env() -> dict[str, str]:
    """This process's environment with a test key for the scripted server."""
    return {
        **os.environ,
        "OPENAI_API_KEY": "sk-test-hangup-0123456789",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }


@contextmanager
def at_its_first_request(
    command: list[str], env: dict[str, str], server: ScriptedModelServer, release: threading.Event
) -> Iterator[Pty]:
    """`command` started on a pty, once it reached the scripted server (which holds the answer
    until `release`); at the end the answer is released and the process killed if it still runs."""
    pty = Pty(command, env)
    try:
        wait_for(lambda: server.count >= 1 or pty.process.poll() is not None, "a request")
        assert pty.process.poll() is None, pty.output.decode(errors="replace")[-2000:]
        yield pty
    finally:
        release.set()
        pty.kill()


@pytest.fixture
def app_on_a_pty(
    model_server: ScriptedModelServer, tmp_path: Path
) -> Iterator[tuple[Pty, Path, threading.Event]]:
    root = committed_copy(EXAMPLES / "textstats", tmp_path)
    release = threading.Event()
    model_server.script(held(reply(answer("use true division", MEAN_FIX)), release))
    command = app_command(root, model_server)
    env = {**model_env(), "TERM": "xterm-256color"}
    for name in ("COLUMNS", "LINES"):  # the pty's own size, not the test process's
        env.pop(name, None)
    with at_its_first_request(command, env, model_server, release) as pty:
        yield pty, root, release


def sandboxes_of(pid: int) -> list[str]:
    """The command lines of the gVisor sandboxes a fixloop process `pid` started."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            line = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # not a process, or gone meanwhile
            continue
        if f"fixloop-{pid}-" in line:
            found.append(line)
    return found


def stopped_reason(root: Path) -> str:
    """The reason of the one run's RunStopped event, its last."""
    (run,) = (root / ".fixloop" / "runs").iterdir()
    events = [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]
    assert events[-1]["type"] == "RunStopped", events[-1]
    return str(events[-1]["reason"])


@pytest.mark.parametrize(
    ("how", "reason"),
    [
        ("closed", "stopped: the terminal closed"),
        ("SIGHUP", "stopped: the terminal closed (SIGHUP)"),
        ("SIGTERM", "stopped: terminated (SIGTERM)"),
    ],
)
def test_a_run_whose_terminal_goes_away_is_stopped_resumable_and_the_app_exits(
    app_on_a_pty: tuple[Pty, Path, threading.Event], how: str, reason: str
) -> None:
    pty, root, _ = app_on_a_pty
    assert sandboxes_of(pty.process.pid), "no warm sandbox to close: the test proves less"
    if how == "closed":
        pty.close()
    else:
        pty.process.send_signal(getattr(signal, how))

    code = pty.wait()

    assert code is not None, f"the app still runs {WAIT_S:.0f} s after {how}"
    assert code == EXIT_INTERRUPTED, pty.output.decode(errors="replace")[-2000:]
    assert stopped_reason(root) == reason
    assert sandboxes_of(pty.process.pid) == []  # closed, not left running
    repo = git.Repo(root)
    assert not repo.is_dirty(untracked_files=True)  # the person's checkout is untouched
    assert any(head.name.startswith("fixloop/") for head in repo.heads)  # the run's branch stays


# A headless run needs no terminal, so a terminal that closes with no signal is no reason to
# stop one; SIGHUP is (a dropped SSH connection, a closed window): it stops the run as the app's
# stop does. Its progress lines had nowhere to go by then: the run must end without them.


@pytest.fixture
def headless_on_a_pty(
    model_server: ScriptedModelServer, tmp_path: Path
) -> Iterator[tuple[Pty, Path, threading.Event]]:
    root = committed_copy(EXAMPLES / "textstats", tmp_path)
    release = threading.Event()
    mean = answer("use true division", MEAN_FIX)
    top = answer("return n words, not n - 1", TOP_FIX)
    # Either order fixes it: the run goes on to `top` (the terminal closed with no signal), or
    # its resume asks iteration 1 again and gets `top`, then `mean`.
    model_server.script(held(reply(mean), release), reply(top), reply(mean))
    script, *flags = app_command(root, model_server)
    command = [script, "run", *flags, "--headless", "--max-iters", "2"]
    with at_its_first_request(command, model_env(), model_server, release) as pty:
        yield pty, root, release


def test_sighup_stops_a_headless_run_resumable_and_resume_finishes_it(
    headless_on_a_pty: tuple[Pty, Path, threading.Event],
) -> None:
    pty, root, _ = headless_on_a_pty
    assert sandboxes_of(pty.process.pid), "no warm sandbox to close: the test proves less"

    pty.process.send_signal(signal.SIGHUP)

    code = pty.wait()
    said = pty.output.decode(errors="replace")
    assert code == EXIT_INTERRUPTED, said[-2000:]
    assert stopped_reason(root) == "stopped: the terminal closed (SIGHUP)"
    assert sandboxes_of(pty.process.pid) == []
    assert not git.Repo(root).is_dirty(untracked_files=True)
    (run,) = (root / ".fixloop" / "runs").iterdir()
    resume = f"fixloop-tui resume {run.name} {root}"
    assert f"fixloop-tui: stopped: the terminal closed (SIGHUP); continue it: {resume}" in said

    resumed = subprocess.run(
        [pty.command[0], "resume", run.name, str(root), "--headless"],
        env=pty.env,
        capture_output=True,
        text=True,
        timeout=WAIT_S,
    )
    assert resumed.returncode == 0, resumed.stderr[-2000:]  # the resume's two answers fix it


def test_sighup_after_the_terminal_is_gone_still_stops_the_headless_run(
    headless_on_a_pty: tuple[Pty, Path, threading.Event],
) -> None:
    """As a dropped connection goes: the terminal first (every line after it fails with EIO),
    then the signal."""
    pty, root, _ = headless_on_a_pty
    pty.close()
    pty.process.send_signal(signal.SIGHUP)

    assert pty.wait() == EXIT_INTERRUPTED
    assert stopped_reason(root) == "stopped: the terminal closed (SIGHUP)"
    assert sandboxes_of(pty.process.pid) == []


def test_a_headless_run_whose_terminal_closes_without_a_signal_runs_on_to_its_end(
    headless_on_a_pty: tuple[Pty, Path, threading.Event],
) -> None:
    pty, root, release = headless_on_a_pty
    pty.close()
    release.set()  # the held answer arrives after the terminal has gone, then the second fix

    assert pty.wait() == 0  # ok: no progress line it could not print stopped it
    (run,) = (root / ".fixloop" / "runs").iterdir()
    events = [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]
    assert events[-1]["type"] == "RunFinished"
    assert events[-1]["status"] == "ok"
