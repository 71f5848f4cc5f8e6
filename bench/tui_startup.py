"""How fast the app opens, and how long the UI ever stalls while a run goes on.

* startup (headless) - a fresh `python` process per launch, timed from spawn until the app
  sends its first frame of the task screen to the terminal, as `fixloop-tui PATH` opens: the
  process imports the command line and the app, reads the flags and settings as the command
  does, builds the app and runs it with Textual's headless driver; the app reports the moment
  it first displays the task screen and exits. The checks (sandbox, model) and the warm-up that
  start after the first frame are left out, so that the process can exit at once (target:
  median < 0.5 s).
* imports - one more such process under `python -X importtime`: the 10 modules whose import
  (with everything they import) costs most, and the total, to see what the first frame waits
  for.
* startup (tmux) - `fixloop-tui PATH` in a real terminal (tmux, 80x24), timed from spawn
  until `tmux capture-pane` shows the task box; then `escape` quits it. Includes the
  shell, the console script and tmux's own latency (polled every 10 ms).
* stall - one whole run in step mode (the scripted model server over HTTP through litellm,
  the real gVisor sandbox, real git) driven with Pilot in a process of its own
  (`python -m tui.stall_probe`: the bench never imports the app), approving each proposal; a probe
  on the UI's event loop sleeps 10 ms at a time and records how late it wakes up. The
  longest lateness is the longest UI stall (target < 100 ms).

  .venv/bin/python bench/tui_startup.py [--runs N] [--tmux] [--stall] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

# Runs in the child process: the app as `fixloop-tui PATH` builds it (tui/cli.py's parser and
# settings, tui/interactive.py's app), exiting once the task screen first goes out.
CHILD = """
import sys, time
from tui.cli import app_settings_from_args, build_parser
from tui.interactive import FixloopApp
from tui.screens.task import TaskScreen

class FirstFrame(FixloopApp):
    shown = False

    def _display(self, screen, renderable):  # Textual's one way to the terminal
        super()._display(screen, renderable)
        if isinstance(screen, TaskScreen) and renderable is not None and not self._batch_count:
            if not self.shown:
                self.shown = True
                print(time.time(), type(screen).__name__, flush=True)
                self.call_after_refresh(self.exit)  # after on_mount's own after-refresh calls

    # The checks and the warm-up start after the first frame: skipped, so that the process can
    # exit at once and its -X importtime shows only what the first frame waited for.
    def _check_project(self):
        return None

    def _check_model(self):
        return None

    def _warm_up(self):
        return None

argv = ["run", sys.argv[1], "--model", "openai/scripted", "--api-base", "http://127.0.0.1:9"]
project, settings, _ = app_settings_from_args(build_parser().parse_args(argv))
FirstFrame(project, settings, task=settings.task).run(headless=True, size=(80, 24))
"""


def committed_copy(source: Path, scratch: Path) -> Path:
    """The example as a committed git checkout the sandbox's user can read."""
    import git

    root = scratch / source.name
    scratch.mkdir(parents=True, exist_ok=True)
    shutil.copytree(source, root)
    repo = git.Repo.init(root)
    repo.git.add("-A")
    repo.index.commit("the buggy example")
    for path in [scratch, *root.rglob("*")]:
        if ".git" not in path.parts:
            path.chmod(0o755 if path.is_dir() else 0o644)
    return root


