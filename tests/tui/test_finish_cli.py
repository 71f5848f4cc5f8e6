"""Finishing a run from the shell (`accept`, `keep`, `discard`), run ids by prefix, `report` of
an ok run and the commands a headless run ends with: the real CLI process over runs that a real
headless run made (the scripted model over HTTP, the gVisor sandbox, real git).

Two headless runs are made once for the module, in a template project: an older one that ends
`exhausted` with a branch (one iteration, half the fix) and a newer one that ends `ok`. Each
test works on its own copy of that project."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import git
import pytest

from engine.project.paths import run_path
from tests.conftest import sandbox_unavailable
from tests.model_server import ScriptedModelServer, reply
from tests.projects import EXAMPLES, MEAN_FIX, TOP_FIX, answer, committed_copy

REPO = Path(__file__).parents[2]
KEY = "sk-fixloop-canary-5d0c1f4e-9b7a-4c35-8f0e-2a6b1c9d7e31"

pytestmark = [pytest.mark.sandbox]


@dataclass(frozen=True)
class Runs:
    project: Path  # the template: copy it, never change it
    home: Path  # HOME and XDG_CONFIG_HOME of every process: the run records' sealing key
    exhausted: str  # the older run's id
    ok: str  # the newer run's id
    ok_stdout: str
    ok_stderr: str


def fixloop(home: Path, *args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": "/usr/bin:/bin",
        "OPENAI_API_KEY": KEY,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "PYTHONPATH": str(REPO),
    }
    done = subprocess.run(
        [sys.executable, "-m", "tui.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=600,
        check=False,
    )
    assert KEY not in done.stdout + done.stderr
    return done


def headless(home: Path, project: Path, server: ScriptedModelServer, *extra: str) -> Any:
    done = fixloop(
        home,
        "run",
        str(project),
        "--headless",
        "--json",
        "--model",
        "openai/scripted",
        "--api-base",
        server.base_url,
        "--sandbox",
        "gvisor",
        *extra,
    )
    return done, json.loads(done.stdout)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    from sandbox.errors import SandboxUnavailable
    from sandbox.gvisor import check_can_run

    try:
        check_can_run()
    except SandboxUnavailable as exc:
        sandbox_unavailable(str(exc))
    root = tmp_path_factory.mktemp("finish")
    home = root / "home"
    home.mkdir()
    project = committed_copy(EXAMPLES / "textstats", root / "template", "the buggy example")
    server = ScriptedModelServer().start()
    try:
        server.script(reply(answer("use true division in mean_word_length", MEAN_FIX)))
        done, older = headless(home, project, server, "--max-iters", "1")
        assert older["status"] == "exhausted", done.stderr
        assert older["branch"]
        server.script(reply(answer("both fixes", MEAN_FIX, TOP_FIX)))
        done, newer = headless(home, project, server)
        assert newer["status"] == "ok", done.stderr
        assert newer["branch"]
    finally:
        server.stop()
    return Runs(project, home, older["run_id"], newer["run_id"], done.stdout, done.stderr)


@pytest.fixture
def project(runs: Runs, tmp_path: Path) -> Path:
    """The template's copy, its runs and branches with it."""
    copy = tmp_path / "textstats"
    shutil.copytree(runs.project, copy, symlinks=True)
    return copy


def state(project: Path) -> tuple[str, list[str], str]:
    """HEAD, the branches, and `git status`: what a refused command must leave as it was."""
    repo = git.Repo(project)
    branches = sorted(head.name for head in repo.heads)
    return repo.head.commit.hexsha, branches, repo.git.status("--porcelain")


def outcome(runs: Runs, project: Path, run_id: str) -> str:
    listed = json.loads(fixloop(runs.home, "runs", "--json", str(project)).stdout)
    return next(run["outcome"] for run in listed if run["id"] == run_id)


def test_accept_without_a_run_squashes_the_newest_undecided_one(runs: Runs, project: Path) -> None:
    before = git.Repo(project).head.commit.hexsha
    done = fixloop(runs.home, "accept", cwd=project)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"run {runs.ok}: accepted as ")
    repo = git.Repo(project)
    assert repo.head.commit.parents[0].hexsha == before
    assert "most_common(n)" in (project / "textstats" / "core.py").read_text()
    assert repo.git.status("--porcelain") == ""
    assert outcome(runs, project, runs.ok) == "accepted"
    assert outcome(runs, project, runs.exhausted) == "undecided"


def test_keep_by_the_last_part_of_the_id_keeps_the_branch(runs: Runs, project: Path) -> None:
    head, branches, _ = state(project)
    done = fixloop(runs.home, "keep", runs.exhausted.rsplit("-", 1)[1], str(project))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"run {runs.exhausted}: kept on branch fixloop/{runs.exhausted}"
    assert state(project)[:2] == (head, branches)
    assert outcome(runs, project, runs.exhausted) == "kept"


def test_discard_asks_nothing_and_names_the_branch_it_deleted(runs: Runs, project: Path) -> None:
    done = fixloop(runs.home, "discard", runs.exhausted, str(project), cwd=project.parent)
    assert done.returncode == 0, done.stderr
    assert f"branch fixloop/{runs.exhausted} deleted" in done.stdout
    assert f"fixloop/{runs.exhausted}" not in state(project)[1]
    assert outcome(runs, project, runs.exhausted) == "discarded"


