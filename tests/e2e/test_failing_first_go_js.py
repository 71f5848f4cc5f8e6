"""Failing tests first on Go and JavaScript, end to end (the real CLI, the scripted model over
HTTP, the real gVisor sandbox, the real `go test` and Jest): an iteration that stays red runs
only the tests that failed, through the runner's own filter, its packet says so, and the green
verdict comes from the whole suite."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_go_js import GO_FIXES, JS_FIXES
from tests.e2e.test_headless import assert_trail_agrees, fixloop
from tests.model_server import ScriptedModelServer, reply
from tests.projects import answer
from tests.toolchain_projects import GOSTATS, JSSTATS, example_checkout

pytestmark = [pytest.mark.sandbox, pytest.mark.usefixtures("needs_gvisor")]

# The examples' two failing tests, as each runner's report names them.
FAILING = {
    GOSTATS: ["example.com/gostats::TestMeanWordLength", "example.com/gostats::TestTopWords"],
    JSSTATS: [
        "__tests__/stats.test.js::meanWordLength is the mean",
        "__tests__/stats.test.js::topWords ranks by count",
    ],
}
FIXES = {GOSTATS: GO_FIXES, JSSTATS: JS_FIXES}


def stage(result: dict[str, Any], n: int, name: str) -> dict[str, Any]:
    path = Path(result["run_dir"]) / "iterations" / f"{n:02d}" / f"stage-{name}.json"
    loaded: dict[str, Any] = json.loads(path.read_text())
    return loaded


@pytest.mark.parametrize("example", [GOSTATS, JSSTATS], ids=["go", "jest"])
def test_a_red_iteration_runs_only_the_failing_tests_and_green_comes_from_the_whole_suite(
    model_server: ScriptedModelServer, tmp_path: Path, example: Path
) -> None:
    root = example_checkout(example, tmp_path)
    mean, top = FIXES[example]
    model_server.script(
        reply(answer("true division", mean)), reply(answer("n words, not n - 1", top))
    )
    done, result = fixloop(model_server, root, "--max-iters", "3")
    assert done.returncode == 0, done.stderr
    assert [it["status"] for it in result["iterations"]] == ["failing", "ok"]
    # Iteration 1: only the two tests that failed at the baseline ran; one still fails.
    narrowed = stage(result, 1, "tests.failing-first")
    assert narrowed["focus"] == {"tests": FAILING[example], "carried_passed": 3}
    counts = narrowed["report"]["counts"]
    assert (counts["collected"], counts["passed"], counts["failed"]) == (2, 1, 1)
    assert not (Path(result["run_dir"]) / "iterations" / "01" / "stage-tests.json").exists()
    told = model_server.requests[1].body["messages"][-1]["content"]
    assert "This check ran only the 2 tests that failed last time; the other 3 passed" in told
    # Iteration 2: the one still failing passes alone, then the whole suite makes the verdict.
    again = stage(result, 2, "tests.failing-first")
    assert again["focus"] == {"tests": FAILING[example][1:], "carried_passed": 4}
    assert again["report"]["counts"]["collected"] == 1
    whole = stage(result, 2, "tests")
    assert whole["focus"] is None
    assert whole["report"]["counts"]["passed"] == 5
    assert_trail_agrees(result)
