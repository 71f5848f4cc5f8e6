"""A project at one seeded bug, as a task for the loop: a copy of the project (its dev setup
too: the venv is copied and its pointers moved to the copy, so an editable install imports
the copy's code), the bug written in, committed as the one commit of a fresh git repository;
and after the run, whether the fix touched the function the bug is in.

The source is only ever read: its `.git` is not copied (a fresh repository has no config the
source's owner wrote), links are copied as links and never followed (the sandbox refuses
those that leave the workspace), and nothing is run in it.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from bench.errors import TaskSetupError
from bench.suite.project_mutants import ProjectMutant, read_source
from engine.project.git_plumbing import git_bytes, git_text

VENVS = (".venv", "venv")
# Never copied: the source's own repository and runs, and caches rebuilt on use.
NOT_COPIED = shutil.ignore_patterns(".git", ".fixloop", "__pycache__", ".pytest_cache")
_AUTHOR = ("-c", "user.name=fixloop bench", "-c", "user.email=bench@fixloop.invalid")
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? ", re.MULTILINE)


def copy_project(source: Path, dest: Path) -> Path:
    """`source`'s tree at `dest`, with each venv's recorded paths (`pyvenv.cfg`, its scripts,
    an editable install's `.pth` and finder, `direct_url.json`) moved from source to dest."""
    shutil.copytree(source, dest, symlinks=True, ignore=NOT_COPIED)
    for name in VENVS:
        venv = dest / name
        if venv.is_dir() and not venv.is_symlink():
            _move_venv_paths(venv, str(source), str(dest))
    return dest


def _move_venv_paths(venv: Path, old: str, new: str) -> None:
    pointers = [venv / "pyvenv.cfg", *(venv / "bin").glob("*")]
    for site in venv.glob("lib/python*/site-packages"):
        pointers += [*site.glob("*.pth"), *site.glob("__editable__*")]
        pointers += site.glob("*.dist-info/direct_url.json")
    for path in pointers:
        if path.is_symlink() or not path.is_file():
            continue
        data = path.read_bytes()
        if old.encode() not in data:
            continue
        mode = path.stat().st_mode
        # A pointer is replaced, never rewritten in place: a copy may share its inode.
        path.unlink()
        path.write_bytes(
            re.sub(re.escape(old.encode()) + rb"(?=[/\s\"'\x00]|$)", new.encode(), data)
        )
        path.chmod(mode & 0o7777)


def make_task(source: Path, dest: Path, mutant: ProjectMutant) -> Path:
    """The task's repository at `dest`: the project with the bug, one commit, its venvs left
    out of git (a venv git tracks is refused as one the repository brought)."""
    copy_project(source, dest)
    text = read_source(dest, mutant.path)
    mutated = mutant.applied(text) if text is not None else None
    if mutated is None:
        raise TaskSetupError(f"{mutant.id}: {mutant.path} is not the file the bug was made from")
    (dest / mutant.path).write_text(mutated, encoding="utf-8")
    git_bytes(dest, "init", "--quiet", "-b", "main")
    exclude = dest / ".git" / "info" / "exclude"
    exclude.parent.mkdir(parents=True, exist_ok=True)
    exclude.write_text("".join(f"/{name}/\n" for name in VENVS))  # fixloop skips its own
    git_bytes(dest, "add", "-A")
    git_bytes(dest, *_AUTHOR, "commit", "--quiet", "--no-verify", "-m", "the project")
    return dest


def base_commit(task: Path) -> str:
    return git_text(task, "rev-parse", "HEAD")


def touched_function(task: Path, base: str, final: str | None, mutant: ProjectMutant) -> bool:
    """Whether the diff from `base` to `final` changes a line of the mutated function (as the
    bug's file had it at `base`)."""
    if not final:
        return False
    diff = git_text(
        task, "diff", "--no-ext-diff", "--no-textconv", "-U0", base, final, "--", mutant.path
    )
    first, last = mutant.function_lines
    for match in _HUNK.finditer(diff):
        start = int(match.group(1))
        count = int(match.group(2)) if match.group(2) is not None else 1
        end = start + max(count, 1) - 1  # a pure insertion sits after line `start`
        if start <= last and end >= first:
            return True
    return False


def task_python(task: Path) -> Path | None:
    for name in VENVS:
        python = task / name / "bin" / "python"
        if os.path.lexists(python):
            return python
    return None
