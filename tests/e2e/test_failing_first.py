"""Failing tests first, end to end (the real CLI, the scripted model over HTTP, the real
gVisor sandbox): an iteration that stays red runs only the test that failed, its packet says
so, and the green verdict comes from the whole suite."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_headless import assert_trail_agrees, fixloop
from tests.engine.test_model_code import committed
from tests.model_server import ScriptedModelServer, reply
from tests.projects import answer

pytestmark = [pytest.mark.sandbox, pytest.mark.usefixtures("needs_gvisor")]

PASSING = "".join(
    f"\n\ndef test_square_{k}():\n    assert square({k}) == {k * k}\n" for k in range(40)
)
PROJECT = {
    "calc.py": "def add(a, b):\n    return a - b\n\n\ndef square(x):\n    return x * x\n",
    "tests/test_add.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
    "tests/test_square.py": "from calc import square\n" + PASSING,
}
STILL_WRONG = {"path": "calc.py", "search": "return a - b", "replace": "return a * b"}
FIXED = {"path": "calc.py", "search": "return a * b", "replace": "return a + b"}


def trail(result: dict[str, Any], n: int) -> Path:
    return Path(result["run_dir"]) / "iterations" / f"{n:02d}"


def stage(result: dict[str, Any], n: int, name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((trail(result, n) / f"stage-{name}.json").read_text())
    return loaded


def test_a_red_iteration_runs_only_the_failing_test_and_green_comes_from_the_whole_suite(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    root = committed(tmp_path / "calc", PROJECT)
    model_server.script(
        reply(answer("multiply", STILL_WRONG)), reply(answer("add, at last", FIXED))
    )
    done, result = fixloop(model_server, root, "--max-iters", "3")
    assert done.returncode == 0, done.stderr
    assert [it["status"] for it in result["iterations"]] == ["failing", "ok"]
    narrowed = stage(result, 1, "tests.failing-first")
    assert narrowed["focus"] == {"tests": ["tests/test_add.py::test_add"], "carried_passed": 40}
    assert narrowed["report"]["counts"]["collected"] == 1
    assert not (trail(result, 1) / "stage-tests.json").exists()
    tests = result["iterations"][0]["tests"]
    assert (tests["collected"], tests["passed"], tests["failed"]) == (41, 40, 1)
    told = model_server.requests[1].body["messages"][-1]["content"]
    assert "This check ran only the 1 test that failed last time; the other 40 passed" in told
    # The fix passes the narrowed run, then the whole suite makes the verdict.
    assert stage(result, 2, "tests.failing-first")["report"]["counts"]["passed"] == 1
    whole = stage(result, 2, "tests")
    assert whole["focus"] is None
    assert whole["report"]["counts"]["passed"] == 41
    assert_trail_agrees(result)


def test_without_failing_first_every_iteration_runs_the_whole_suite(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    root = committed(tmp_path / "calc", PROJECT)
    model_server.script(reply(answer("multiply", STILL_WRONG)))
    done, result = fixloop(model_server, root, "--max-iters", "1", "--no-failing-first")
    assert done.returncode == 1, done.stderr
    assert not (trail(result, 1) / "stage-tests.failing-first.json").exists()
    assert stage(result, 1, "tests")["report"]["counts"]["collected"] == 41
    told = model_server.requests[0].body["messages"][-1]["content"]
    assert "ran only" not in told