def test_a_run_decided_already_is_refused_with_exit_2_and_nothing_changes(
    runs: Runs, project: Path
) -> None:
    assert fixloop(runs.home, "keep", runs.ok, str(project)).returncode == 0
    before = state(project)
    done = fixloop(runs.home, "accept", runs.ok, str(project))
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"fixloop-tui: error: run {runs.ok} was kept already: its branch fixloop/{runs.ok} is "
        f"yours (`git merge --squash fixloop/{runs.ok}` to take it)"
    )
    assert state(project) == before
    assert outcome(runs, project, runs.ok) == "kept"


def test_a_run_that_has_not_ended_is_refused_with_exit_2_and_nothing_changes(
    runs: Runs, project: Path
) -> None:
    """A run still running has no ending in its trail yet (as one whose process died)."""
    events = run_path(project, runs.ok) / "events.jsonl"
    lines = events.read_text().splitlines(keepends=True)
    events.write_text("".join(line for line in lines if '"RunFinished"' not in line))
    before = state(project)
    done = fixloop(runs.home, "discard", runs.ok, str(project))
    assert done.returncode == 2
    assert done.stderr.startswith(f"fixloop-tui: error: run {runs.ok} has not ended")
    assert len(done.stderr.strip().splitlines()) == 1
    assert state(project) == before


def test_without_an_undecided_run_there_is_nothing_to_accept(runs: Runs, project: Path) -> None:
    for run in (runs.ok, runs.exhausted):
        assert fixloop(runs.home, "discard", run, str(project)).returncode == 0
    done = fixloop(runs.home, "accept", str(project))
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"fixloop-tui: error: no run in {project} waits for a decision (see `fixloop-tui runs`)"
    )


def test_a_prefix_of_two_runs_is_ambiguous_and_lists_both(runs: Runs, project: Path) -> None:
    prefix = runs.ok[:8]  # the day both were made on
    assert runs.exhausted.startswith(prefix)
    done = fixloop(runs.home, "report", prefix, str(project))
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"fixloop-tui: error: {prefix!r} names 2 runs in {project}: {runs.ok}, {runs.exhausted}; "
        "type more of the id"
    )


def test_a_prefix_of_no_run_says_so(runs: Runs, project: Path) -> None:
    done = fixloop(runs.home, "keep", "zz", str(project))
    assert (done.returncode, done.stderr.strip()) == (
        2,
        f"fixloop-tui: error: no run 'zz' in {project} (see `fixloop-tui runs`)",
    )


def test_resume_takes_a_prefix_of_the_runs_last_part(runs: Runs, project: Path) -> None:
    done = fixloop(runs.home, "resume", runs.ok.rsplit("-", 1)[1], str(project))
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "fixloop-tui: error: the run already ended (ok): nothing to resume"
    )


def test_replay_of_an_ambiguous_prefix_opens_nothing(runs: Runs, project: Path) -> None:
    done = fixloop(runs.home, "replay", "20", str(project))
    assert done.returncode == 2
    assert done.stderr.startswith("fixloop-tui: error: '20' names 2 runs in ")


def test_report_of_an_ok_run_is_its_report_read_back_from_the_trail(
    runs: Runs, project: Path
) -> None:
    done = fixloop(runs.home, "report", runs.ok[-4:], str(project))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"# fixloop run {runs.ok}: ok"
    assert "The tests pass, honestly." in done.stdout
    assert "## Iteration 1: ok" in lines
    assert "Explanation: both fixes" in lines
    assert "+        return counts.most_common(n)" in done.stdout or "most_common(n)" in done.stdout
    assert not (run_path(project, runs.ok) / "report.md").exists()  # read, nothing written


def test_report_of_an_accepted_run_says_it_was_accepted(runs: Runs, project: Path) -> None:
    accepted = fixloop(runs.home, "accept", runs.ok, str(project))
    assert accepted.returncode == 0, accepted.stderr
    sha = git.Repo(project).head.commit.hexsha
    done = fixloop(runs.home, "report", runs.ok, str(project))
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip().endswith(f"**Decided:** accepted as {sha[:10]} on master") or (
        done.stdout.rstrip().endswith(f"**Decided:** accepted as {sha[:10]} on main")
    )


def test_a_headless_run_with_a_branch_ends_with_the_next_commands_on_stderr(runs: Runs) -> None:
    where = str(runs.project)
    assert runs.ok_stderr.splitlines()[-4:] == [
        line.rstrip()
        for line in (
            f"next: fixloop-tui accept {runs.ok} {where}   # squash the branch onto yours",
            f"      fixloop-tui keep {runs.ok} {where}     # keep the branch, merge it yourself",
            f"      fixloop-tui discard {runs.ok} {where}  # delete the branch",
            f"      fixloop-tui report {runs.ok} {where}   # what the run did",
        )
    ]
    assert json.loads(runs.ok_stdout)["run_id"] == runs.ok  # stdout: the one JSON object
    assert "next:" not in runs.ok_stdout