def startup_headless(project: Path, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        started = time.time()
        done = subprocess.run(
            [sys.executable, "-c", CHILD, str(project)],
            capture_output=True,
            text=True,
            cwd=REPO,
            check=True,
            timeout=60,
        )
        painted, screen = done.stdout.split()
        assert screen == "TaskScreen", screen
        times.append(float(painted) - started)
    return times


def import_table(project: Path, top: int = 10) -> dict[str, Any]:
    """One child under `-X importtime`: the `top` modules by cumulative import time (a module
    with all it imports), and the total of the top-level imports, in ms."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", CHILD, str(project)],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=True,
        timeout=60,
    )
    rows = []  # (cumulative us, self us, depth, module)
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        own, cumulative, name = line.removeprefix("import time:").split("|")
        depth = (len(name) - len(name.lstrip())) // 2
        rows.append((int(cumulative), int(own), depth, name.strip()))
    ranked = sorted(rows, reverse=True)[:top]
    return {
        "total_ms": round(sum(row[0] for row in rows if row[2] == 0) / 1000, 1),
        "top": [
            {"module": name, "cumulative_ms": round(cum / 1000, 1), "self_ms": round(own / 1000, 1)}
            for cum, own, _, name in ranked
        ],
    }


def startup_tmux(project: Path, runs: int) -> list[float]:
    script = Path(sys.executable).parent / "fixloop-tui"
    command = f"{script} {project} --model openai/scripted --api-base http://127.0.0.1:9"
    times = []
    for index in range(runs):
        session = f"fixloop-bench-{os.getpid()}-{index}"
        started = time.monotonic()
        subprocess.run(
            ["tmux", "new-session", "-d", "-s", session, "-x", "80", "-y", "24", command],
            check=True,
        )
        try:
            while True:
                shown = subprocess.run(
                    ["tmux", "capture-pane", "-p", "-t", session],
                    capture_output=True,
                    text=True,
                    check=False,
                ).stdout
                if "start the run" in shown:
                    times.append(time.monotonic() - started)
                    break
                assert time.monotonic() - started < 30, "the app did not open in 30 s"
                time.sleep(0.01)
            subprocess.run(["tmux", "send-keys", "-t", session, "Escape"], check=True)
            deadline = time.monotonic() + 60  # quitting waits for the sandbox check to end
            while time.monotonic() < deadline:
                alive = subprocess.run(
                    ["tmux", "has-session", "-t", session], capture_output=True, check=False
                )
                if alive.returncode != 0:
                    break
                time.sleep(0.1)
        finally:  # normally gone already: the app quit and the session with it
            subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
    return times


def stalls(scratch: Path) -> dict[str, Any]:
    """A cold run (the process's first: litellm loads in it) and a warm one after it, measured
    by `tui/stall_probe.py` in a process of its own against the scripted model server."""
    from tests.model_server import ScriptedModelServer, reply

    fixes = [
        ("use true division", "// len(found)", "/ len(found)"),
        ("return n words", "most_common(n - 1)", "most_common(n)"),
    ]
    projects = [
        committed_copy(REPO / "examples" / "textstats", scratch / name) for name in ("cold", "warm")
    ]
    server = ScriptedModelServer().start()
    for _ in projects:
        for explanation, search, replace in fixes:
            edit = {"path": "textstats/core.py", "search": search, "replace": replace}
            server.script(reply(json.dumps({"explanation": explanation, "edits": [edit]})))
    env = {"OPENAI_API_KEY": "sk-bench-not-a-key", **os.environ}
    try:
        probe = subprocess.run(
            [sys.executable, "-m", "tui.stall_probe", server.base_url, *map(str, projects)],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
    finally:
        server.stop()
    cold, warm = json.loads(probe.stdout)
    return {"stall_cold": cold, "stall_warm": warm}


def summary(times: list[float]) -> dict[str, Any]:
    return {
        "runs": len(times),
        "median_s": round(statistics.median(times), 3),
        "min_s": round(min(times), 3),
        "max_s": round(max(times), 3),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--tmux", action="store_true", help="also time a real terminal")
    parser.add_argument("--stall", action="store_true", help="also measure UI stalls in a run")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="fixloop-bench-") as scratch:
        project = committed_copy(REPO / "examples" / "textstats", Path(scratch))
        results["startup_headless"] = summary(startup_headless(project, args.runs))
        imports = import_table(project)
        if args.tmux:
            results["startup_tmux"] = summary(startup_tmux(project, args.runs))
        if args.stall:
            results.update(stalls(Path(scratch)))
    if args.json:
        print(json.dumps({**results, "imports": imports}))
        return 0
    for name, numbers in results.items():
        print(f"{name:17} " + "  ".join(f"{key}={value}" for key, value in numbers.items()))
    print(f"\nimports before the first frame: {imports['total_ms']} ms (-X importtime, one run)")
    print(f"{'cumulative ms':>13}  {'self ms':>7}  module")
    for row in imports["top"]:
        print(f"{row['cumulative_ms']:>13}  {row['self_ms']:>7}  {row['module']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
