"""Batches as a user runs them, for the batch tests here and on Ray: the real CLI process, the
scripted model server over HTTP (each task its own route, chosen by the task's words in its
prompt), the real gVisor sandbox and real git; and what they gathered."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import git

from tests.model_server import ScriptedModelServer, reply
from tests.projects import MEAN_FIX, TOP_FIX, answer

REPO = Path(__file__).parents[2]
KEY = "sk-test-batch-0123456789"

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
        with tempfile.TemporaryDirectory() as scratch:
            clone = git.Repo.clone_from(str(where / result["bundle"]), scratch)
            for commit in clone.iter_commits(f"origin/{result['run']['branch']}"):
                commits.append((str(commit.summary), commit.tree.hexsha))
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


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        check=False,
    )
