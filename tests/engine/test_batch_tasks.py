"""The batch file: each line checked like `[tool.fixloop]`, a bad one named by its line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.batch.batch_file import load_batch
from engine.errors import BatchFileError


def batch_file(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def error_of(tmp_path: Path, *lines: str) -> str:
    with pytest.raises(BatchFileError) as caught:
        load_batch(batch_file(tmp_path, *lines))
    message = str(caught.value)
    assert "\n" not in message
    return message


GOOD = json.dumps({"repo": "/srv/calc", "task": "make the tests pass"})


def test_a_task_keeps_its_settings_as_written_and_gets_an_id_from_its_line(
    tmp_path: Path,
) -> None:
    line = {"repo": "https://example.invalid/calc.git", "ref": "v1", "max_iters": 3}
    tasks = load_batch(batch_file(tmp_path, GOOD, "", json.dumps(line)))
    assert [(t.id, t.line) for t in tasks] == [("task-1", 1), ("task-3", 3)]
    assert tasks[1].repo == line["repo"]
    assert tasks[1].ref == "v1"
    assert tasks[1].settings == {"max_iters": 3}
    assert tasks[0].settings == {"task": "make the tests pass"}


def test_a_relative_repo_is_relative_to_the_batch_file(tmp_path: Path) -> None:
    tasks = load_batch(batch_file(tmp_path, json.dumps({"repo": "projects/calc"})))
    assert tasks[0].repo == str(tmp_path / "projects" / "calc")


def test_text_that_is_not_json_names_its_line(tmp_path: Path) -> None:
    assert "tasks.jsonl line 2: not JSON" in error_of(tmp_path, GOOD, "{repo: x}")


def test_a_line_that_is_not_an_object_names_its_line(tmp_path: Path) -> None:
    assert "line 1: a task is a JSON object, not list" in error_of(tmp_path, "[1, 2]")


def test_a_task_without_a_repo_is_refused(tmp_path: Path) -> None:
    assert "line 2: 'repo' is missing" in error_of(tmp_path, GOOD, '{"task": "x"}')


def test_an_unknown_setting_names_the_key_and_the_line(tmp_path: Path) -> None:
    message = error_of(tmp_path, GOOD, GOOD, json.dumps({"repo": "/r", "modle": "gpt"}))
    assert "unknown setting 'modle' in" in message
    assert "tasks.jsonl line 3" in message


def test_a_bad_value_is_refused_as_in_tool_fixloop(tmp_path: Path) -> None:
    message = error_of(tmp_path, json.dumps({"repo": "/r", "max_iters": 0}))
    assert "bad value for 'max_iters' in" in message
    assert "line 1" in message


def test_two_tasks_with_one_id_are_refused(tmp_path: Path) -> None:
    same = json.dumps({"id": "calc", "repo": "/r"})
    assert "line 2: id 'calc' is already line 1's" in error_of(tmp_path, same, same)


def test_an_id_that_is_no_directory_name_is_refused(tmp_path: Path) -> None:
    message = error_of(tmp_path, json.dumps({"id": "../up", "repo": "/r"}))
    assert "line 1: id '../up' must be" in message


def test_an_empty_file_is_refused(tmp_path: Path) -> None:
    assert "no task in it" in error_of(tmp_path, "")


def test_a_ref_that_git_would_read_as_an_option_is_refused(tmp_path: Path) -> None:
    line = json.dumps({"repo": "/srv/calc", "ref": "--upload-pack=touch /tmp/x"})
    assert "line 1: ref '--upload-pack=touch /tmp/x' is not a branch" in error_of(tmp_path, line)
