"""The run's worktree and branch, on real git repositories: the user's checkout stays untouched."""

from __future__ import annotations

import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

import git
import pytest

from engine.errors import WorkspaceError
from engine.project.accept import accept_run
from engine.project.workspace import BASELINE_MESSAGE, Workspace, accept_message, iteration_message
from sandbox.errors import FixloopError

STATS = """\
def mean(xs):
    return sum(xs) / len(xs)


def spread(xs):
    return max(xs) - min(xs)
"""

FIXED_STATS = """\
def mean(xs):
    if not xs:
        return 0.0
    return sum(xs) / len(xs)


def spread(xs):
    return max(xs) - min(xs)
"""

TEST_STATS = """\
from pkg.stats import mean


def test_mean():
    assert mean([1, 2, 3]) == 2
"""

USER_ENV = {
    "GIT_AUTHOR_NAME": "Test User",
    "GIT_AUTHOR_EMAIL": "user@example.invalid",
    "GIT_COMMITTER_NAME": "Test User",
    "GIT_COMMITTER_EMAIL": "user@example.invalid",
}


@pytest.fixture(autouse=True)
def isolated_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No global or system git config, no identity from the environment, no repo above tmp_path."""
    config = tmp_path / "gitconfig"
    config.write_text("")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    for name in (*USER_ENV, "EMAIL", "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        monkeypatch.delenv(name, raising=False)


def write(root: Path, files: dict[str, str]) -> None:
    for path, content in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)


def root_of(repo: git.Repo) -> Path:
    assert repo.working_tree_dir is not None
    return Path(repo.working_tree_dir)


def commit_all(repo: git.Repo, message: str) -> str:
    repo.git.add(A=True)
    repo.git.commit("-q", "-m", message, env=USER_ENV)
    return repo.head.commit.hexsha


def make_project(path: Path, *, identity: bool = True) -> git.Repo:
    """A committed project on branch main: a package, its tests, an ignore file, a script."""
    repo = git.Repo.init(path, initial_branch="main")
    if identity:
        with repo.config_writer() as config:
            config.set_value("user", "name", "Test User")
            config.set_value("user", "email", "user@example.invalid")
    write(
        path,
        {
            ".gitignore": "*.log\n",
            "pkg/__init__.py": "",
            "pkg/stats.py": STATS,
            "pkg/other.py": "OTHER = 1\n",
            "pkg/staged.py": "STAGED = 1\n",
            "pkg/gone.py": "GONE = 1\n",
            "tests/test_stats.py": TEST_STATS,
            "run.sh": "#!/bin/sh\necho run\n",
        },
    )
    commit_all(repo, "initial")
    return repo


def make_dirty(repo: git.Repo) -> None:
    """Uncommitted work of every kind `git status` shows, plus an ignored file."""
    root = root_of(repo)
    write(root, {"pkg/other.py": "OTHER = 2  # unstaged\n", "pkg/staged.py": "STAGED = 2\n"})
    repo.git.add("pkg/staged.py")
    (root / "pkg/gone.py").unlink()
    write(root, {"notes.txt": "remember the milk\n", "debug.log": "noise\n"})


@pytest.fixture
def project(tmp_path: Path) -> git.Repo:
    return make_project(tmp_path / "project")


@pytest.fixture
def dirty(project: git.Repo) -> git.Repo:
    make_dirty(project)
    return project


@dataclass(frozen=True)
class Checkout:
    """Everything of the user's checkout that a run must leave alone, byte for byte."""

    files: dict[str, tuple[int, bytes]]  # path -> (st_mode, bytes or link target)
    index: bytes
    head_file: bytes
    head_sha: str
    branch: str | None
    branches: dict[str, str]  # name -> sha, without fixloop/*


