"""The no-progress guard on a task with one test function: its passed count stays 0 until the
fix, so the guard must see the first failing assertion move (engine/run/guards.py,
`FailurePoint`). Headless runs with the scripted model server and the real sandbox."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.test_headless import assert_trail_agrees, fixloop
from tests.model_server import ScriptedModelServer, reply
from tests.projects import PROJECTS, answer, committed_copy

pytestmark = [pytest.mark.sandbox, pytest.mark.usefixtures("needs_gvisor")]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return committed_copy(PROJECTS / "one_test", tmp_path, "three bugs, one test")


def edit(search: str, replace: str) -> dict[str, str]:
    return {"path": "summary.py", "search": search, "replace": replace}


def test_a_first_failing_assertion_that_moves_on_each_iteration_is_progress(
    model_server: ScriptedModelServer, project: Path
) -> None:
    model_server.script(
        reply(answer("count the items", edit("len(xs) + 1", "len(xs)"))),
        reply(answer("add them all", edit("sum(xs) - 1", "sum(xs)"))),
        reply(answer("the biggest is the max", edit("min(xs)", "max(xs)"))),
    )
    done, result = fixloop(model_server, project, "--max-iters", "3")
    assert done.returncode == 0, done.stderr
    assert result["status"] == "ok"
    assert model_server.count == 3
    assert_trail_agrees(result)


def test_a_first_failing_assertion_stuck_on_its_line_is_still_no_progress(
    model_server: ScriptedModelServer, project: Path
) -> None:
    model_server.script(
        reply(answer("count fewer", edit("len(xs) + 1", "len(xs) + 2"))),
        reply(answer("count fewer still", edit("len(xs) + 2", "len(xs) + 3"))),
        reply(answer("an answer nobody should ask for", edit("min(xs)", "max(xs)"))),
    )
    done, result = fixloop(model_server, project, "--max-iters", "3")
    assert done.returncode == 1, done.stderr
    assert result["status"] == "no_progress"
    assert model_server.count == 2
    assert_trail_agrees(result)
