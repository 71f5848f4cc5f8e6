"""Pinned tests: which test files exist at the baseline, and what a run did to them.

A green run is only honest if the tests that judged it are the ones the person started with:
this module fingerprints them (pytest's, Go's and JS/TS test files) and finds edits, deletions,
added skips and focus, and changes to pytest's test selection, for the verdict to call the pass
suspicious (ARCHITECTURE.md, "Honest green").
"""

from __future__ import annotations

import difflib
import fnmatch
import hashlib
import os
import re
import stat
import subprocess
from collections.abc import Callable, Iterator, Set
from functools import partial
from pathlib import Path, PurePosixPath
from typing import Literal

import git
from pydantic import BaseModel, ConfigDict

from engine.project.git_plumbing import git_subprocess_env

_TEST_DIRS = frozenset({"tests", "test"})
# pytest's default `norecursedirs`, plus what is never the project's own tests.
_SKIPPED_DIRS = ("*.egg", ".*", "_darcs", "build", "CVS", "dist", "node_modules", "venv", "{arch}")
_SKIPPED_NAMES = frozenset({"__pycache__", "site-packages"})


_JS_SUFFIXES = frozenset({".js", ".jsx", ".ts", ".tsx", ".mjs", ".cjs", ".mts", ".cts"})
_JS_TEST_MARKS = frozenset({"test", "spec"})


def is_test_file(path: str) -> bool:
    """Whether a project-relative posix path is a file its runner treats as tests (or as what
    tests compare against): pytest's, Go's `*_test.go`, Jest's and Vitest's `*.test.*`,
    `*.spec.*` and `__tests__/`, and Jest's stored snapshots."""
    pure = PurePosixPath(path)
    name = pure.name
    if name.endswith("_test.go"):
        return not {"testdata", "vendor"} & set(pure.parts[:-1])  # both are ignored by `go test`
    if pure.suffix in _JS_SUFFIXES:
        return "__tests__" in pure.parts[:-1] or name.split(".")[-2] in _JS_TEST_MARKS
    if pure.suffix == ".snap" and pure.parent.name == "__snapshots__":
        return True
    if not name.endswith(".py"):
        return False
    if name == "conftest.py" or name.startswith("test_") or name.endswith("_test.py"):
        return True
    return any(part in _TEST_DIRS for part in pure.parts[:-1])


# What tests read. A directory named so holds test data: `tests/`, `e2e-tests/`, `testdata/`,
# `json_testcases/`, `test_data/` (its other files: code there is a test file already, or
# below); in `testdata/`, `__fixtures__/` and `__snapshots__/` even code is what tests compare
# against (Go's `testdata/*.go`, Babel-style expected output). A `fixtures/` directory holds
# data, but code there may be a library's own. A file named as a test's is data too.
_TEST_DIR = re.compile(r"(^|[_.-])(tests?|testdata|testcases|test_data|test_cases)$", re.I)
_DATA_ONLY_DIR = re.compile(r"^(testdata|__fixtures__|__snapshots__|__tests__)$", re.I)
_FIXTURES_DIR = re.compile(r"(^|[_.-])fixtures$", re.I)
_TEST_NAME = re.compile(r"^(tests?|testdata|testcases)([_.-]|$)|[_.-](tests?|spec)$", re.I)
# A test data file larger than this is pinned by its size alone: reading it on every check
# would cost more than a same-size rewrite of it is worth guarding against.
DATA_HASH_LIMIT = 4 * 1024 * 1024
_CODE_SUFFIXES = frozenset({".py", ".pyi", ".pyx", ".go", *_JS_SUFFIXES})


def is_test_data(path: str) -> bool:
    """Whether a project-relative posix path is something tests read rather than run (and is
    not a test file): a file under a test directory (`tests/data/cases.json`,
    `json_testcases/x.json`), anything under `testdata/`, `__fixtures__/` or `__snapshots__/`
    (code included), a file but code under `fixtures/`, or one named as a test's
    (`test_parse_cases.txt`, `parser.test.json`). Pinned with the test files: a pass earned
    by rewriting expected data is no pass. Code means Python, Go and JS/TS here."""
    if is_test_file(path):
        return False
    pure = PurePosixPath(path)
    folders = pure.parts[:-1]
    if any(_DATA_ONLY_DIR.match(part) for part in folders):
        return True
    if pure.suffix.lower() in _CODE_SUFFIXES:
        return False  # code outside the tests' own files is the project's, to repair
    if any(_TEST_DIR.search(part) or _FIXTURES_DIR.search(part) for part in folders):
        return True
    stem = pure.name[: -len(pure.suffix)] if pure.suffix else pure.name
    return bool(_TEST_NAME.search(stem))


