"""Seeded bugs in a whole project: which candidates there are, the seed's order, the screening
(here on the host, as for the pinned real projects: the project is the test's own), the task
copies and whether a fix touched the bug's function. Real files and real git in tmp_path."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from pathlib import Path

import git
import pytest

from bench.suite.project_mutants import ProjectMutant, seeded_candidates, source_files
from bench.suite.project_tasks import copy_project, make_task, touched_function
from bench.suite.real import BenchProject, spread
from bench.suite.screening import HostSuite, cache_file, cached, remember, screen
from engine.project.settings import Settings

SOURCE = '''"""Helpers."""


def clamp(value, low, high):
    if value < low:
        return low
    if value > high:
        return high
    return value


def total(values):
    result = 0
    for value in values:
        result += value
    return result


def unused(n):
    return n * 2 + 1
'''
SUITE = """from shapes import clamp, total


def test_clamp():
    assert clamp(-1, 0, 9) == 0
    assert clamp(12, 0, 9) == 9
    assert clamp(4, 0, 9) == 4


def test_total():
    assert total([1, 2, 3]) == 6
"""


def project(root: Path) -> Path:
    """A flat layout (`python -m pytest` from its root imports it), a test tree, a conftest,
    a venv-like directory and a linked file that must never be seeded."""
    (root / "shapes").mkdir(parents=True)
    (root / "shapes" / "__init__.py").write_text(SOURCE)
    (root / "tests").mkdir()
    (root / "tests" / "test_shapes.py").write_text(SUITE)
    (root / "conftest.py").write_text("def helper(a):\n    return a + 1\n")
    (root / ".venv" / "lib").mkdir(parents=True)
    (root / ".venv" / "lib" / "site.py").write_text("def f(x):\n    return x + 1\n")
    outside = root.parent / "outside.py"
    outside.write_text("def g(x):\n    return x - 1\n")
    (root / "linked.py").symlink_to(outside)
    return root


def test_only_functions_in_the_projects_own_source_are_candidates(tmp_path: Path) -> None:
    root = project(tmp_path / "p")
    assert source_files(root) == ["shapes/__init__.py"]
    found = list(seeded_candidates(root, 0))
    assert found
    assert {m.path for m in found} == {"shapes/__init__.py"}
    assert {m.function for m in found} <= {"clamp", "total", "unused"}


def test_a_function_gives_at_most_one_bug(tmp_path: Path) -> None:
    root = project(tmp_path / "p")
    assert len([m for m in seeded_candidates(root, 0) if m.function == "total"]) > 1
    kept = screened(root, 0)
    assert sorted(m.function for m in kept) == sorted({m.function for m in kept})


def test_the_same_seed_gives_the_same_order_and_others_differ(tmp_path: Path) -> None:
    root = project(tmp_path / "p")
    orders = {seed: [m.id for m in seeded_candidates(root, seed)] for seed in range(6)}
    assert [m.id for m in seeded_candidates(root, 0)] == orders[0]
    assert len({tuple(order) for order in orders.values()}) > 1


def screened(root: Path, seed: int) -> list[ProjectMutant]:
    scratch = copy_project(root, root.parent / f"scratch-{seed}-{len(os.listdir(root.parent))}")
    suite = HostSuite(Path(sys.executable), 120, {"PATH": "/usr/bin:/bin"})
    try:
        return asyncio.run(
            screen(seeded_candidates(root, seed), suite, scratch, want=3, max_tries=9)
        )
    finally:
        shutil.rmtree(scratch)


def test_a_bug_the_suite_does_not_see_is_left_out(tmp_path: Path) -> None:
    root = project(tmp_path / "p")
    tried = [m.function for m in seeded_candidates(root, 0)][:4]
    assert "unused" in tried  # the seed tries it early ...
    kept = screened(root, 0)
    assert "unused" not in {m.function for m in kept}  # ... but nothing tests it
    assert "total" in {m.function for m in kept}
    assert all(m.failing for m in kept)


def test_the_same_seed_screens_the_same_bugs(tmp_path: Path) -> None:
    root = project(tmp_path / "p")
    first = screened(root, 5)
    again = screened(root, 5)
    assert [(m.id, m.failing) for m in first] == [(m.id, m.failing) for m in again]


def test_screening_leaves_the_scratch_copy_as_it_was(tmp_path: Path) -> None:
    root = project(tmp_path / "p")
    scratch = copy_project(root, tmp_path / "scratch")
    suite = HostSuite(Path(sys.executable), 120, {"PATH": "/usr/bin:/bin"})
    asyncio.run(screen(seeded_candidates(root, 0), suite, scratch, want=2, max_tries=9))
    assert (scratch / "shapes" / "__init__.py").read_text() == SOURCE


def test_a_suite_that_fails_before_any_bug_is_refused(tmp_path: Path) -> None:
    from bench.errors import ScreeningError

    root = project(tmp_path / "p")
    (root / "tests" / "test_broken.py").write_text("def test_broken():\n    assert False\n")
    with pytest.raises(ScreeningError, match="does not pass before any bug"):
        screened(root, 0)


def test_the_task_copy_points_its_venv_at_itself(tmp_path: Path) -> None:
    root = tmp_path / "src-project"
    site = root / ".venv" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (root / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (site / "__editable__.shapes-0.pth").write_text(f"{root}/src\n")
    (site / "other.pth").write_text(f"{root}-sibling/src\n")  # another project: not ours
    copy = copy_project(root, tmp_path / "copy")
    assert (copy / site.relative_to(root) / "__editable__.shapes-0.pth").read_text() == (
        f"{copy}/src\n"
    )
    assert (copy / site.relative_to(root) / "other.pth").read_text() == f"{root}-sibling/src\n"
    assert (site / "__editable__.shapes-0.pth").read_text() == f"{root}/src\n"


def test_the_task_is_one_commit_holding_the_bug_and_no_venv(tmp_path: Path) -> None:
    root = project(tmp_path / "p")
    (root / "linked.py").unlink()
    bug = next(seeded_candidates(root, 0))
    task = make_task(root, tmp_path / "task", bug)
    repo = git.Repo(task)
    assert len(list(repo.iter_commits())) == 1
    assert not repo.is_dirty(untracked_files=True)
    assert not any(path.startswith(".venv") for path in repo.git.ls_files().splitlines())
    assert (task / bug.path).read_text() == bug.applied(SOURCE)


def test_a_fix_in_the_bugs_function_touched_it_and_one_elsewhere_did_not(tmp_path: Path) -> None:
    root = project(tmp_path / "p")
    (root / "linked.py").unlink()
    bug = next(m for m in seeded_candidates(root, 0) if m.function == "total")
    task = make_task(root, tmp_path / "task", bug)
    repo = git.Repo(task)
    base = repo.head.commit.hexsha
    module = task / bug.path
    bugged = module.read_text()
    module.write_text(bugged.replace("return n * 2 + 1", "return n * 2 + 2"))
    repo.git.add("-A")
    elsewhere = repo.index.commit("elsewhere").hexsha
    module.write_text(SOURCE)
    repo.git.add("-A")
    fixed = repo.index.commit("fixed").hexsha
    assert touched_function(task, base, fixed, bug)
    assert not touched_function(task, base, elsewhere, bug)
    assert not touched_function(task, base, None, bug)


def test_limit_takes_a_bug_from_every_project_before_a_second(tmp_path: Path) -> None:
    root = project(tmp_path / "p")
    bugs = list(seeded_candidates(root, 0))
    projects = [
        BenchProject(name=name, source=root, settings=Settings(), bugs=bugs, screened_on="host")
        for name in ("a", "b", "c")
    ]
    assert [item.project.name for item in spread(projects, 4)] == ["a", "b", "c", "a"]


def test_a_failed_subtest_names_its_test() -> None:
    from bench.suite.screening import failing_ids

    # pytest 9's short summary for a failed subtest, as more-itertools' suite prints it.
    summary = (
        "=========================== short test summary info ============================\n"
        "SUBFAILED(expected=[(0, 1), (1, 2)]) tests/test_recipes.py::SlidingWindowTests::"
        "test_islice_version\n"
        "FAILED tests/test_more.py::ChunkedTests::test_even - AssertionError: 1 != 2\n"
        "1 failed, 723 passed, 11358 subtests passed in 35.73s\n"
    )
    assert failing_ids(summary) == [
        "tests/test_more.py::ChunkedTests::test_even",
        "tests/test_recipes.py::SlidingWindowTests::test_islice_version",
    ]


def test_a_remembered_screening_another_user_could_write_is_not_used(tmp_path: Path) -> None:
    where = cache_file("real:x", 0, 3, {"XDG_CACHE_HOME": str(tmp_path)})
    bug = next(seeded_candidates(project(tmp_path / "p"), 0))
    remember(where, [bug])
    assert cached(where) == [bug]
    where.chmod(0o666)
    assert cached(where) is None


def test_a_prompt_past_the_models_context_fails_the_task_not_the_bench() -> None:
    from bench.suite.real import refused

    # As the embedded model refused a real project's prompt.
    assert refused(
        "model local/qwen2.5-coder-1.5b: bad request (HTTP 400 Bad Request): request (8486 "
        "tokens) exceeds the available context size (4096 tokens), try increasing it"
    )
    assert not refused("model openai/x: authentication failed (HTTP 401): check the key")
