"""Reading unified diffs: real git diffs of a real repository, and difflib's as the review shows."""

from __future__ import annotations

from pathlib import Path

import git
import pytest

from engine.edits.diff import Diff, parse_diff
from engine.run.preview import file_diff

STATS = """\
def mean(xs):
    return sum(xs) / len(xs)
"""

TEST_STATS = """\
from pkg.stats import mean


def test_mean():
    assert mean([1, 2, 3]) == 2


def test_mean_of_one():
    assert mean([4]) == 4
"""

AUTHOR = git.Actor("fixloop tests", "tests@fixloop.invalid")


def write(root: Path, files: dict[str, str]) -> None:
    for path, content in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)


@pytest.fixture
def project(tmp_path: Path) -> git.Repo:
    """A committed project: a package, its tests and a conftest."""
    root = tmp_path / "project"
    repo = git.Repo.init(root)
    write(
        root,
        {
            "pkg/stats.py": STATS,
            "tests/test_stats.py": TEST_STATS,
            "tests/conftest.py": "",
            "notes/old.txt": "one\ntwo\nthree\nfour\nfive\n",
        },
    )
    repo.git.add(A=True)
    repo.index.commit("baseline", author=AUTHOR, committer=AUTHOR)
    return repo


def root_of(repo: git.Repo) -> Path:
    assert repo.working_tree_dir is not None
    return Path(repo.working_tree_dir)


def added(diff: str) -> dict[str, list[tuple[int | None, str]]]:
    """Added lines per file that the diff leaves in place: path -> [(new line number, text)]."""
    return {
        file.new_path: [(line.new, line.text) for line in file.added()]
        for file in parse_diff(diff).files
        if file.new_path is not None
    }


def every_line(diff: Diff) -> list[str]:
    return [*diff.preamble, *(line for file in diff.files for line in file.lines)]


def test_added_lines_of_a_real_diff_carry_their_new_line_numbers(project: git.Repo) -> None:
    root = root_of(project)
    new_stats = STATS.replace(
        "def mean(xs):\n", "def mean(xs):\n    if not xs:\n        return 0\n"
    )
    write(root, {"pkg/stats.py": new_stats, "pkg/median.py": "def median(xs):\n    return xs[0]\n"})
    (root / "tests" / "conftest.py").unlink()
    project.git.add(A=True)
    diff = project.git.diff("--cached", "HEAD")
    assert added(diff) == {
        "pkg/median.py": [(1, "def median(xs):"), (2, "    return xs[0]")],
        "pkg/stats.py": [(2, "    if not xs:"), (3, "        return 0")],
    }


def test_a_file_with_only_removed_lines_has_no_added_lines(project: git.Repo) -> None:
    root = root_of(project)
    write(root, {"tests/test_stats.py": TEST_STATS.split("\n\n\ndef test_mean_of_one")[0] + "\n"})
    assert added(project.git.diff()) == {"tests/test_stats.py": []}


def test_added_lines_that_look_like_diff_headers_are_kept(project: git.Repo) -> None:
    root = root_of(project)
    write(root, {"notes.txt": "++ plus\n--- minus\n+++ b/fake.py\ndiff --git a/x b/x\n"})
    project.git.add(A=True)
    assert added(project.git.diff("--cached")) == {
        "notes.txt": [
            (1, "++ plus"),
            (2, "--- minus"),
            (3, "+++ b/fake.py"),
            (4, "diff --git a/x b/x"),
        ]
    }


def test_quoted_paths_in_a_diff_are_unquoted(project: git.Repo) -> None:
    root = root_of(project)
    write(root, {"docs/é.md": "bonjour\n"})
    project.git.add(A=True)
    diff = project.git.diff("--cached")
    assert '"b/docs/\\303\\251.md"' in diff  # git quotes non-ASCII paths by default
    assert added(diff) == {"docs/é.md": [(1, "bonjour")]}


def test_a_git_diff_is_read_back_line_for_line(project: git.Repo) -> None:
    root = root_of(project)
    write(root, {"pkg/stats.py": STATS.rstrip("\n"), "notes/new.txt": "one\ntwo\nthree\nfive\n"})
    (root / "notes/old.txt").unlink()
    (root / "tests/conftest.py").chmod(0o755)
    project.git.add(A=True)
    project.index.commit("change", author=AUTHOR, committer=AUTHOR)
    text = project.git.diff_tree("-p", "-M", "--no-color", "HEAD") + "\n"

    diff = parse_diff(text)

    assert "\n".join(every_line(diff)) + "\n" == text
    assert diff.preamble == (project.head.commit.hexsha,)  # diff-tree names the commit first
    assert [(f.old_path, f.new_path) for f in diff.files] == [
        ("notes/old.txt", "notes/new.txt"),
        ("pkg/stats.py", "pkg/stats.py"),
        ("tests/conftest.py", "tests/conftest.py"),
    ]
    assert [line.kind for line in diff.files[1].hunks[0].lines] == [
        "context",
        "removed",
        "added",
        "no-newline",
    ]


def test_new_and_deleted_files_have_no_old_or_new_path(project: git.Repo) -> None:
    root = root_of(project)
    write(root, {"pkg/empty.py": "", "pkg/new.py": "x = 1\n"})
    (root / "pkg/stats.py").unlink()
    project.git.add(A=True)

    files = parse_diff(project.git.diff("--cached", "--no-renames")).files

    assert [(f.old_path, f.new_path, f.path) for f in files] == [
        (None, "pkg/empty.py", "pkg/empty.py"),  # an empty new file has no ---/+++ lines
        (None, "pkg/new.py", "pkg/new.py"),
        ("pkg/stats.py", None, "pkg/stats.py"),
    ]
    assert files[2].hunks[0].new_range is None


def test_line_numbers_follow_both_sides_of_a_hunk(project: git.Repo) -> None:
    root = root_of(project)
    write(root, {"notes/old.txt": "one\n2\nthree\nfour\nfive\nsix\n"})

    [hunk] = parse_diff(project.git.diff()).files[0].hunks

    numbered = [(line.kind, line.old, line.new, line.text) for line in hunk.lines]
    assert numbered == [
        ("context", 1, 1, "one"),
        ("removed", 2, None, "two"),
        ("added", None, 2, "2"),
        ("context", 3, 3, "three"),
        ("context", 4, 4, "four"),
        ("context", 5, 5, "five"),
        ("added", None, 6, "six"),
    ]
    assert hunk.new_range == (1, 6)


def test_difflib_diffs_joined_together_are_one_file_each() -> None:
    text = "".join(
        [
            file_diff("a.py", "x\ny\n", "x\nz\n"),
            file_diff("new.py", None, "--- not a header\n"),
            file_diff("gone.py", "d\n", None),
        ]
    )

    diff = parse_diff(text)

    assert [(f.old_path, f.new_path) for f in diff.files] == [
        ("a.py", "a.py"),
        (None, "new.py"),
        ("gone.py", None),
    ]
    assert [line.text for line in diff.files[1].added()] == ["--- not a header"]
    assert "".join(f.text for f in diff.files) == text


def test_a_crlf_files_lines_are_read_without_their_carriage_return() -> None:
    text = "--- a/w.py\r\n+++ b/w.py\r\n@@ -1 +1 @@\r\n-x = 1\r\n+x = 2\r\n"

    [file] = parse_diff(text).files

    assert file.new_path == "w.py"
    assert [line.text for line in file.hunks[0].lines] == ["x = 1", "x = 2"]
