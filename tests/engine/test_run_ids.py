"""Naming a run as git names a commit: its whole id, or a unique prefix of the id or of its
last part; one line for none and for several."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.errors import RunNotNamed
from engine.project.paths import runs_dir
from engine.run.run_directory import resolve_run

IDS = ("20261207-121744-0f5c", "20261207-130102-0ef6", "20261208-090000-a1b2")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for run in IDS:
        (runs_dir(tmp_path) / run).mkdir(parents=True)
    return tmp_path


def test_the_whole_id_names_its_run(project: Path) -> None:
    assert resolve_run(project, "20261207-130102-0ef6") == "20261207-130102-0ef6"


def test_a_unique_prefix_of_the_last_part_names_its_run(project: Path) -> None:
    assert resolve_run(project, "0ef6") == "20261207-130102-0ef6"
    assert resolve_run(project, "a1") == "20261208-090000-a1b2"


def test_a_unique_prefix_of_the_id_names_its_run(project: Path) -> None:
    assert resolve_run(project, "20261208") == "20261208-090000-a1b2"


def test_a_prefix_of_several_runs_lists_them_newest_first(project: Path) -> None:
    with pytest.raises(RunNotNamed) as raised:
        resolve_run(project, "0")
    assert str(raised.value) == (
        f"'0' names 2 runs in {project}: 20261207-130102-0ef6, 20261207-121744-0f5c; "
        "type more of the id"
    )


def test_a_prefix_of_no_run_says_where_to_look(project: Path) -> None:
    with pytest.raises(RunNotNamed) as raised:
        resolve_run(project, "beef")
    assert str(raised.value) == f"no run 'beef' in {project} (see `fixloop-tui runs`)"


def test_a_typed_path_never_names_a_run(project: Path) -> None:
    """Only names read from the runs directory come back: `..` names no run, nor its parent."""
    for given in ("..", "../runs", "", "20261207-121744-0f5c/../20261208-090000-a1b2"):
        with pytest.raises(RunNotNamed):
            resolve_run(project, given)
