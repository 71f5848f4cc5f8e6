"""Git on the host runs nothing of the repository's: real repositories in tmp_path whose
.git/config names scripts (fsmonitor, filter and diff drivers, hooks) that leave a marker
file when run; fixloop's workspace operations must leave none."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from engine.errors import WorkspaceError
from engine.feedback.tree import working_tree_diff
from engine.project.accept import accept_run
from engine.project.git_plumbing import config_env, git_text
from engine.project.pins import TestPins
from engine.project.workspace import Workspace, iteration_message
from engine.run.preview import pass_test_diff

pytestmark = pytest.mark.usefixtures("git_as_tester")

MODULE = "def double(x):\n    return x * 3\n"
FIXED = "def double(x):\n    return x * 2\n"
TEST = "from pkg.mod import double\n\n\ndef test_double():\n    assert double(2) == 4\n"


def marker_script(markers: Path, name: str, then: str = "cat") -> str:
    """A script that leaves `markers/<name>` when it runs, then does `then`."""
    return f"#!/bin/sh\ntouch {markers / name}\n{then}\n"


def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True)
    return done.stdout


def hostile_repo(tmp_path: Path) -> tuple[Path, Path]:
    """A committed project whose config names its own scripts for everything git can run;
    the scripts pass content through unchanged, so only the markers tell that they ran."""
    root, markers = tmp_path / "project", tmp_path / "markers"
    markers.mkdir()
    (root / "pkg").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "pkg" / "mod.py").write_text(MODULE)
    (root / "tests" / "test_mod.py").write_text(TEST)
    (root / ".gitattributes").write_text("*.py filter=evil diff=evil merge=evil\n")
    scripts = {
        "fsmon.sh": marker_script(markers, "fsmonitor", "exit 1"),
        "clean.sh": marker_script(markers, "clean"),
        "smudge.sh": marker_script(markers, "smudge"),
        "textconv.sh": marker_script(markers, "textconv", 'cat "$1"'),
        "merge.sh": marker_script(markers, "merge", "exit 1"),
        "hooks/post-checkout": marker_script(markers, "hook-post-checkout", "true"),
        "hooks/pre-commit": marker_script(markers, "hook-pre-commit", "true"),
        "hooks/post-commit": marker_script(markers, "hook-post-commit", "true"),
    }
    for name, text in scripts.items():
        (root / name).parent.mkdir(exist_ok=True)
        (root / name).write_text(text)
        (root / name).chmod(0o755)
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "hostile")
    for key, value in {
        "core.fsmonitor": "./fsmon.sh",
        "core.hooksPath": "hooks",
        "filter.evil.clean": "./clean.sh",
        "filter.evil.smudge": "./smudge.sh",
        "diff.evil.textconv": "./textconv.sh",
        "merge.evil.driver": "./merge.sh %O %A %B",
    }.items():
        git(root, "config", key, value)
    return root, markers


def ran(markers: Path) -> list[str]:
    return sorted(path.name for path in markers.iterdir())


def test_a_run_from_start_to_accept_runs_no_program_the_repository_config_names(
    tmp_path: Path,
) -> None:
    root, markers = hostile_repo(tmp_path)
    (root / "pkg" / "notes.py").write_text("# the user's uncommitted work\n")
    ws = Workspace.create(root, "r1")
    (ws.root / "pkg" / "mod.py").write_text(FIXED)
    tip = ws.commit(iteration_message(1, 4, "double doubles"))
    assert tip is not None
    ws.diff(tip)
    pass_test_diff(ws.root, ws.baseline)
    TestPins.from_commit(root, ws.baseline)
    working_tree_diff(root)
    accept_run(ws, "double doubles")
    assert ran(markers) == []


def test_a_filter_the_repository_names_is_no_filter_the_file_is_committed_as_written(
    tmp_path: Path,
) -> None:
    root, _ = hostile_repo(tmp_path)
    git(root, "config", "filter.evil.clean", "sed s/2/X/")  # would change what is stored
    ws = Workspace.create(root, "r1")
    (ws.root / "pkg" / "mod.py").write_text(FIXED)
    tip = ws.commit(iteration_message(1, 4, "double doubles"))
    assert tip is not None
    assert git_text(root, "show", f"{tip}:pkg/mod.py") + "\n" == FIXED


def test_a_merge_driver_the_repository_names_is_a_conflict_that_refuses_the_accept(
    tmp_path: Path,
) -> None:
    root, markers = hostile_repo(tmp_path)
    ws = Workspace.create(root, "r1")
    (ws.root / "pkg" / "mod.py").write_text(FIXED)
    assert ws.commit(iteration_message(1, 4, "double doubles")) is not None
    (root / "pkg" / "mod.py").write_text("# the user's line\n" + MODULE)
    git(root, "commit", "-q", "-am", "the user moves on")  # the user's git runs them
    for marker in markers.iterdir():
        marker.unlink()
    with pytest.raises(WorkspaceError, match=r"conflicts with the run in pkg/mod\.py"):
        accept_run(ws, "double doubles")
    assert ran(markers) == []


def test_a_required_filter_the_repository_names_refuses_the_run_naming_it(
    tmp_path: Path,
) -> None:
    root, markers = hostile_repo(tmp_path)
    git(root, "config", "filter.evil.required", "true")
    with pytest.raises(WorkspaceError, match=r"filter 'evil'.*git config --global"):
        Workspace.create(root, "r1")
    assert ran(markers) == []
    assert not git(root, "branch", "--list", "fixloop/*")


def test_a_relative_program_in_the_users_own_config_runs_neither(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, markers = hostile_repo(tmp_path)
    git(root, "config", "--unset", "diff.evil.textconv")
    user_config = tmp_path / "user-gitconfig"
    user_config.write_text('[diff "evil"]\n\ttextconv = ./textconv.sh\n')
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(user_config))
    (root / "pkg" / "mod.py").write_text(FIXED)
    working_tree_diff(root)
    assert "textconv" not in ran(markers)


def test_overrides_come_after_the_ones_the_user_set_in_the_environment() -> None:
    env = config_env({"core.fsmonitor": "false"}, {"GIT_CONFIG_COUNT": "2"})
    assert env == {
        "GIT_CONFIG_COUNT": "3",
        "GIT_CONFIG_KEY_2": "core.fsmonitor",
        "GIT_CONFIG_VALUE_2": "false",
    }