def snapshot(repo: git.Repo) -> Checkout:
    root = root_of(repo)
    files: dict[str, tuple[int, bytes]] = {}
    for directory, dirnames, filenames in os.walk(root):
        here = Path(directory)
        if here == root:
            dirnames[:] = [d for d in dirnames if d not in {".git", ".fixloop"}]
        for name in [*dirnames, *filenames]:
            path = here / name
            mode = path.lstat().st_mode
            relative = path.relative_to(root).as_posix()
            if stat.S_ISLNK(mode):
                files[relative] = (mode, os.readlink(path).encode())
            elif stat.S_ISDIR(mode):
                files[relative + "/"] = (mode, b"")
            else:
                files[relative] = (mode, path.read_bytes())
    git_dir = Path(repo.git_dir)
    status, branch, _ = repo.git.symbolic_ref(
        "--quiet", "--short", "HEAD", with_extended_output=True, with_exceptions=False
    )
    refs = repo.git.for_each_ref("--format=%(refname:short) %(objectname)", "refs/heads")
    branches = dict(line.split(" ") for line in refs.splitlines())
    return Checkout(
        files=files,
        index=(git_dir / "index").read_bytes(),
        head_file=(git_dir / "HEAD").read_bytes(),
        head_sha=repo.git.rev_parse("HEAD"),
        branch=branch if status == 0 else None,
        branches={k: v for k, v in branches.items() if not k.startswith("fixloop/")},
    )


def branch_exists(repo: git.Repo, name: str) -> bool:
    return name in {head.name for head in repo.heads}


def only_the_main_worktree(repo: git.Repo) -> bool:
    """Git knows no worktree but the checkout itself (no run's worktree is left registered)."""
    listed = repo.git.worktree("list", "--porcelain").splitlines()
    return [line for line in listed if line.startswith("worktree ")] == [
        f"worktree {root_of(repo).resolve()}"
    ]


def tree_files(repo: git.Repo, rev: str) -> dict[str, tuple[str, bytes]]:
    """path -> (mode, content) of every file in a commit."""
    commit = repo.commit(rev)
    return {
        str(blob.path): (f"{blob.mode:o}", blob.data_stream.read())
        for blob in commit.tree.traverse()
        if isinstance(blob, git.Blob)
    }


def status_lines(repo: git.Repo) -> set[str]:
    return set(repo.git.status("--porcelain", strip_newline_in_stdout=False).splitlines())


def index_entries(repo: git.Repo) -> dict[str, tuple[object, ...]]:
    """Every index entry with its stat data, read from the index file without refreshing it."""
    index = git.IndexFile(repo, str(Path(repo.git_dir) / "index"))
    return {str(path): tuple(entry) for (path, _), entry in index.entries.items()}


def added_lines(diff: str) -> list[str]:
    return [line[1:] for line in diff.splitlines() if line[:1] == "+" and line[:4] != "+++ "]


def run_changes_stats(ws: Workspace) -> str:
    write(ws.root, {"pkg/stats.py": FIXED_STATS})
    sha = ws.commit(iteration_message(1, 4, "guard mean against empty input"))
    assert sha is not None
    return sha


# --- creating a run -------------------------------------------------------------------------


def test_create_makes_a_worktree_on_a_run_branch_from_head(project: git.Repo) -> None:
    ws = Workspace.create(root_of(project), "r1")
    assert ws.root == root_of(project) / ".fixloop" / "worktrees" / "r1"
    assert ws.branch == "fixloop/r1"
    assert git.Repo(ws.root).active_branch.name == "fixloop/r1"
    assert (ws.start_head, ws.user_branch) == (project.head.commit.hexsha, "main")
    assert (ws.root / "pkg/stats.py").read_text() == STATS


def test_a_clean_tree_gets_no_baseline_commit(project: git.Repo) -> None:
    ws = Workspace.create(root_of(project), "r1")
    assert ws.baseline == ws.start_head
    assert project.commit("fixloop/r1").hexsha == ws.start_head


def test_a_dirty_tree_reaches_the_baseline_commit(dirty: git.Repo) -> None:
    ws = Workspace.create(root_of(dirty), "r1")
    baseline = dirty.commit(ws.baseline)
    assert baseline.message.strip() == BASELINE_MESSAGE
    assert [p.hexsha for p in baseline.parents] == [ws.start_head]
    files = tree_files(dirty, ws.baseline)
    assert files["pkg/other.py"][1] == b"OTHER = 2  # unstaged\n"
    assert files["pkg/staged.py"][1] == b"STAGED = 2\n"
    assert files["notes.txt"][1] == b"remember the milk\n"
    assert "pkg/gone.py" not in files
    assert "debug.log" not in files  # ignored: not the user's work
    assert not (ws.root / "debug.log").exists()
    assert (ws.root / "notes.txt").read_text() == "remember the milk\n"
    assert not (ws.root / "pkg/gone.py").exists()