def test_kind(path: str) -> str:
    """What a pinned file is, as named to the person: "test data" or "test file"."""
    return "test data" if is_test_data(path) else "test file"


def pinned_kind(path: str) -> str:
    """A pinned file named as held back: "pinned test file" or "pinned test data"."""
    return f"pinned {test_kind(path)}"


def is_pinned(path: str) -> bool:
    """A test file or test data: what a run may not change for its pass to count."""
    return is_test_file(path) or is_test_data(path)


def _is_skipped_dir(name: str) -> bool:
    return name in _SKIPPED_NAMES or any(fnmatch.fnmatch(name, pat) for pat in _SKIPPED_DIRS)


def _in_skipped_dir(path: str) -> bool:
    return any(_is_skipped_dir(part) for part in PurePosixPath(path).parts[:-1])


def _walk(root: Path) -> Iterator[str]:
    """Project-relative posix paths of the files in a working tree, skipping venvs and caches."""
    for directory, dirnames, filenames in os.walk(root):
        here = Path(directory)
        dirnames[:] = sorted(
            d for d in dirnames if not _is_skipped_dir(d) and not (here / d / "pyvenv.cfg").exists()
        )
        for filename in sorted(filenames):
            yield (here / filename).relative_to(root).as_posix()


def _read_tree_file(path: Path) -> bytes:
    """A file's bytes as git stores them: a symlink is its target, not what it points to."""
    if path.is_symlink():
        return os.readlink(path).encode()
    return path.read_bytes()


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class TestPins(BaseModel):
    """Content hashes of the test files at one revision (or in one working tree)."""

    model_config = ConfigDict(frozen=True)
    __test__ = False  # not a pytest test class

    rev: str
    files: dict[str, str]  # project-relative posix path -> sha256 of the content

    @classmethod
    def from_commit(cls, repo: Path, rev: str = "HEAD") -> TestPins:
        """The pinned files of `rev`, each hashed as a checkout of it writes it (git's smudge
        and end-of-line filters applied), so that `from_tree` of an unchanged worktree
        agrees: an LFS file or a `text eol=crlf` one is not a change."""
        # Closed here: a Repo left to the garbage collector stops its git helper processes,
        # and waits for them, in whichever thread collects it (the UI's, in the app).
        with git.Repo(repo) as handle:
            commit = handle.commit(rev)
            blobs: dict[str, git.Blob] = {}
            for item in commit.tree.traverse():
                if not isinstance(item, git.Blob):
                    continue  # trees and submodules
                path = str(item.path)
                if is_pinned(path) and not _in_skipped_dir(path):
                    blobs[path] = item
            files = {
                path: _content_digest(path, blob.size, blob.data_stream.read)
                for path, blob in blobs.items()
            }
            files.update(_checked_out(repo, commit.hexsha, _converted(repo, list(blobs))))
            return cls(rev=commit.hexsha, files=dict(sorted(files.items())))

    @classmethod
    def from_tree(cls, root: Path, hashed: Set[str] | None = None) -> TestPins:
        """The pinned files of a working tree; with `hashed`, only those paths are read (the
        others are listed with an empty digest: all a comparison needs of a file that was not
        pinned is that it is there). Only regular files and symlinks: a FIFO or a socket under
        `tests/` is not read."""
        files: dict[str, str] = {}
        for path in _walk(root):
            if not is_pinned(path):
                continue
            file = root / path
            if file.is_symlink():
                files[path] = _digest(os.readlink(file).encode())
                continue
            try:
                info = file.stat()
            except OSError:
                continue
            if not stat.S_ISREG(info.st_mode):
                continue
            if hashed is not None and path not in hashed:
                files[path] = ""
            else:
                files[path] = _content_digest(path, info.st_size, file.read_bytes)
        return cls(rev="working-tree", files=files)


def _content_digest(path: str, size: int, read: Callable[[], bytes]) -> str:
    if is_test_data(path) and size > DATA_HASH_LIMIT:
        return _by_size(size)
    return _digest(read())


def _by_size(size: int) -> str:
    return f"size:{size}"


# The attributes that make a checkout write other bytes than git stores.
_CONVERTING = ("eol", "text", "filter", "working-tree-encoding")


