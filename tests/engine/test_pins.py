"""Pinned tests, added skips and test-selection changes, on real git repositories."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import git
import pytest

from engine.project.pins import (
    AddedSkip,
    TestChange,
    TestPins,
    added_skips,
    changed_tests,
    config_changes,
    is_test_data,
    is_test_file,
)
from engine.run.preview import pass_test_diff

TEST_STATS = """\
from pkg.stats import mean


def test_mean():
    assert mean([1, 2, 3]) == 2


def test_mean_of_one():
    assert mean([4]) == 4
"""

STATS = """\
def mean(xs):
    return sum(xs) / len(xs)
"""

PYPROJECT = """\
[project]
name = "demo"
version = "0.1.0"

[tool.pytest.ini_options]
testpaths = ["tests"]
"""

AUTHOR = git.Actor("fixloop tests", "tests@fixloop.invalid")


def write(root: Path, files: dict[str, str]) -> None:
    for path, content in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)


def commit_all(repo: git.Repo, message: str) -> str:
    repo.git.add(A=True)
    return repo.index.commit(message, author=AUTHOR, committer=AUTHOR).hexsha


@pytest.fixture
def project(tmp_path: Path) -> git.Repo:
    """A committed project: a package, its tests, a conftest and pytest configuration."""
    root = tmp_path / "project"
    repo = git.Repo.init(root)
    write(
        root,
        {
            "pkg/__init__.py": "",
            "pkg/stats.py": STATS,
            "tests/__init__.py": "",
            "tests/test_stats.py": TEST_STATS,
            "tests/conftest.py": "",
            "pyproject.toml": PYPROJECT,
        },
    )
    commit_all(repo, "baseline")
    return repo


def root_of(repo: git.Repo) -> Path:
    assert repo.working_tree_dir is not None
    return Path(repo.working_tree_dir)


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


# --- which files are tests ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "test_stats.py",
        "pkg/stats_test.py",
        "conftest.py",
        "tests/helpers.py",
        "src/pkg/test/fixtures/data.py",
        "tests/unit/__init__.py",
    ],
)
def test_test_files_are_recognised(path: str) -> None:
    assert is_test_file(path)


@pytest.mark.parametrize(
    "path",
    ["pkg/stats.py", "tests/data/input.json", "pyproject.toml", "pytest.ini", "pkg/testing.py"],
)
def test_other_files_are_not_tests(path: str) -> None:
    assert not is_test_file(path)


@pytest.mark.parametrize(
    "path",
    [
        "tests/data/input.json",
        "testdata/golden.txt",
        "json_testcases/bitcount.json",
        "src/test_data/cases.csv",
        "app/fixtures/users.yaml",
        "test_solution_cases.txt",
        "pkg/parser_test.json",
        "test.txt",
        "e2e-tests/expected.out",
        "testdata/src/a/a.go",  # in testdata/, even code is what tests compare against
        "__fixtures__/input.js",
        "Tests/Data.json",
        "fixtures/golden.test.json",
        "pkg/testcases.txt",
    ],
)
def test_what_tests_read_is_test_data(path: str) -> None:
    assert is_test_data(path)


@pytest.mark.parametrize(
    "path",
    [
        "tests/test_stats.py",  # a test file, not data
        "pkg/stats.py",
        "pkg/fixtures/loader.py",  # code is the project's to repair, wherever it is
        "pyproject.toml",
        "data/latest.json",
        "docs/contest.md",
        "attestation/report.txt",
        "latest_data/x.json",
        "src/latestdata/x.json",
        "contestcases/a.txt",
        "packages/test-utils/package.json",  # a package of test helpers is code to repair
        "src/test_utils/py.typed",
    ],
)
def test_code_and_other_files_are_not_test_data(path: str) -> None:
    assert not is_test_data(path)


# --- pins ---------------------------------------------------------------------------------------


def test_test_data_is_pinned_and_a_rewrite_of_it_is_a_change(project: git.Repo) -> None:
    root = root_of(project)
    write(root, {"tests/data/cases.json": "[[1, 2]]\n", "tests/data/big.bin": "x" * 9})
    commit_all(project, "cases")
    pins = TestPins.from_commit(root)
    assert pins.files["tests/data/cases.json"] == sha256("[[1, 2]]\n")
    assert TestPins.from_tree(root).files == pins.files
    write(root, {"tests/data/cases.json": "[[1, 3]]\n"})
    (root / "tests" / "data" / "big.bin").unlink()
    assert changed_tests(pins, root) == [
        TestChange(path="tests/data/big.bin", change="deleted"),
        TestChange(path="tests/data/cases.json", change="modified"),
    ]


def test_data_git_converts_on_checkout_is_no_change_in_a_clean_worktree(
    project: git.Repo, tmp_path: Path
) -> None:
    root = root_of(project)
    write(root, {".gitattributes": "tests/data/*.txt text eol=crlf\n"})
    write(root, {"tests/data/cases.txt": "a\nb\n"})
    commit_all(project, "crlf data")
    pins = TestPins.from_commit(root)
    worktree = tmp_path / "worktree"
    project.git.worktree("add", "--detach", str(worktree), pins.rev)
    assert (worktree / "tests" / "data" / "cases.txt").read_bytes() == b"a\r\nb\r\n"
    assert changed_tests(pins, worktree) == []
    write(worktree, {"tests/data/cases.txt": "a\nc\n"})
    assert changed_tests(pins, worktree) == [
        TestChange(path="tests/data/cases.txt", change="modified")
    ]


def test_the_suspicious_pass_review_shows_a_change_to_test_data(project: git.Repo) -> None:
    root = root_of(project)
    write(root, {"tests/data/cases.json": "[[1, 2]]\n"})
    baseline = commit_all(project, "cases")
    write(root, {"tests/data/cases.json": "[[1, 3]]\n", "pkg/stats.py": STATS + "\n# x\n"})
    commit_all(project, "the run's change")
    shown = pass_test_diff(root, baseline)
    assert "+[[1, 3]]" in shown
    assert "pkg/stats.py" not in shown


def test_a_fifo_under_the_tests_is_not_read(project: git.Repo) -> None:
    root = root_of(project)
    os.mkfifo(root / "tests" / "pipe")
    assert "tests/pipe" not in TestPins.from_tree(root).files  # would block if it were read
    assert changed_tests(TestPins.from_commit(root), root) == []


def test_a_large_data_file_is_pinned_by_its_size(
    project: git.Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("engine.project.pins.DATA_HASH_LIMIT", 8)
    root = root_of(project)
    write(root, {"tests/data/big.bin": "x" * 9, "tests/data/small.txt": "y"})
    commit_all(project, "data")
    pins = TestPins.from_commit(root)
    assert pins.files["tests/data/big.bin"] == "size:9"
    assert pins.files["tests/data/small.txt"] == sha256("y")
    assert TestPins.from_tree(root).files == pins.files
    write(root, {"tests/data/big.bin": "z" * 9})  # the same size: not seen, by design
    assert changed_tests(pins, root) == []
    write(root, {"tests/data/big.bin": "z" * 10})
    assert changed_tests(pins, root) == [TestChange(path="tests/data/big.bin", change="modified")]


def test_pins_from_a_commit_hash_each_test_file(project: git.Repo) -> None:
    pins = TestPins.from_commit(root_of(project))
    assert pins.rev == project.head.commit.hexsha
    assert pins.files == {
        "pyproject.toml": sha256('{"ini_options": {"testpaths": ["tests"]}}'),
        "tests/__init__.py": sha256(""),
        "tests/conftest.py": sha256(""),
        "tests/test_stats.py": sha256(TEST_STATS),
    }


def test_pins_from_an_older_commit_ignore_later_tests(project: git.Repo) -> None:
    baseline = project.head.commit.hexsha
    write(root_of(project), {"tests/test_more.py": "def test_more():\n    pass\n"})
    commit_all(project, "more tests")
    assert "tests/test_more.py" not in TestPins.from_commit(root_of(project), baseline).files


def test_pins_from_the_tree_match_the_commit_of_a_clean_checkout(project: git.Repo) -> None:
    root = root_of(project)
    assert TestPins.from_tree(root).files == TestPins.from_commit(root).files


def test_pins_from_the_tree_skip_venvs_caches_and_fixloops_own_dir(project: git.Repo) -> None:
    root = root_of(project)
    write(
        root,
        {
            ".venv/lib/python3.11/site-packages/six/test_six.py": "",
            "env/pyvenv.cfg": "home = /usr/bin\n",
            "env/lib/test_env.py": "",
            ".fixloop/worktrees/run1/tests/test_stats.py": TEST_STATS,
            "build/lib/tests/test_stats.py": TEST_STATS,
            "tests/__pycache__/test_stats.py": "",
        },
    )
    assert set(TestPins.from_tree(root).files) == {
        "pyproject.toml",
        "tests/__init__.py",
        "tests/conftest.py",
        "tests/test_stats.py",
    }


# --- changed tests ------------------------------------------------------------------------------


def test_an_untouched_checkout_has_no_changed_tests(project: git.Repo) -> None:
    root = root_of(project)
    write(root, {"pkg/stats.py": STATS.replace("len(xs)", "max(len(xs), 1)")})
    assert changed_tests(TestPins.from_commit(root), root) == []


def test_an_edited_test_file_is_modified(project: git.Repo) -> None:
    root = root_of(project)
    pins = TestPins.from_commit(root)
    write(root, {"tests/test_stats.py": TEST_STATS.replace("== 2", "== 2.0")})
    assert changed_tests(pins, root) == [TestChange(path="tests/test_stats.py", change="modified")]


def test_a_removed_test_file_is_deleted(project: git.Repo) -> None:
    root = root_of(project)
    pins = TestPins.from_commit(root)
    (root / "tests" / "test_stats.py").unlink()
    assert changed_tests(pins, root) == [TestChange(path="tests/test_stats.py", change="deleted")]


def test_a_new_test_file_is_added(project: git.Repo) -> None:
    root = root_of(project)
    pins = TestPins.from_commit(root)
    write(root, {"tests/test_median.py": "def test_median():\n    assert True\n"})
    assert changed_tests(pins, root) == [TestChange(path="tests/test_median.py", change="added")]


def test_changes_are_found_in_a_worktree_of_the_repository(project: git.Repo) -> None:
    root = root_of(project)
    pins = TestPins.from_commit(root)
    worktree = root.parent / "worktree"
    project.git.worktree("add", "-b", "fixloop/run1", str(worktree))
    write(worktree, {"tests/test_stats.py": TEST_STATS.replace("test_mean_of_one", "_disabled")})
    assert changed_tests(pins, worktree) == [
        TestChange(path="tests/test_stats.py", change="modified")
    ]


# --- added skips --------------------------------------------------------------------------------


def skip_lines(repo: git.Repo, new_test_stats: str) -> list[AddedSkip]:
    root = root_of(repo)
    write(root, {"tests/test_stats.py": new_test_stats})
    return added_skips(root, "HEAD", root)


def test_an_added_skip_decorator_is_reported_with_its_line(project: git.Repo) -> None:
    edited = TEST_STATS.replace(
        "def test_mean():", '@pytest.mark.skip(reason="flaky")\ndef test_mean():'
    )
    assert skip_lines(project, "import pytest\n" + edited) == [
        AddedSkip(file="tests/test_stats.py", line=5, text='@pytest.mark.skip(reason="flaky")')
    ]


@pytest.mark.parametrize(
    "line",
    [
        '@pytest.mark.skipif(sys.platform == "linux", reason="later")',
        "@pytest.mark.xfail(strict=False)",
        '@unittest.skip("broken")',
        '@skipIf(True, "broken")',
        'pytestmark = pytest.mark.skip(reason="wip")',
        "__test__ = False",
        'collect_ignore = ["test_stats.py"]',
    ],
)
def test_added_lines_that_skip_or_hide_tests_are_reported(project: git.Repo, line: str) -> None:
    found = skip_lines(project, line + "\n" + TEST_STATS)
    assert [(s.line, s.text) for s in found] == [(1, line)]


@pytest.mark.parametrize(
    "call",
    [
        'pytest.skip("not today")',
        'pytest.xfail("known bug")',
        'pytest.importorskip("numpy")',
        'raise unittest.SkipTest("later")',
        'self.skipTest("later")',
    ],
)
def test_added_calls_that_skip_inside_a_test_are_reported(project: git.Repo, call: str) -> None:
    edited = TEST_STATS.replace("def test_mean():\n", f"def test_mean():\n    {call}\n")
    found = skip_lines(project, edited)
    assert [(s.line, s.text) for s in found] == [(5, call)]


def test_a_skip_that_was_already_there_is_not_reported(project: git.Repo) -> None:
    root = root_of(project)
    write(root, {"tests/test_old.py": '@pytest.mark.skip("old")\ndef test_old():\n    pass\n'})
    commit_all(project, "an old skip")
    write(root, {"tests/test_old.py": '@pytest.mark.skip("old")\ndef test_old():\n    pass\n\n'})
    assert added_skips(root, "HEAD", root) == []


def test_a_commented_out_skip_is_not_reported(project: git.Repo) -> None:
    assert skip_lines(project, "# @pytest.mark.skip\n" + TEST_STATS) == []


def test_a_skip_in_a_new_test_file_is_reported(project: git.Repo) -> None:
    root = root_of(project)
    write(root, {"tests/test_new.py": "import pytest\n\npytestmark = pytest.mark.skip\n"})
    assert added_skips(root, "HEAD", root) == [
        AddedSkip(file="tests/test_new.py", line=3, text="pytestmark = pytest.mark.skip")
    ]


def test_skips_committed_after_the_pinned_revision_are_reported(project: git.Repo) -> None:
    root = root_of(project)
    baseline = project.head.commit.hexsha
    write(root, {"tests/test_stats.py": "import pytest\npytest.skip(allow_module_level=True)\n"})
    commit_all(project, "fixloop[iter 1/4]: make it pass")
    assert [s.line for s in added_skips(root, baseline, root)] == [2]


def test_skips_in_a_worktree_are_compared_with_the_repository(project: git.Repo) -> None:
    root = root_of(project)
    worktree = root.parent / "worktree"
    project.git.worktree("add", "-b", "fixloop/run2", str(worktree))
    write(worktree, {"tests/test_stats.py": "__test__ = False\n" + TEST_STATS})
    assert added_skips(root, "HEAD", worktree) == [
        AddedSkip(file="tests/test_stats.py", line=1, text="__test__ = False")
    ]


# --- pytest selection in configuration ----------------------------------------------------------


def test_addopts_deselecting_tests_in_pyproject_is_reported(project: git.Repo) -> None:
    root = root_of(project)
    write(root, {"pyproject.toml": PYPROJECT + "addopts = \"-k 'not test_mean'\"\n"})
    assert config_changes(root, "HEAD", root) == [
        AddedSkip(file="pyproject.toml", line=7, text="addopts = \"-k 'not test_mean'\"")
    ]


def test_a_new_pytest_ini_with_deselect_is_reported(project: git.Repo) -> None:
    root = root_of(project)
    write(root, {"pytest.ini": "[pytest]\naddopts = --deselect tests/test_stats.py::test_mean\n"})
    found = config_changes(root, "HEAD", root)
    assert [(s.file, s.line) for s in found] == [("pytest.ini", 2)]


def test_a_conftest_hook_that_drops_tests_is_reported(project: git.Repo) -> None:
    root = root_of(project)
    hook = "def pytest_collection_modifyitems(config, items):\n    items.clear()\n"
    write(root, {"tests/conftest.py": hook})
    found = config_changes(root, "HEAD", root)
    assert [(s.file, s.line) for s in found] == [("tests/conftest.py", 1)]


def test_unrelated_configuration_changes_are_not_reported(project: git.Repo) -> None:
    root = root_of(project)
    write(root, {"pyproject.toml": PYPROJECT.replace('"0.1.0"', '"0.2.0"') + "\n[tool.ruff]\n"})
    assert config_changes(root, "HEAD", root) == []