def test_a_project_that_ignores_fixloops_directory_reaches_its_baseline(dirty: git.Repo) -> None:
    root = root_of(dirty)
    write(root, {".gitignore": ".fixloop/\n", ".fixloop/runs/old/run.json": "{}\n"})
    ws = Workspace.create(root, "r1")
    files = tree_files(dirty, ws.baseline)
    assert files["notes.txt"][1] == b"remember the milk\n"
    assert not any(path.startswith(".fixloop/") for path in files)


def test_fixloops_directory_stays_out_of_the_baseline_when_not_ignored(dirty: git.Repo) -> None:
    write(root_of(dirty), {".fixloop/runs/old/run.json": "{}\n"})
    ws = Workspace.create(root_of(dirty), "r1")
    assert not any(path.startswith(".fixloop/") for path in tree_files(dirty, ws.baseline))


def test_the_working_copy_wins_over_what_is_staged(project: git.Repo) -> None:
    root = root_of(project)
    write(root, {"pkg/other.py": "OTHER = 'staged'\n"})
    project.git.add("pkg/other.py")
    write(root, {"pkg/other.py": "OTHER = 'working'\n"})
    ws = Workspace.create(root, "r1")
    assert tree_files(project, ws.baseline)["pkg/other.py"][1] == b"OTHER = 'working'\n"


def test_the_baseline_keeps_file_modes_and_symlinks(project: git.Repo) -> None:
    root = root_of(project)
    (root / "run.sh").chmod(0o755)
    write(root, {"tool.sh": "#!/bin/sh\n"})
    (root / "tool.sh").chmod(0o755)
    (root / "latest").symlink_to("pkg/stats.py")
    ws = Workspace.create(root, "r1")
    files = tree_files(project, ws.baseline)
    assert files["run.sh"][0] == files["tool.sh"][0] == "100755"
    assert files["latest"] == ("120000", b"pkg/stats.py")
    assert os.access(ws.root / "run.sh", os.X_OK)
    assert os.readlink(ws.root / "latest") == "pkg/stats.py"


def test_a_tracked_file_that_is_now_ignored_stays_in_the_baseline(project: git.Repo) -> None:
    root = root_of(project)
    write(root, {"keep.log": "tracked\n"})
    project.git.add("--force", "keep.log")
    commit_all(project, "track a log")
    write(root, {"keep.log": "tracked, edited\n"})
    ws = Workspace.create(root, "r1")
    assert tree_files(project, ws.baseline)["keep.log"][1] == b"tracked, edited\n"


def test_create_leaves_the_checkout_byte_for_byte_identical(dirty: git.Repo) -> None:
    before = snapshot(dirty)
    Workspace.create(root_of(dirty), "r1")
    assert snapshot(dirty) == before


def test_fixloop_gitignore_keeps_git_status_clean(dirty: git.Repo) -> None:
    before = status_lines(dirty)
    ws = Workspace.create(root_of(dirty), "r1")
    run_changes_stats(ws)
    assert (root_of(dirty) / ".fixloop" / ".gitignore").read_text() == "*\n"
    assert status_lines(dirty) == before
    assert (root_of(dirty) / ".gitignore").read_text() == "*.log\n"


def test_a_detached_head_is_allowed_and_remembered(project: git.Repo) -> None:
    project.git.checkout("--detach", "--quiet")
    ws = Workspace.create(root_of(project), "r1")
    assert ws.user_branch is None
    assert project.commit("fixloop/r1").hexsha == ws.start_head == project.head.commit.hexsha
    assert project.head.is_detached


def test_the_users_hooks_do_not_run_for_the_runs_git_work(project: git.Repo) -> None:
    marker = root_of(project).parent / "hook-ran"
    for name in ("post-checkout", "pre-commit", "post-commit"):
        hook = Path(project.git_dir) / "hooks" / name
        hook.write_text(f"#!/bin/sh\necho {name} >> {marker}\nexit 1\n")
        hook.chmod(0o755)
    ws = Workspace.create(root_of(project), "r1")
    run_changes_stats(ws)
    accept_run(ws, "Guard mean")
    assert not marker.exists()


def test_pins_fingerprint_the_tests_at_the_baseline(project: git.Repo) -> None:
    write(root_of(project), {"tests/test_new.py": "def test_new():\n    pass\n"})
    ws = Workspace.create(root_of(project), "r1")
    assert ws.pins.rev == ws.baseline
    assert set(ws.pins.files) == {"tests/test_stats.py", "tests/test_new.py"}


