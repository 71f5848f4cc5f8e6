"""The audit trail: events.jsonl round-trips, survives a torn line, never holds a secret."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import git
import pytest

from engine.errors import ConfigError, UnsealedRecord
from engine.run.events import (
    Committed,
    IterationStarted,
    PacketReady,
    RunFinished,
    RunStarted,
    RunStopped,
    StageFinished,
)
from engine.run.run_directory import RunDirectory, RunRecord, list_runs, new_run_id, read_events

REPO = Path(__file__).parents[2]


def started(task: str = "make the failing tests pass") -> RunStarted:
    return RunStarted(task=task, project="/p", model="openai/x", sandbox="gvisor", max_iterations=4)


def test_events_read_back_as_the_classes_that_were_written(tmp_path: Path) -> None:
    run = RunDirectory.create(tmp_path, new_run_id())
    written = [
        started(),
        IterationStarted(n=1, max_n=4),
        StageFinished(n=1, stage="tests", exit_code=1, duration_ms=1200),
        PacketReady(n=1, verdict="failing", error_class="logic", tests={"passed": 3}),
        Committed(n=1, sha="abc123", message="fixloop[iter 1/4]: fix mean"),
        RunFinished(status="exhausted", iterations=1),
    ]
    for event in written:
        run.emit(event)
    assert run.events() == written


def test_each_event_is_on_disk_as_soon_as_it_is_emitted(tmp_path: Path) -> None:
    run = RunDirectory.create(tmp_path, new_run_id())
    run.emit(started())
    lines = run.events_path.read_text().splitlines()
    assert json.loads(lines[0])["type"] == "RunStarted"


def test_a_torn_last_line_is_skipped_not_fatal(tmp_path: Path) -> None:
    run = RunDirectory.create(tmp_path, new_run_id())
    run.emit(started())
    with open(run.events_path, "a") as stream:
        stream.write('{"type": "IterationStarted", "n": 1, "max')
    assert [type(e).__name__ for e in read_events(run.events_path)] == ["RunStarted"]


def test_an_api_key_never_reaches_the_run_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-canary-0123456789abcdef"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    run = RunDirectory.create(tmp_path, new_run_id())
    run.emit(started(task=f"use key {secret}"))
    run.write_text("iterations/01/response.txt", f"the model echoed {secret}")
    run.write_json("run.json", {"api_key": secret})
    on_disk = "".join(p.read_text() for p in run.path.rglob("*") if p.is_file())
    assert secret not in on_disk
    assert "use key" in on_disk


def test_artifacts_are_written_whole_with_no_temp_files_left(tmp_path: Path) -> None:
    run = RunDirectory.create(tmp_path, new_run_id())
    run.write_json(f"{run.iteration(3)}/packet.json", {"summary": "1 of 2 failing"})
    assert json.loads((run.path / "iterations/03/packet.json").read_text()) == {
        "summary": "1 of 2 failing"
    }
    assert [p.name for p in (run.path / "iterations/03").iterdir()] == ["packet.json"]


def test_the_run_directory_keeps_the_users_git_status_clean(tmp_path: Path) -> None:
    repo = git.Repo.init(tmp_path)
    (tmp_path / "a.py").write_text("x = 1\n")
    repo.git.add("-A")
    repo.index.commit("base")
    run = RunDirectory.create(tmp_path, new_run_id())
    run.emit(started())
    assert repo.git.status("--porcelain") == ""


def test_runs_lists_newest_first_with_status_and_iterations(tmp_path: Path) -> None:
    old = RunDirectory.create(tmp_path, "20261201-100000-aaaa")
    old.emit(started("old task"))
    old.emit(RunFinished(status="ok", iterations=2))
    new = RunDirectory.create(tmp_path, "20261202-100000-bbbb")
    new.emit(started("new task"))
    new.emit(IterationStarted(n=1, max_n=4))
    runs = list_runs(tmp_path)
    assert [(r.id, r.task, r.status, r.iterations) for r in runs] == [
        ("20261202-100000-bbbb", "new task", "unfinished", 1),
        ("20261201-100000-aaaa", "old task", "ok", 2),
    ]


def test_runs_shows_a_stopped_run_apart_and_a_task_on_one_line(tmp_path: Path) -> None:
    run = RunDirectory.create(tmp_path, "20261202-100000-dddd")
    run.emit(started("Fix the mean.\nKeep it a float."))
    run.emit(IterationStarted(n=1, max_n=4))
    run.emit(RunStopped(n=1, reason="stopped by you"))
    [summary] = list_runs(tmp_path)
    assert summary.status == "stopped"
    assert summary.task_line(50) == "Fix the mean. Keep it a float."
    assert summary.task_line(10) == "Fix the m…"


def test_the_runs_command_prints_json(tmp_path: Path) -> None:
    run = RunDirectory.create(tmp_path, "20261202-100000-cccc")
    run.emit(started("fix it"))
    run.emit(RunFinished(status="stalled", iterations=3))
    done = subprocess.run(
        [sys.executable, "-m", "tui.cli", "runs", str(tmp_path), "--json"],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    [row] = json.loads(done.stdout)
    assert (row["id"], row["status"], row["iterations"], row["task"]) == (
        "20261202-100000-cccc",
        "stalled",
        3,
        "fix it",
    )


# run.json as engine/run/start.py wrote it before RunRecord: old run directories still read.
OLD_RUN_JSON = {
    "project": "/p",
    "run_id": "20261202-141503-a1b2",
    "branch": "fixloop/20261202-141503-a1b2",
    "start_head": "1" * 40,
    "user_branch": "main",
    "baseline": "2" * 40,
    "config": {"task": "fix mean", "model": "openai/x", "max_iterations": 3},
    "settings": {"model": "openai/x", "max_iters": 3, "sandbox": "gvisor"},
    "python": "/usr/bin/python3",
    "versions": {"python": "3.12.1"},
    "argv": ["fixloop-tui", "run"],
}


def test_an_old_run_json_reads_back_as_a_record(tmp_path: Path) -> None:
    run = RunDirectory.create(tmp_path, "20261202-141503-a1b2")
    run.write_json("run.json", OLD_RUN_JSON)
    record = run.record()
    assert (record.start_head, record.user_branch) == ("1" * 40, "main")
    assert record.config.task == "fix mean"
    assert record.config.max_iterations == record.settings.max_iters == 3
    assert record.python == Path("/usr/bin/python3")


def test_a_record_is_written_with_the_same_keys_and_no_unset_settings(tmp_path: Path) -> None:
    run = RunDirectory.create(tmp_path, "20261202-141503-a1b2")
    run.write_record(RunRecord.model_validate(OLD_RUN_JSON))
    written = json.loads((run.path / "run.json").read_text())
    assert written.keys() == OLD_RUN_JSON.keys()
    assert written["settings"].items() >= OLD_RUN_JSON["settings"].items()
    assert None not in written["settings"].values()
    assert run.record() == RunRecord.model_validate(OLD_RUN_JSON)


def test_a_record_fixloop_wrote_is_sealed_for_resume(tmp_path: Path) -> None:
    run = RunDirectory.create(tmp_path, "20261202-141503-a1b2")
    run.write_record(RunRecord.model_validate(OLD_RUN_JSON))
    assert run.sealed_record() == RunRecord.model_validate(OLD_RUN_JSON)


def test_a_record_a_repository_committed_is_not_obeyed(tmp_path: Path) -> None:
    """A run.json with no seal (or a seal made without the user's key) asks for anything."""
    run = RunDirectory.create(tmp_path, "20261202-141503-a1b2")
    hostile = {**OLD_RUN_JSON, "settings": {**OLD_RUN_JSON["settings"], "sandbox": "unsafe-local"}}
    run.write_json("run.json", hostile)
    with pytest.raises(UnsealedRecord, match="was not written by fixloop for you"):
        run.sealed_record()
    (run.path / "run.seal").write_text("0" * 64 + "\n")
    with pytest.raises(UnsealedRecord):
        run.sealed_record()


def test_a_sealed_record_edited_afterwards_is_not_obeyed(tmp_path: Path) -> None:
    run = RunDirectory.create(tmp_path, "20261202-141503-a1b2")
    path = run.write_record(RunRecord.model_validate(OLD_RUN_JSON))
    path.write_text(
        path.read_text().replace('"max_iters": 3', '"max_iters": 3, "sandbox": "unsafe-local"')
    )
    with pytest.raises(UnsealedRecord):
        run.sealed_record()


@pytest.mark.parametrize("link", [".fixloop", ".fixloop/runs", ".fixloop/worktrees"])
def test_a_committed_link_for_fixloops_own_directories_is_refused(
    tmp_path: Path, link: str
) -> None:
    """Nothing is written where a repository's link points (the user's home, here)."""
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    (project / link).parent.mkdir(parents=True, exist_ok=True)
    (project / link).symlink_to(home)
    with pytest.raises(ConfigError, match="is a link or not a directory"):
        RunDirectory.create(project, "20261202-141503-a1b2")
    assert list(home.iterdir()) == []


def test_the_runs_table_says_how_long_an_ended_run_took_in_minutes(tmp_path: Path) -> None:
    run = RunDirectory.create(tmp_path, "20261202-100000-eeee")
    run.emit(started("fix it"))
    run.emit(RunFinished(status="stalled", iterations=3, duration_s=1348.04))
    done = subprocess.run(
        [sys.executable, "-m", "tui.cli", "runs", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    header, row = done.stdout.splitlines()
    assert header.split()[-2:] == ["time", "task"]
    assert row.split()[-3:] == ["22m28s", "fix", "it"]
