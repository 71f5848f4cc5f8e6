"""What the person says to a running loop (engine/run/talk.py): notes wait for the next prompt
and go in the order typed, each once; files the person adds are checked before anything of
them is read, and stay until dropped."""

from __future__ import annotations

from pathlib import Path

import git
import pytest

from engine.errors import FileRefused
from engine.run.events import FilesShown, PacketReady, RunStarted
from engine.run.resume import resume_state
from engine.run.talk import Talk, checked_file, tracked_files


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "code.py").write_text("VALUE = 1\n")
    (root / "notes.md").write_text("notes\n")
    (root / "untracked.py").write_text("X = 2\n")
    repo = git.Repo.init(root)
    repo.index.add(["code.py", "notes.md"])
    repo.index.commit("baseline")
    return root


def test_notes_go_into_the_next_take_in_the_order_typed_and_only_once(project: Path) -> None:
    talk = Talk(project)
    talk.note("first")
    talk.note("second")
    assert talk.take().notes == ("first", "second")
    assert talk.take().notes == ()


def test_an_added_file_is_shown_in_every_take_until_dropped(project: Path) -> None:
    talk = Talk(project)
    talk.add("notes.md")
    first = talk.take()
    assert (first.added, first.shown) == (("notes.md",), ("notes.md",))
    assert talk.take().shown == ("notes.md",)
    assert talk.drop("notes.md")
    dropped = talk.take()
    assert (dropped.dropped, dropped.shown) == (("notes.md",), ())


def test_a_file_that_leads_into_git_is_refused_in_one_line(project: Path) -> None:
    with pytest.raises(FileRefused) as refused:
        checked_file(project, ".git/config")
    assert "git's own directory" in str(refused.value)
    assert "\n" not in str(refused.value)


def test_an_absolute_path_inside_the_project_is_named_by_its_path_in_it(project: Path) -> None:
    assert checked_file(project, str(project / "code.py")) == "code.py"


def test_the_picker_lists_only_tracked_files(project: Path) -> None:
    assert tracked_files(project) == ["code.py", "notes.md"]


def test_a_resumed_run_shows_the_files_its_trail_says_were_added() -> None:
    started = RunStarted(task="t", project="p", model="m", sandbox="s", max_iterations=4)
    baseline = PacketReady(n=0, verdict="failing", error_class="logic")
    events = [
        started,
        baseline,
        FilesShown(n=1, added=["a.py", "b.py"], shown=["a.py", "b.py"]),
        FilesShown(n=2, dropped=["a.py"], shown=["b.py"]),
    ]
    assert resume_state(events).shown_files == ["b.py"]
