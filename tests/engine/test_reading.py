"""A project file's text reaches a prompt only if the file is inside the project: a committed
symlink to a host file is never read for the model."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from engine.errors import FileTooLarge, OutsideProject
from engine.feedback.prompts import load_files
from engine.project.reading import MAX_SHOWN_BYTES, inside, project_text, shown_file


@pytest.fixture
def secret(tmp_path: Path) -> tuple[Path, str]:
    text = f"fixloop-canary-{uuid.uuid4().hex}"
    path = tmp_path / "home" / "id_rsa"
    path.parent.mkdir()
    path.write_text(text + "\n")
    return path, text


@pytest.fixture
def project(tmp_path: Path, secret: tuple[Path, str]) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "code.py").write_text("VALUE = 1\n")
    (root / "src" / "leak.py").symlink_to(secret[0])
    (root / "src" / "up").symlink_to(tmp_path)
    (root / "docs").symlink_to(root / "src")  # a link that stays inside
    return root


def test_a_symlink_to_a_host_file_is_not_read_for_the_prompt(
    project: Path, secret: tuple[Path, str]
) -> None:
    files = load_files(project, ["src/code.py", "src/leak.py", "src/up/home/id_rsa"])
    assert [f.path for f in files] == ["src/code.py"]
    assert all(secret[1] not in f.text for f in files)


@pytest.mark.parametrize("path", ["src/leak.py", "src/up/home/id_rsa", "../home/id_rsa"])
def test_paths_leading_outside_are_refused(project: Path, path: str) -> None:
    with pytest.raises(OutsideProject):
        project_text(project, path)


def test_an_absolute_path_is_refused(project: Path, secret: tuple[Path, str]) -> None:
    with pytest.raises(OutsideProject):
        inside(project, secret[0])


def test_links_that_stay_inside_are_read(project: Path) -> None:
    assert project_text(project, "docs/code.py") == "VALUE = 1\n"


def test_a_file_under_git_is_not_read_for_the_prompt(project: Path) -> None:
    (project / ".git").mkdir()
    token = f"sk-fixloop-canary-{uuid.uuid4()}"
    (project / ".git" / "config").write_text(f"[remote]\n\turl = https://u:{token}@x/r\n")
    (project / "remote.cfg").symlink_to(project / ".git" / "config")
    files = load_files(project, ["src/code.py", ".git/config", "remote.cfg"])
    assert [f.path for f in files] == ["src/code.py"]


def test_a_file_too_large_to_show_is_refused_before_it_is_read(project: Path) -> None:
    with (project / "big.py").open("wb") as big:
        big.truncate(MAX_SHOWN_BYTES + 1)
    with pytest.raises(FileTooLarge, match="too large to show"):
        shown_file(project, "big.py")
