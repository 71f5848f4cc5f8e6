"""The app's first frame waits for no engine: opening `fixloop-tui PATH` imports the
command line, the settings and Textual, and leaves the verifier, the runner, git, the model
client and the engine's pydantic models to the workers that start after the first frame.

Each probe is a fresh interpreter, since this test process has long imported all of it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# Whole packages the first frame must not load, and single modules of packages it may touch.
HEAVY_PACKAGES = (
    "engine.verify",  # the verifier: stages, parsers, results, the sandbox's jobs
    "engine.feedback",
    "engine.model",
    "engine.spec",
    "engine.batch",
    "git",
    "litellm",
    "openai",
    "docker",
    "ray",
    "bench.suite.runner",
    "bench.suite.bench_run",
)
HEAVY_MODULES = (
    "engine.run.loop",
    "engine.run.start",
    "engine.run.events",
    "engine.run.outcome",
    "engine.run.artifacts",
    "engine.run.finish",
    "engine.run.gate",
    "engine.run.preview",
    "engine.project.workspace",
    "engine.run.run_directory",
    "engine.edits.proposal",
)

REPORT = """
import json, sys
packages = {packages!r}
modules = {modules!r}
loaded = sorted(
    name for name in sys.modules
    if name in modules or any(name == p or name.startswith(p + ".") for p in packages)
)
print(json.dumps(loaded))
"""


def heavy_loaded_after(code: str, *args: str) -> list[str]:
    """The heavy modules in sys.modules once `code` ran in a fresh interpreter."""
    report = REPORT.format(packages=HEAVY_PACKAGES, modules=HEAVY_MODULES)
    done = subprocess.run(
        [sys.executable, "-c", code + report, *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=True,
        timeout=60,
    )
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert isinstance(loaded, list)
    return loaded


def test_importing_the_app_loads_no_engine_work() -> None:
    assert heavy_loaded_after("import tui.app\n") == []


def test_the_command_line_builds_the_app_without_the_engine(tmp_path: Path) -> None:
    """As `fixloop-tui PATH` does up to `app.run()`: the parser, the flags' settings, the app."""
    build = """
import sys
from tui.cli import app_settings_from_args, build_parser
from tui.interactive import FixloopApp
args = build_parser().parse_args(["run", sys.argv[1], "--model", "openai/scripted"])
project, settings, _ = app_settings_from_args(args)
app = FixloopApp(project, settings, task=settings.task)
"""
    assert heavy_loaded_after(build, str(tmp_path)) == []
