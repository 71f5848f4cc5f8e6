"""A candidate that loops forever costs the per-test limit, not the stage's five minutes: the
verification reports the other tests as they are and the hanging one as a timeout at its
line, and the loop goes on to ok. The real CLI, the scripted model over HTTP,
gVisor, default settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.test_headless import assert_trail_agrees, fixloop, project  # noqa: F401 - fixture
from tests.model_server import ScriptedModelServer, reply
from tests.projects import MEAN_FIX, answer

pytestmark = [pytest.mark.sandbox, pytest.mark.usefixtures("needs_gvisor")]

LOOP_FOREVER = {
    "path": "textstats/core.py",
    "search": "return counts.most_common(n - 1)",
    "replace": "while n > 0:\n        n = n * 1\n    return counts.most_common(n)",
}
UNLOOP = {
    "path": "textstats/core.py",
    "search": "while n > 0:\n        n = n * 1\n    return counts.most_common(n)",
    "replace": "return counts.most_common(n)",
}


def test_a_looping_candidate_costs_seconds_and_the_loop_goes_on(
    model_server: ScriptedModelServer,
    project: Path,  # noqa: F811 - the fixture
) -> None:
    model_server.script(
        reply(answer("return n words", LOOP_FOREVER)),
        reply(answer("stop looping; true division", UNLOOP, MEAN_FIX)),
    )
    done, result = fixloop(model_server, project)
    assert done.returncode == 0, done.stderr
    assert result["status"] == "ok"
    assert [it["status"] for it in result["iterations"]] == ["failing", "ok"]
    first = result["iterations"][0]["tests"]
    assert (first["collected"], first["passed"], first["failed"]) == (5, 3, 2)
    stage = json.loads(
        (
            Path(result["run_dir"]) / "iterations" / "01" / "stage-tests.failing-first.json"
        ).read_text()
    )
    assert not stage["timed_out"]  # the test's limit fired, not the stage's 300 s
    assert stage["duration_ms"] < 30_000
    hung = next(
        t for t in stage["report"]["tests"] if t["nodeid"].endswith("test_top_words_returns_n")
    )
    assert hung["exception_type"] == "TestTimeout"
    assert hung["frame"]["file"] == "textstats/core.py"
    assert "in top_words (loop at lines" in hung["exception_message"]
    told = model_server.requests[1].body["messages"][-1]["content"]
    assert (
        "timeout: tests/test_core.py::test_top_words_returns_n — TestTimeout: did not finish "
        "in 20 s; it was at line 25 in textstats/core.py, in top_words (loop at lines 25-26)"
    ) in told
    assert_trail_agrees(result)
