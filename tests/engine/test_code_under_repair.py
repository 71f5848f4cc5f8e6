"""The code pane opens on the file being repaired: the files an iteration shows are ordered
with it first. A real git repository and a packet as the run directory holds it."""

from __future__ import annotations

from pathlib import Path

import git
import pytest

from engine.feedback.packet import EditAnchor, Failure, RepairPacket
from engine.project.paths import run_path
from engine.run.artifacts import iteration_artifacts
from engine.verify.results import Frame

pytestmark = pytest.mark.usefixtures("git_as_tester")

RUN_ID = "20261207-120000-code"
TEST = (
    "from textstats import mean_word_length\n\n\n"
    "def test_mean():\n    assert mean_word_length('a bb') == 1.5\n"
)
CORE = (
    "def mean_word_length(text):\n    words = text.split()\n"
    "    return sum(map(len, words)) // len(words)\n"
)
UTIL = "def words(text):\n    return text.split()\n"


def project(tmp_path: Path) -> tuple[Path, str]:
    root = tmp_path / "project"
    (root / "textstats").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "textstats" / "__init__.py").write_text("from textstats.core import mean_word_length\n")
    (root / "textstats" / "core.py").write_text(CORE)
    (root / "textstats" / "util.py").write_text(UTIL)
    (root / "tests" / "test_core.py").write_text(TEST)
    repo = git.Repo.init(root)
    repo.git.add(A=True)
    sha = repo.index.commit("baseline").hexsha
    return root, sha


def with_packet(root: Path, frame_file: str, edited: str = "") -> None:
    failure = Failure(
        test="tests/test_core.py::test_mean",
        file="tests/test_core.py",
        line=5,
        frame=Frame(file=frame_file, line=5),
    )
    last_edit = EditAnchor(files={edited: [(1, 1)]}) if edited else None
    packet = RepairPacket(
        summary="1 failed", error_class="logic", failures=[failure], last_edit=last_edit
    )
    directory = run_path(root, RUN_ID) / "iterations" / "00"
    directory.mkdir(parents=True)
    (directory / "packet.json").write_text(packet.model_dump_json())


def opened(root: Path, sha: str, **kwargs: list[str]) -> str:
    files = iteration_artifacts(root, RUN_ID, 0, rev=sha, **kwargs).files
    return files[0].path


def test_a_failure_in_the_test_itself_opens_the_code_it_imports_not_the_package_init(
    tmp_path: Path,
) -> None:
    root, sha = project(tmp_path)
    with_packet(root, "tests/test_core.py")
    assert opened(root, sha) == "textstats/core.py"


def test_the_traceback_frame_outside_the_tests_comes_first(tmp_path: Path) -> None:
    root, sha = project(tmp_path)
    with_packet(root, "textstats/util.py")
    assert opened(root, sha, named=["textstats/core.py"]) == "textstats/util.py"


def test_a_named_file_comes_before_the_one_the_proposal_edited(tmp_path: Path) -> None:
    root, sha = project(tmp_path)
    with_packet(root, "tests/test_core.py")
    touched = ["textstats/__init__.py"]
    assert opened(root, sha, named=["textstats/util.py"], touched=touched) == "textstats/util.py"
    assert opened(root, sha, touched=touched) == "textstats/__init__.py"


def test_the_file_the_last_proposal_edited_comes_before_the_fallback(tmp_path: Path) -> None:
    root, sha = project(tmp_path)
    with_packet(root, "tests/test_core.py", edited="textstats/__init__.py")
    assert opened(root, sha) == "textstats/__init__.py"
