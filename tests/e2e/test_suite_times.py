"""A run's limits come from its own baseline, end to end (the real CLI, the scripted model
over HTTP, the real gVisor sandbox): a test the baseline saw take 1.5 s still passes in an
iteration where an earlier test's hang shortened every later limit to a fifth."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.test_headless import assert_trail_agrees, fixloop
from tests.engine.test_model_code import committed
from tests.model_server import ScriptedModelServer, reply
from tests.projects import answer

pytestmark = [pytest.mark.sandbox, pytest.mark.usefixtures("needs_gvisor")]

PROJECT = {
    "calc.py": "def add(a, b):\n    return a - b\n",
    "tests/test_a_calc.py": (
        "from calc import add\n\n\ndef test_add():\n    assert add(2, 2) == 4\n"
    ),
    "tests/test_b_slow.py": "import time\n\n\ndef test_slow_but_fine():\n    time.sleep(1.5)\n",
}
HANG = {"path": "calc.py", "search": "return a - b", "replace": "while True:\n        pass"}


def test_a_slow_test_keeps_its_baseline_time_after_another_test_hangs(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    root = committed(tmp_path / "calc", PROJECT)
    model_server.script(reply(answer("loop until it adds up", HANG)))
    # The whole suite in the iteration: the slow test runs after the hang.
    done, result = fixloop(
        model_server, root, "--max-iters", "1", "--test-timeout", "3", "--no-failing-first"
    )
    assert done.returncode == 1, done.stderr
    assert result["iterations"][0]["error_class"] == "timeout"
    trail = Path(result["run_dir"]) / "iterations"
    baseline = json.loads((trail / "00" / "baseline-tests.json").read_text())
    assert baseline["durations"]["tests/test_b_slow.py::test_slow_but_fine"] >= 1.5
    stage = json.loads((trail / "01" / "stage-tests.json").read_text())
    failing = [(t["nodeid"], t["exception_type"]) for t in stage["report"]["tests"]]
    assert failing == [("tests/test_a_calc.py::test_add", "TestTimeout")]
    assert_trail_agrees(result)
