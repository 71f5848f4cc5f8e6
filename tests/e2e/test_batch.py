"""`fixloop-tui batch` on this machine, end to end: the real CLI process, the scripted model
server over HTTP (each task its own route, chosen by the task's words in the prompt), the real
gVisor sandbox and real git. The Ray runs (test_batch_ray.py) are held to these results."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import git
import pytest

from engine.project.paths import FIXLOOP_DIR
from tests.model_server import ScriptedModelServer, reply
from tests.projects import EXAMPLES, MEAN_FIX, TOP_FIX, answer, committed_copy

REPO = Path(__file__).parents[2]
KEY = "sk-test-batch-0123456789"

pytestmark = [pytest.mark.sandbox, pytest.mark.usefixtures("needs_gvisor")]

# Four tasks over one repository, and what each ends with: the task's words route its model
# requests, so tasks running at once each get their own answers.
FOUR_TASKS: dict[str, dict[str, Any]] = {
    "two-steps": {"task": "Make the tests pass [two-steps]"},
    "one-step": {"task": "Make the tests pass [one-step]"},
    "one-try": {"task": "Make the tests pass [one-try]", "max_iters": 1},
    "bad-ref": {"task": "Make the tests pass [bad-ref]", "ref": "no-such-branch"},
}
ENDINGS = {"two-steps": "ok", "one-step": "ok", "one-try": "exhausted", "bad-ref": "error"}


def script_four(server: ScriptedModelServer) -> None:
    server.route(
        "[two-steps]",
        reply(answer("use true division in mean_word_length", MEAN_FIX)),
        reply(answer("return n words, not n - 1", TOP_FIX)),
    )
    server.route("[one-step]", reply(answer("fix both", MEAN_FIX, TOP_FIX)))
    server.route("[one-try]", reply(answer("use true division in mean_word_length", MEAN_FIX)))


def write_batch(path: Path, repo: Path, tasks: dict[str, dict[str, Any]]) -> Path:
    path.write_text(
        "".join(
            json.dumps({"id": id_, "repo": str(repo), **line}) + "\n" for id_, line in tasks.items()
        )
    )
    return path


def batch(
    server: ScriptedModelServer, tasks: Path, out: Path, *extra: str, key: bool = True
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """The CLI as a user runs it; `key=False`: the command has no key (Ray's workers do)."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(out.parent)}
    if key:
        env["OPENAI_API_KEY"] = KEY
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tui.cli",
            "batch",
            str(tasks),
            "--out",
            str(out),
            "--json",
            "--model",
            "openai/scripted",
            "--api-base",
            server.base_url,
            "--sandbox",
            "gvisor",
            *extra,
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=600,
        check=False,
    )
    assert KEY not in done.stdout + done.stderr
    return done, json.loads(done.stdout) if done.stdout.strip() else {}


def gathered(out: Path, task_id: str) -> dict[str, Any]:
    """What came back for a task: its result, the commits of its bundled branch (subject and
    tree: the same work has the same trees wherever it ran), and its trail's files."""
    where = out / task_id
    result = json.loads((where / "result.json").read_text())
    commits: list[tuple[str, str]] = []
    if result["bundle"]:
        clone = git.Repo.clone_from(
            str(where / result["bundle"]), str(where.parent / f".{task_id}")
        )
        branch = result["run"]["branch"]
        for commit in clone.iter_commits(f"origin/{branch}"):
            commits.append(
                (commit.summary if isinstance(commit.summary, str) else "", commit.tree.hexsha)
            )
    run = where / "run"
    trail = (
        sorted(str(p.relative_to(run)) for p in run.rglob("*") if p.is_file())
        if run.is_dir()
        else []
    )
    return {"result": result, "commits": commits, "trail": trail}


def same_work(out: Path, ids: list[str]) -> dict[str, Any]:
    """What must agree wherever a batch ran: statuses, commits, trail files."""
    found = {id_: gathered(out, id_) for id_ in ids}
    return {
        id_: (got["result"]["status"], got["commits"], got["trail"]) for id_, got in found.items()
    }


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return committed_copy(EXAMPLES / "textstats", tmp_path / "repos", "the buggy example")


def test_a_batch_runs_each_task_in_its_own_clone_and_gathers_it_back(
    model_server: ScriptedModelServer, project: Path, tmp_path: Path
) -> None:
    script_four(model_server)
    tasks = write_batch(tmp_path / "tasks.jsonl", project, FOUR_TASKS)
    out = tmp_path / "out"
    done, whole = batch(model_server, tasks, out, "--jobs", "2")
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
    assert len(model_server.routed("[two-steps]")) == 2
    assert len(model_server.routed("[bad-ref]")) == 0
    # The runs happened in clones: the repository itself is as it was.
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


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        check=False,
    )


def test_nothing_imports_ray_unless_asked() -> None:
    done = run_python(
        "import sys\n"
        "import tui.cli, tui.batch, engine.batch.task, engine.batch.local, engine.batch.on_ray\n"
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