def test_commits_use_a_fixed_identity_when_the_user_has_none(tmp_path: Path) -> None:
    repo = make_project(tmp_path / "project", identity=False)
    make_dirty(repo)
    ws = Workspace.create(root_of(repo), "r1")
    author = repo.commit(ws.baseline).author
    assert (author.name, author.email) == ("fixloop", "fixloop@localhost")


def test_commits_use_the_users_identity_when_configured(dirty: git.Repo) -> None:
    ws = Workspace.create(root_of(dirty), "r1")
    sha = run_changes_stats(ws)
    for rev in (ws.baseline, sha):
        author = dirty.commit(rev).author
        assert (author.name, author.email) == ("Test User", "user@example.invalid")


# --- refusing projects that cannot host a run -----------------------------------------------


def test_a_plain_directory_is_not_a_repository(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(WorkspaceError, match=r"is not a git repository; run `git init` and commit"):
        Workspace.create(plain, "r1")
    assert not (plain / ".fixloop").exists()


def test_a_repository_without_commits_is_refused(tmp_path: Path) -> None:
    git.Repo.init(tmp_path / "empty")
    with pytest.raises(WorkspaceError, match=r"has no commits yet; commit your work first"):
        Workspace.create(tmp_path / "empty", "r1")


def test_a_bare_repository_is_refused(tmp_path: Path) -> None:
    git.Repo.init(tmp_path / "bare.git", bare=True)
    with pytest.raises(WorkspaceError, match=r"is a bare git repository"):
        Workspace.create(tmp_path / "bare.git", "r1")


def test_a_subdirectory_is_refused_naming_the_top_level(project: git.Repo) -> None:
    top = root_of(project).resolve()
    with pytest.raises(WorkspaceError, match=rf"not the top level .*; point fixloop at {top}$"):
        Workspace.create(root_of(project) / "pkg", "r1")


def test_a_submodule_is_refused_naming_the_superproject(tmp_path: Path) -> None:
    library = make_project(tmp_path / "library")
    app = make_project(tmp_path / "app")
    allow_file = ("-c", "protocol.file.allow=always")
    app.git.execute(["git", *allow_file, "submodule", "add", "-q", str(root_of(library)), "lib"])
    commit_all(app, "add the library")
    top = root_of(app).resolve()
    for inside in (root_of(app) / "lib", root_of(app) / "lib" / "pkg"):
        with pytest.raises(WorkspaceError, match=rf"inside the submodule .*superproject, {top} "):
            Workspace.create(inside, "r1")


def test_an_existing_run_branch_is_refused(project: git.Repo) -> None:
    project.git.branch("fixloop/r1")
    with pytest.raises(WorkspaceError, match=r"branch fixloop/r1 already exists; pick another"):
        Workspace.create(root_of(project), "r1")
    assert not (root_of(project) / ".fixloop").exists()


def test_a_run_id_that_cannot_name_a_branch_is_refused(project: git.Repo) -> None:
    with pytest.raises(WorkspaceError, match=r"cannot name a run"):
        Workspace.create(root_of(project), "../escape")


def test_workspace_errors_are_fixloop_errors() -> None:
    assert issubclass(WorkspaceError, FixloopError)


# --- during a run ---------------------------------------------------------------------------


def test_each_commit_call_makes_one_commit_with_the_exact_message(project: git.Repo) -> None:
    ws = Workspace.create(root_of(project), "r1")
    write(ws.root, {"pkg/stats.py": FIXED_STATS})
    first = ws.commit("fixloop[iter 1/4]: guard mean")
    write(ws.root, {"pkg/new.py": "NEW = 1\n"})
    (ws.root / "pkg/gone.py").unlink()
    second = ws.commit("fixloop[iter 2/4]: add new, drop gone")
    history = list(project.iter_commits(f"{ws.baseline}..fixloop/r1"))
    assert [c.hexsha for c in history] == [second, first]
    assert [c.message for c in history] == [
        "fixloop[iter 2/4]: add new, drop gone\n",
        "fixloop[iter 1/4]: guard mean\n",
    ]
    assert ws.changed_files(str(second)) == ["pkg/gone.py", "pkg/new.py"]


def test_commit_returns_none_when_nothing_changed(project: git.Repo) -> None:
    ws = Workspace.create(root_of(project), "r1")
    assert ws.commit("fixloop[iter 1/4]: nothing") is None
    assert project.commit("fixloop/r1").hexsha == ws.baseline


def test_commit_leaves_bytecode_out(project: git.Repo) -> None:
    ws = Workspace.create(root_of(project), "r1")
    write(ws.root, {"pkg/__pycache__/stats.cpython-311.pyc": "bytecode"})
    assert ws.commit("fixloop[iter 1/4]: only caches") is None


def test_diff_shows_a_commit_against_its_parent_without_colour(project: git.Repo) -> None:
    with project.config_writer() as config:
        config.set_value("color", "ui", "always")
        config.set_value("diff", "noprefix", "true")
    ws = Workspace.create(root_of(project), "r1")
    sha = run_changes_stats(ws)
    diff = ws.diff(sha)
    assert "\x1b[" not in diff
    assert "--- a/pkg/stats.py\n+++ b/pkg/stats.py\n" in diff
    assert "+    if not xs:\n+        return 0.0\n" in diff
    assert ws.diff(sha, ws.baseline) == diff
    assert ws.changed_files(sha, ws.baseline) == ["pkg/stats.py"]


# --- keep and discard -----------------------------------------------------------------------


def test_checkout_is_identical_after_create_commits_and_keep(dirty: git.Repo) -> None:
    before = snapshot(dirty)
    ws = Workspace.create(root_of(dirty), "r1")
    run_changes_stats(ws)
    write(ws.root, {"pkg/other.py": "OTHER = 'run'\n"})
    ws.commit("fixloop[iter 2/4]: other")
    ws.keep()
    assert snapshot(dirty) == before
    assert not ws.root.exists()
    assert branch_exists(dirty, "fixloop/r1")
    assert only_the_main_worktree(dirty)


def test_checkout_is_identical_after_discard_and_the_run_is_gone(dirty: git.Repo) -> None:
    before = snapshot(dirty)
    ws = Workspace.create(root_of(dirty), "r1")
    run_changes_stats(ws)
    ws.discard()
    assert snapshot(dirty) == before
    assert not ws.root.exists()
    assert not branch_exists(dirty, "fixloop/r1")
    assert "r1" not in dirty.git.worktree("list")


def test_keep_and_discard_are_idempotent(project: git.Repo) -> None:
    ws = Workspace.create(root_of(project), "r1")
    ws.keep()
    ws.keep()
    assert branch_exists(project, "fixloop/r1")
    ws.discard()
    ws.discard()
    assert not branch_exists(project, "fixloop/r1")


def test_keep_copes_with_a_worktree_deleted_by_hand(project: git.Repo) -> None:
    ws = Workspace.create(root_of(project), "r1")
    shutil.rmtree(ws.root)
    ws.keep()
    assert "r1" not in project.git.worktree("list")
    assert branch_exists(project, "fixloop/r1")


# --- accept ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Accepted:
    repo: git.Repo
    ws: Workspace
    before: Checkout
    index_before: dict[str, tuple[object, ...]]
    run_diff: str
    sha: str


RUN_FILES = {"pkg/stats.py", "pkg/median.py"}


@pytest.fixture
def accepted(dirty: git.Repo) -> Accepted:
    """A dirty checkout whose run fixed stats.py and added median.py, then was accepted."""
    ws = Workspace.create(root_of(dirty), "r1")
    before = snapshot(dirty)
    index_before = index_entries(dirty)
    run_changes_stats(ws)
    write(ws.root, {"pkg/median.py": "def median(xs):\n    return sorted(xs)[len(xs) // 2]\n"})
    tip = ws.commit(iteration_message(2, 4, "add median"))
    assert tip is not None
    run_diff = ws.diff(tip, ws.baseline)
    sha = accept_run(ws, "Guard mean and add median")
    return Accepted(dirty, ws, before, index_before, run_diff, sha)


def test_accept_adds_exactly_one_commit_holding_the_runs_changes(accepted: Accepted) -> None:
    repo, ws = accepted.repo, accepted.ws
    assert repo.git.rev_list(f"{ws.start_head}..main").split() == [accepted.sha]
    commit = repo.commit(accepted.sha)
    assert commit.message == "Guard mean and add median\n"
    assert [p.hexsha for p in commit.parents] == [ws.start_head]
    assert ws.diff(accepted.sha) == accepted.run_diff
    assert set(ws.changed_files(accepted.sha)) == RUN_FILES


def test_accept_leaves_the_users_uncommitted_work_uncommitted(accepted: Accepted) -> None:
    after = snapshot(accepted.repo)
    for path in ("pkg/other.py", "pkg/staged.py", "notes.txt", "debug.log"):
        assert after.files[path] == accepted.before.files[path]
    assert "pkg/gone.py" not in after.files
    assert status_lines(accepted.repo) == {
        " M pkg/other.py",
        "M  pkg/staged.py",
        " D pkg/gone.py",
        "?? notes.txt",
    }


def test_accept_keeps_index_entries_of_files_the_run_did_not_touch(accepted: Accepted) -> None:
    after = index_entries(accepted.repo)
    untouched = set(accepted.index_before) - RUN_FILES
    assert {p: after[p] for p in untouched} == {p: accepted.index_before[p] for p in untouched}


def test_accept_writes_the_runs_files_into_the_checkout(accepted: Accepted) -> None:
    root = root_of(accepted.repo)
    assert (root / "pkg/stats.py").read_text() == FIXED_STATS
    assert (root / "pkg/median.py").read_text().startswith("def median(xs):")


def test_accept_removes_the_worktree_and_the_run_branch(accepted: Accepted) -> None:
    assert not accepted.ws.root.exists()
    assert not branch_exists(accepted.repo, "fixloop/r1")
    assert only_the_main_worktree(accepted.repo)
    assert accepted.repo.active_branch.name == "main"


def test_accept_keeps_an_unstaged_edit_beside_the_runs_change(project: git.Repo) -> None:
    root = root_of(project)
    write(root, {"pkg/stats.py": "# work in progress\n" + STATS})
    ws = Workspace.create(root, "r1")
    write(ws.root, {"pkg/stats.py": "# work in progress\n" + FIXED_STATS})
    ws.commit("fixloop[iter 1/4]: guard mean")
    sha = accept_run(ws, "Guard mean")
    assert tree_files(project, sha)["pkg/stats.py"][1] == FIXED_STATS.encode()
    assert (root / "pkg/stats.py").read_text() == "# work in progress\n" + FIXED_STATS
    assert project.git.diff("--cached", "--name-only") == ""
    assert added_lines(project.git.diff()) == ["# work in progress"]


def test_accept_keeps_a_staged_edit_staged_beside_the_runs_change(project: git.Repo) -> None:
    root = root_of(project)
    write(root, {"pkg/stats.py": "# work in progress\n" + STATS})
    project.git.add("pkg/stats.py")
    ws = Workspace.create(root, "r1")
    write(ws.root, {"pkg/stats.py": "# work in progress\n" + FIXED_STATS})
    ws.commit("fixloop[iter 1/4]: guard mean")
    sha = accept_run(ws, "Guard mean")
    assert tree_files(project, sha)["pkg/stats.py"][1] == FIXED_STATS.encode()
    assert (root / "pkg/stats.py").read_text() == "# work in progress\n" + FIXED_STATS
    assert status_lines(project) == {"M  pkg/stats.py"}
    assert added_lines(project.git.diff("--cached")) == ["# work in progress"]


def test_accept_carries_modes_and_symlinks(project: git.Repo) -> None:
    ws = Workspace.create(root_of(project), "r1")
    (ws.root / "run.sh").chmod(0o755)
    (ws.root / "latest").symlink_to("pkg/stats.py")
    ws.commit("fixloop[iter 1/4]: modes")
    sha = accept_run(ws, "Make run.sh executable, link latest")
    files = tree_files(project, sha)
    assert files["run.sh"][0] == "100755"
    assert files["latest"] == ("120000", b"pkg/stats.py")
    assert os.access(root_of(project) / "run.sh", os.X_OK)
    assert os.readlink(root_of(project) / "latest") == "pkg/stats.py"
    assert status_lines(project) == set()


def test_accept_refuses_when_the_run_builds_on_uncommitted_lines(project: git.Repo) -> None:
    root = root_of(project)
    write(root, {"pkg/stats.py": STATS.replace("/ len(xs)", "/ max(len(xs), 1)")})
    ws = Workspace.create(root, "r1")
    write(ws.root, {"pkg/stats.py": STATS.replace("/ len(xs)", "/ max(len(xs), 1)  # ok")})
    ws.commit("fixloop[iter 1/4]: comment")
    before = snapshot(project)
    with pytest.raises(WorkspaceError, match=r"changes to pkg/stats.py build on your uncommitted"):
        accept_run(ws, "Comment")
    assert snapshot(project) == before
    assert ws.root.is_dir()
    assert branch_exists(project, "fixloop/r1")


def test_accept_refuses_when_the_user_edited_a_file_the_run_changed(project: git.Repo) -> None:
    ws = Workspace.create(root_of(project), "r1")
    run_changes_stats(ws)
    write(root_of(project), {"pkg/stats.py": STATS + "\n# mine\n"})
    before = snapshot(project)
    with pytest.raises(WorkspaceError, match=r"you changed pkg/stats.py since the run started"):
        accept_run(ws, "Guard mean")
    assert snapshot(project) == before
    assert branch_exists(project, "fixloop/r1")


def test_accept_refuses_a_conflicting_move_of_the_branch(project: git.Repo) -> None:
    ws = Workspace.create(root_of(project), "r1")
    run_changes_stats(ws)
    write(root_of(project), {"pkg/stats.py": STATS.replace("return sum", "return 1.0 * sum")})
    commit_all(project, "my own fix")
    before = snapshot(project)
    with pytest.raises(
        WorkspaceError,
        match=r"your branch main moved and conflicts with the run in pkg/stats.py; "
        r"the result stays on branch fixloop/r1",
    ):
        accept_run(ws, "Guard mean")
    assert snapshot(project) == before
    assert ws.root.is_dir()


def test_accept_merges_onto_a_branch_that_moved_elsewhere(project: git.Repo) -> None:
    ws = Workspace.create(root_of(project), "r1")
    run_changes_stats(ws)
    write(root_of(project), {"pkg/other.py": "OTHER = 'moved'\n"})
    moved = commit_all(project, "unrelated work")
    sha = accept_run(ws, "Guard mean")
    assert [p.hexsha for p in project.commit(sha).parents] == [moved]
    files = tree_files(project, sha)
    assert files["pkg/other.py"][1] == b"OTHER = 'moved'\n"
    assert files["pkg/stats.py"][1] == FIXED_STATS.encode()
    assert (root_of(project) / "pkg/stats.py").read_text() == FIXED_STATS
    assert status_lines(project) == set()


def test_accept_refuses_a_detached_start_and_suggests_keep(project: git.Repo) -> None:
    project.git.checkout("--detach", "--quiet")
    ws = Workspace.create(root_of(project), "r1")
    run_changes_stats(ws)
    before = snapshot(project)
    with pytest.raises(WorkspaceError, match=r"detached HEAD.*use keep"):
        accept_run(ws, "Guard mean")
    assert snapshot(project) == before


def test_accept_refuses_when_the_user_switched_branches(project: git.Repo) -> None:
    ws = Workspace.create(root_of(project), "r1")
    run_changes_stats(ws)
    project.git.switch("--quiet", "-c", "elsewhere")
    with pytest.raises(WorkspaceError, match=r"you are now on elsewhere.*`git switch main`"):
        accept_run(ws, "Guard mean")
    assert project.commit("main").hexsha == ws.start_head


def test_accept_refuses_a_run_that_changed_nothing(dirty: git.Repo) -> None:
    ws = Workspace.create(root_of(dirty), "r1")
    with pytest.raises(WorkspaceError, match=r"the run changed nothing"):
        accept_run(ws, "Nothing")


# --- commit messages ------------------------------------------------------------------------


def test_iteration_message_takes_the_first_line_of_the_explanation() -> None:
    message = iteration_message(2, 4, "\n  Guard   mean against [].\nThen explain more.\n")
    assert message == "fixloop[iter 2/4]: Guard mean against []."


def test_iteration_message_clips_a_long_explanation() -> None:
    message = iteration_message(1, 4, "word " * 40)
    subject = message.removeprefix("fixloop[iter 1/4]: ")
    assert len(subject) <= 72
    assert subject.endswith("...")
    assert "\n" not in message


def test_a_task_of_several_lines_is_the_subject_and_the_body_of_the_accept_message() -> None:
    task = "Make the failing tests pass.\nKeep mean_word_length exact (a float)."
    message = accept_message(task, "r1", "fixloop/r1")
    subject, blank, *body = message.splitlines()
    assert (subject, blank) == ("Make the failing tests pass.", "")
    assert "Keep mean_word_length exact (a float)." in body
    assert body[-1] == "Squashed from fixloop/r1 (fixloop run r1)."
    one_line = accept_message("Fix it.", "r1", "fixloop/r1")
    assert one_line == "Fix it.\n\nSquashed from fixloop/r1 (fixloop run r1)."