def _converted(repo: Path, paths: list[str]) -> list[str]:
    """The paths a checkout converts (LFS and other filters, `eol=crlf`, an encoding), by
    the working tree's attributes (`git check-attr`, one process); usually none."""
    if not paths:
        return []
    listed = "".join(f"{path}\0" for path in paths).encode()
    done = subprocess.run(
        ["git", "check-attr", "--stdin", "-z", *_CONVERTING],
        cwd=repo,
        input=listed,
        capture_output=True,
        env=git_subprocess_env(repo),
        check=False,
    )
    if done.returncode != 0:
        return []
    fields = done.stdout.decode("utf-8", "surrogateescape").split("\0")
    converted: dict[str, None] = {}
    for at in range(0, len(fields) - 2, 3):
        path, attribute, value = fields[at : at + 3]
        if value not in ("unspecified", "unset") and (attribute, value) != ("text", "auto"):
            converted[path] = None
    return list(converted)


def _checked_out(repo: Path, rev: str, paths: list[str]) -> dict[str, str]:
    """`_content_digest` of each path of `rev` as a checkout writes it (`git cat-file
    --filters`); a path git could not give (a filter that failed) is left out."""
    digests: dict[str, str] = {}
    for path in paths:
        done = subprocess.run(
            ["git", "cat-file", "--filters", f"{rev}:{path}"],
            cwd=repo,
            capture_output=True,
            env=git_subprocess_env(repo),
            check=False,
        )
        if done.returncode == 0:
            digests[path] = _content_digest(path, len(done.stdout), partial(bytes, done.stdout))
    return digests


class TestChange(BaseModel):
    """A test file that differs from its pinned version."""

    model_config = ConfigDict(frozen=True)
    __test__ = False

    path: str
    change: Literal["modified", "deleted", "added"]  # added is fine; the others are suspicious


def changed_tests(pins: TestPins, root: Path) -> list[TestChange]:
    """Test files in the working tree `root` that are not as they were pinned, by path."""
    now = TestPins.from_tree(root, hashed=pins.files.keys()).files
    changes: list[TestChange] = []
    for path in sorted(pins.files.keys() | now.keys()):
        if path not in now:
            changes.append(TestChange(path=path, change="deleted"))
        elif path not in pins.files:
            changes.append(TestChange(path=path, change="added"))
        elif now[path] != pins.files[path]:
            changes.append(TestChange(path=path, change="modified"))
    return changes


class AddedSkip(BaseModel):
    """An added line that skips tests or narrows which tests run."""

    model_config = ConfigDict(frozen=True)

    file: str
    line: int  # 1-based, in the working-tree file
    text: str
    why: str = ""  # what the line does, when its text does not say it plainly


_SKIP_PATTERNS = tuple(
    re.compile(p)
    for p in (
        r"pytest\.mark\.(?:skip|skipif|xfail)\b",
        r"\bpytest\.(?:skip|xfail|importorskip)\s*\(",
        r"\bunittest\.skip",
        r"@skip",  # @skip, @skipIf, @skipUnless imported from unittest
        r"\bSkipTest\b",
        r"\.skipTest\s*\(",
        r"^\s*pytestmark\s*=",
        r"^\s*__test__\s*=\s*False\b",
        r"\bcollect_ignore",
    )
)
# Go and JS/TS: a skip, and a focus that silently drops every test not focused. Each with what
# it does, for the reason the verdict gives.
_JS_BLOCKS = r"\b(?:it|test|describe|suite|context|bench)(?:\.\w+)*"
_NAMED_SKIP_PATTERNS = tuple(
    (re.compile(pattern), why)
    for pattern, why in (
        (r"\b\w+\.Skip(?:Now|f)?\s*\(", "`t.Skip` skips the Go test"),
        (_JS_BLOCKS + r"\.(?:skip|skipIf|runIf)\b", "`.skip` skips the tests"),
        (r"\bx(?:it|test|describe)\s*\(", "`xit`/`xtest`/`xdescribe` skips the tests"),
        (_JS_BLOCKS + r"\.only\b", "`.only` runs only the focused tests"),
        (r"\bf(?:it|describe)\s*\(", "`fit`/`fdescribe` runs only the focused tests"),
    )
)
_SELECTION_PATTERNS = tuple(
    re.compile(p)
    for p in (
        r"\baddopts\b",
        r"(?<![\w-])-k\b",
        r"(?<![\w-])-m\b",
        r"--deselect\b",
        r"--ignore",
        r"\btestpaths\b",
        r"\bpython_(?:files|functions|classes)\b",
        r"\bnorecursedirs\b",
        r"\bcollect_ignore",
        r"\bpytest_(?:collection_modifyitems|ignore_collect)\b",  # hooks that drop tests
    )
)
_CONFIG_FILES = frozenset(
    {"pyproject.toml", "pytest.ini", ".pytest.ini", "setup.cfg", "tox.ini", "conftest.py"}
)
# Jest's and Vitest's configuration, and package.json (its `jest` key and its `test` script).
_JS_CONFIG = re.compile(r"^(?:jest|vitest|vite)\.(?:config|workspace)\.[cm]?[jt]s(?:on)?$")
_JS_SELECTION_PATTERNS = tuple(
    (re.compile(p), "it changes which tests Jest or Vitest runs")
    for p in (
        r"\btestPathIgnorePatterns\b",
        r"\bmodulePathIgnorePatterns\b",
        r"\btestMatch\b",
        r"\btestRegex\b",
        r"\btestPathPattern\b|--testPathPattern",
        r"\btestNamePattern\b|--testNamePattern|(?<![\w-])-t\b",
        r"\broots\b\s*[:=]|\"roots\"",
        r"\b(?:include|exclude)\s*:",
        r"\bpassWithNoTests\b",
        r'"test"\s*:',  # package.json's test script
    )
)
_COMMENT_PREFIXES = ("#", ";", "//", "/*")
# A directive written as a comment: checked before comments are passed over.
_GO_BUILD_CONSTRAINT = re.compile(r"^//\s*(?:go:build|\+build)\b")


