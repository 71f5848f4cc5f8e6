"""`fixloop-tui batch` on this machine, end to end (tests/e2e/batch_runs.py runs it as a user
does). The Ray runs (test_batch_ray.py) are held to the same four tasks' results."""

from __future__ import annotations

import json
from pathlib import Path

import git
import pytest

from engine.project.paths import FIXLOOP_DIR
from tests.e2e.batch_runs import (
    ENDINGS,
    FOUR_TASKS,
    batch,
    gathered,
    run_python,
    write_batch,
)
from tests.e2e.conftest import BatchHere
from tests.model_server import ScriptedModelServer
from tests.projects import EXAMPLES, committed_copy

pytestmark = [pytest.mark.sandbox, pytest.mark.usefixtures("needs_gvisor")]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return committed_copy(EXAMPLES / "textstats", tmp_path / "repos", "the buggy example")


def test_a_batch_runs_each_task_in_its_own_clone_and_gathers_it_back(
    four_tasks_here: BatchHere,
) -> None:
    done, whole, out = four_tasks_here.done, four_tasks_here.whole, four_tasks_here.out
    assert done.returncode == 1, done.stderr  # some not ok
    outcomes = {task["id"]: task for task in whole["tasks"]}
    assert {id_: o["status"] for id_, o in outcomes.items()} == ENDINGS
    assert whole["summary"]["ok"] == 2
    assert {row["status"]: row["tasks"] for row in whole["summary"]["by_status"]} == {
        "ok": 2,
        "exhausted": 1,
        "error": 1,
    }
    assert json.loads((out / "batch.json").read_text()) == whole
    # One progress line per task, each with the bar.
    assert sum("/4 " in line for line in done.stderr.splitlines() if "fixloop: [" in line) == 4

    two = gathered(out, "two-steps")
    assert [subject for subject, _ in two["commits"][:2]] == [
        "fixloop[iter 2/4]: return n words, not n - 1",
        "fixloop[iter 1/4]: use true division in mean_word_length",
    ]
    assert two["commits"][-1][0] == "the buggy example"
    assert {"events.jsonl", "run.json", "result.json", "iterations/01/response.txt"} <= set(
        two["trail"]
    )
    assert two["result"]["run"]["run_dir"] == "run"
    assert two["result"]["attempts"][0]["node"] == "local"
    assert len(gathered(out, "one-step")["commits"]) == 2  # the fix and the baseline
    one_try = gathered(out, "one-try")
    assert one_try["result"]["run"]["report"] == "run/report.md"
    assert "report.md" in one_try["trail"]
    bad = gathered(out, "bad-ref")
    assert bad["result"]["reason"].startswith("cannot check out no-such-branch: ")
    assert bad["result"]["exit_code"] == 2
    assert (bad["commits"], bad["trail"]) == ([], [])
    routes = [request.route for request in four_tasks_here.requests]
    assert (routes.count("[two-steps]"), routes.count("[bad-ref]")) == (2, 0)
    # The runs happened in clones: the repository itself is as it was.
    project = four_tasks_here.project
    assert not (project / FIXLOOP_DIR).exists()
    assert git.Repo(project).git.branch("--list", "fixloop/*") == ""


def test_a_bad_line_is_one_error_naming_it_before_anything_runs(
    model_server: ScriptedModelServer, project: Path, tmp_path: Path
) -> None:
    tasks = write_batch(tmp_path / "tasks.jsonl", project, FOUR_TASKS)
    with tasks.open("a") as more:
        more.write(json.dumps({"repo": str(project), "max_iters": "many"}) + "\n")
    out = tmp_path / "out"
    done, _ = batch(model_server, tasks, out)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert "bad value for 'max_iters' in" in done.stderr
    assert "tasks.jsonl line 5: Input should be a valid integer" in done.stderr
    assert not out.exists()
    assert model_server.count == 0


def test_a_repo_that_is_not_here_is_refused_before_anything_runs(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    tasks = write_batch(tmp_path / "tasks.jsonl", tmp_path / "nowhere", {"t": {}})
    done, _ = batch(model_server, tasks, tmp_path / "out")
    assert done.returncode == 2
    assert "tasks.jsonl line 1: repo" in done.stderr
    assert "is not a git repository here" in done.stderr


def test_nothing_imports_ray_unless_asked() -> None:
    done = run_python(
        "import sys\n"
        "import tui.cli, tui.batch, engine.batch.run_task\n"
        "import engine.batch.on_threads, engine.batch.on_ray\n"
        "tui.cli.build_parser()\n"
        "print('ray' in sys.modules)"
    )
    assert done.stdout.strip() == "False", done.stderr


def test_batch_ray_without_ray_installed_says_what_to_install(tmp_path: Path) -> None:
    tasks = write_batch(tmp_path / "tasks.jsonl", tmp_path / "calc", {"t": {}})
    out = tmp_path / "out"
    done = run_python(
        "import sys\n"
        "sys.modules['ray'] = None  # as on a machine without the extra\n"
        "from tui.cli import main\n"
        f"sys.exit(main(['batch', {str(tasks)!r}, '--out', {str(out)!r}, '--ray']))"
    )
    assert done.returncode == 2
    assert "pip install 'fixloop-tui[ray]'" in done.stderr
    assert not out.exists()
