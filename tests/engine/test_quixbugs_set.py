"""The QuixBugs stand-in for a hidden set of human-written bugs (bench/quixbugs.py): the 40
buggy programs with their tests, made into one repository, and each task as the issue's
command runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bench.quixbugs import DATA, TASK, ledger_lines, next_sitting, programs, project, task_line


def test_the_set_is_40_programs_each_with_its_tests() -> None:
    data = json.loads(DATA.read_text())
    names = programs(data["files"])
    assert len(names) == 40
    assert "bitcount" in names
    assert "node" not in names
    assert "MIT" in data["license"] or "Permission is hereby granted" in data["license"]
    assert not any(path.startswith("correct_") for path in data["files"])  # no answers in it


def test_a_task_is_the_issues_command(tmp_path: Path) -> None:
    assert task_line("bitcount") == {
        "repo": "project",
        "id": "bitcount",
        "task": TASK.format(file="python_programs/bitcount.py"),
        "files": ["python_programs/bitcount.py"],
        "test_cmd": "python -m pytest -q python_testcases/test_bitcount.py",
        "max_iters": 3,
        "exec_timeout": 30,
    }


def test_candidates_are_a_setting_of_each_task() -> None:
    assert task_line("gcd", 3)["candidates"] == 3
    assert "candidates" not in task_line("gcd")


def test_a_lever_switched_on_is_a_setting_of_each_task() -> None:
    line = task_line("gcd", on=("code_noop",))
    assert line["code_noop"] is True
    assert "code_noop" not in task_line("gcd")


def test_the_project_is_a_committed_repository_whose_buggy_program_fails(tmp_path: Path) -> None:
    root = project(tmp_path, json.loads(DATA.read_text()))
    assert (root / ".git").is_dir()
    status = subprocess.run(
        ["git", "-C", str(root), "status", "--porcelain"], capture_output=True, text=True
    )
    assert status.stdout == ""
    # Outside the sandbox, no per-test limit: a program whose bug fails fast (bitcount's
    # loops for ever on some inputs; in fixloop's sandbox that costs its test's 20 s).
    tests = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "python_testcases/test_is_valid_parenthesization.py",
        ],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert tests.returncode == 1, tests.stdout[-2000:]
    assert "failed" in tests.stdout


def test_the_ledger_has_a_line_per_program_run_with_its_sitting_commit(tmp_path: Path) -> None:
    task = tmp_path / "sitting-1" / "gcd"
    (task / "run").mkdir(parents=True)
    (tmp_path / "sitting-1.commit").write_text("abc1234\n")
    run = {"iterations": [{"status": "failing"}, {"status": "ok"}]}
    result = {"status": "ok", "reason": "verified green on iteration 2", "duration_s": 41.26}
    (task / "result.json").write_text(json.dumps({**result, "run": run}))
    answers = [{"type": "ModelResponded", "prompt_tokens": 700}, {"type": "PacketReady"}]
    (task / "run" / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in answers * 2))

    [line] = ledger_lines(tmp_path, ["bitcount", "gcd"])  # bitcount has not run

    assert {key: line[key] for key in line if key != "recorded"} == {
        "program": "gcd",
        "status": "ok",
        "reason": "verified green on iteration 2",
        "iterations": 2,
        "first_answer_ok": False,
        "prompt_tokens": 1400,
        "wall_s": 41.3,
        "commit": "abc1234",
    }


def test_each_sitting_is_numbered_after_the_last(tmp_path: Path) -> None:
    assert next_sitting(tmp_path) == 1
    for k in (1, 2, 10):
        (tmp_path / f"sitting-{k}.jsonl").write_text("")
    assert next_sitting(tmp_path) == 11  # by number, not by name (10 sorts before 2)