def added_skips(repo: Path, rev: str, root: Path) -> list[AddedSkip]:
    """Lines added to test files since `rev` that skip, xfail, focus or hide tests."""
    patterns = [(p, "") for p in _SKIP_PATTERNS] + list(_NAMED_SKIP_PATTERNS)
    return _added_matching(repo, rev, root, is_test_file, patterns)


def config_changes(repo: Path, rev: str, root: Path) -> list[AddedSkip]:
    """Lines added to pytest's, Jest's or Vitest's configuration since `rev` that change which
    tests are selected."""

    def is_config(path: str) -> bool:
        return PurePosixPath(path).name in _CONFIG_FILES

    def is_js_config(path: str) -> bool:
        name = PurePosixPath(path).name
        return name == "package.json" or bool(_JS_CONFIG.match(name))

    python = _added_matching(repo, rev, root, is_config, [(p, "") for p in _SELECTION_PATTERNS])
    return python + _added_matching(repo, rev, root, is_js_config, list(_JS_SELECTION_PATTERNS))


def _added_matching(
    repo: Path,
    rev: str,
    root: Path,
    wanted: Callable[[str], bool],
    patterns: list[tuple[re.Pattern[str], str]],
) -> list[AddedSkip]:
    with git.Repo(repo) as handle:
        tree = handle.commit(rev).tree
        return _added_in(tree, root, wanted, patterns)


def _added_in(
    tree: git.Tree,
    root: Path,
    wanted: Callable[[str], bool],
    patterns: list[tuple[re.Pattern[str], str]],
) -> list[AddedSkip]:
    found: list[AddedSkip] = []
    for path in _walk(root):
        if not wanted(path):
            continue
        new = _read_tree_file(root / path).decode("utf-8", "replace").splitlines()
        for number, text in _added_lines(_blob_text(tree, path), new):
            stripped = text.strip()
            if path.endswith("_test.go") and _GO_BUILD_CONSTRAINT.match(stripped):
                constraint = "a build constraint can leave the file's tests out of `go test`"
                found.append(AddedSkip(file=path, line=number, text=stripped, why=constraint))
                continue
            if stripped.startswith(_COMMENT_PREFIXES):
                continue
            why = next((why for p, why in patterns if p.search(text)), None)
            if why is not None:
                found.append(AddedSkip(file=path, line=number, text=stripped, why=why))
    return found


def _blob_text(tree: git.Tree, path: str) -> list[str]:
    """The file's lines at the pinned revision; none if it did not exist there."""
    try:
        blob = tree / path
    except KeyError:
        return []
    if not isinstance(blob, git.Blob):
        return []
    data: bytes = blob.data_stream.read()
    return data.decode("utf-8", "replace").splitlines()


def _added_lines(old: list[str], new: list[str]) -> list[tuple[int, str]]:
    """(1-based line in `new`, text) of every line `new` has that `old` did not."""
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    added: list[tuple[int, str]] = []
    for tag, _, _, j1, j2 in matcher.get_opcodes():
        if tag in {"insert", "replace"}:
            added.extend((j + 1, new[j]) for j in range(j1, j2))
    return added
