"""Pinned tests: which test files exist at the baseline, and what a run did to them.

A green run is only honest if the tests that judged it are the ones the person started with:
this module fingerprints them (pytest's, Go's and JS/TS test files, the data they read, and the
test infrastructure that decides how they run and what they report) and finds edits, deletions,
added skips and focus, and changes to pytest's test selection, for the verdict to call the pass
suspicious (ARCHITECTURE.md, "Honest green").
"""

from __future__ import annotations

import difflib
import fnmatch
import hashlib
import json
import os
import re
import stat
import subprocess
import tomllib
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
    """What a pinned file is, as named to the person: "test infrastructure", "test data" or
    "test file" (a conftest.py is infrastructure: it can change what every test reports)."""
    if is_test_infrastructure(path) and not (is_test_data(path) or _is_test_module(path)):
        return "test infrastructure"
    return "test data" if is_test_data(path) else "test file"


def _is_test_module(path: str) -> bool:
    return is_test_file(path) and PurePosixPath(path).name != "conftest.py"


def pinned_kind(path: str) -> str:
    """A pinned file named as held back: "pinned test file", "pinned test data" or "pinned
    test infrastructure"."""
    return f"pinned {test_kind(path)}"


def pinned_why(path: str) -> str:
    """A pinned file named with why it is pinned, as the gate, the headless lines and the
    model are told: "pinned test file tests/test_x.py", "pinned test infrastructure
    conftest.py (its hooks and fixtures decide how tests run and what they report)"."""
    role = pinned_role(path)
    return f"{pinned_kind(path)} {path}" + (f" ({role})" if role else "")


def pinned_role(path: str) -> str:
    """Why a pinned file that is test infrastructure is pinned; "" for a test file or data."""
    return infrastructure_role(path) if test_kind(path) == "test infrastructure" else ""


def is_pinned(path: str) -> bool:
    """A test file or test data: what a run may not change for its pass to count."""
    return is_test_file(path) or is_test_data(path)


# Test infrastructure: files that decide how the tests run and what they report, so that an
# edit to them can turn red into green without touching the code (a conftest.py hook that
# rewrites failed reports as passed, `addopts = -p plugin`, a test script that exits 0, a
# `replace` that swaps the module under test). They are pinned as test files are: the
# baseline's content is fingerprinted and a new one counts too, since pytest, Jest, Vitest and
# Go read them from wherever they appear. A file that configures other tools as well is pinned
# by its test part only (`infrastructure_part`): an edit to the rest of it is the project's.
_WHOLE_INFRASTRUCTURE = frozenset({"conftest.py", "pytest.ini", ".pytest.ini", "go.work"})
_JS_INFRASTRUCTURE = re.compile(r"^(?:jest|vitest|vite)\.(?:config|workspace)\.[cm]?[jt]s(?:on)?$")
_PARTIAL_INFRASTRUCTURE = frozenset(
    {"pyproject.toml", "setup.cfg", "tox.ini", "package.json", "go.mod"}
)
# Why each is pinned, as the person and the model are told.
_INFRASTRUCTURE_ROLES = {
    "conftest.py": "its hooks and fixtures decide how tests run and what they report",
    "pytest.ini": "it configures pytest",
    ".pytest.ini": "it configures pytest",
    "go.work": "it decides which modules `go test` builds",
    "pyproject.toml": "its [tool.pytest] table configures pytest",
    "setup.cfg": "its [tool:pytest] section configures pytest",
    "tox.ini": "its [pytest] section configures pytest",
    "package.json": "its test scripts and jest/vitest keys decide how tests run",
    "go.mod": "its replace lines decide which code `go test` builds",
}
_JS_ROLE = "it configures how Jest or Vitest runs the tests"
# The ini sections pytest reads: `[pytest]` (pytest.ini, tox.ini) and `[tool:pytest]` (setup.cfg).
_INI_SECTION = re.compile(r"^\[\s*(?:tool:)?pytest\s*\]")
_INI_HEADER = re.compile(r"^\[")
# npm runs `pretest` and `posttest` around `test`: a failure in any of them fails `npm test`.
_NPM_TEST_SCRIPTS = ("pretest", "test", "posttest")
_GO_REPLACE = re.compile(r"^replace\b")
_GO_BLOCK_END = re.compile(r"^\)")


def is_test_infrastructure(path: str) -> bool:
    """Whether a project-relative posix path, by its name, is a file that can decide how
    tests run and what they report: any `conftest.py`, `pytest.ini`, `setup.cfg`, `tox.ini`,
    `pyproject.toml`, Jest's, Vitest's or Vite's config, `package.json`, `go.mod`, `go.work`.
    Outside the directories no runner looks into (`node_modules/`, `.venv/`, `build/`, ...).
    For some of them only a part configures tests (`infrastructure_part`)."""
    if _in_skipped_dir(path):
        return False
    name = PurePosixPath(path).name
    return (
        name in _WHOLE_INFRASTRUCTURE
        or name in _PARTIAL_INFRASTRUCTURE
        or bool(_JS_INFRASTRUCTURE.match(name))
    )


def infrastructure_role(path: str) -> str:
    """Why a test infrastructure file is pinned, in a few words ("" for any other file)."""
    if not is_test_infrastructure(path):
        return ""
    name = PurePosixPath(path).name
    return _INFRASTRUCTURE_ROLES.get(name) or _JS_ROLE


def infrastructure_part(path: str, data: bytes) -> str | None:
    """What of a test infrastructure file's content configures tests, as comparable text: the
    whole file for a conftest.py, a pytest.ini or a JS config; pyproject.toml's `[tool.pytest]`
    table (`ini_options` and all); setup.cfg's and tox.ini's pytest sections; package.json's
    `pretest`/`test`/`posttest` scripts and its `jest` and `vitest` keys; go.mod's `replace`
    directives. None when the file has no such part (a pyproject.toml without pytest's table
    is not infrastructure). A file that does not parse is compared whole: which part a runner
    would read of it cannot be told. A test file or test data (`is_pinned`) is pinned whole and
    never comes here."""
    name = PurePosixPath(path).name
    if name not in _PARTIAL_INFRASTRUCTURE or len(data) > DATA_HASH_LIMIT:
        return data.decode("utf-8", "surrogateescape")
    text = data.decode("utf-8", "replace").replace("\r\n", "\n")
    if name == "pyproject.toml":
        return _pyproject_part(text)
    if name == "package.json":
        return _package_json_part(text)
    if name == "go.mod":
        return _go_replace_part(text)
    return _ini_part(text)


def _pyproject_part(text: str) -> str | None:
    try:
        tool = tomllib.loads(text).get("tool")
    except tomllib.TOMLDecodeError:
        return text
    pytest_table = tool.get("pytest") if isinstance(tool, dict) else None
    if pytest_table is None:
        return None
    return json.dumps(pytest_table, sort_keys=True, default=str)


def _package_json_part(text: str) -> str | None:
    try:
        package = json.loads(text)
    except ValueError:
        return text
    if not isinstance(package, dict):
        return text
    scripts = package.get("scripts")
    part = {
        f"scripts.{key}": scripts[key]
        for key in _NPM_TEST_SCRIPTS
        if isinstance(scripts, dict) and key in scripts
    }
    part.update({key: package[key] for key in ("jest", "vitest") if key in package})
    return json.dumps(part, sort_keys=True) if part else None


def _go_replace_part(text: str) -> str | None:
    lines: list[str] = []
    in_block = False
    for raw in text.splitlines():
        line = raw.split("//", 1)[0].strip()
        if in_block:
            if _GO_BLOCK_END.match(line):
                in_block = False
            elif line:
                lines.append(line)
        elif _GO_REPLACE.match(line):
            in_block = line.rstrip().endswith("(")
            if not in_block:
                lines.append(line)
    return "\n".join(lines) if lines else None


def _ini_part(text: str) -> str | None:
    lines: list[str] = []
    inside = False
    for line in text.splitlines():
        if _INI_HEADER.match(line):
            inside = bool(_INI_SECTION.match(line))
        if inside:
            lines.append(line.rstrip())
    return "\n".join(lines) if lines else None


def infrastructure_digest(path: str, data: bytes) -> str | None:
    """The fingerprint a test infrastructure file is pinned by: its test part's (the whole
    file's for a conftest.py); None when it has no test part, and then it is not pinned."""
    part = infrastructure_part(path, data)
    if part is None:
        return None
    return _digest(part.encode("utf-8", "surrogateescape"))


def is_watched(path: str) -> bool:
    """Whether `TestPins` fingerprints the path: a test file, test data or test
    infrastructure."""
    return is_pinned(path) or is_test_infrastructure(path)


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
    """Content hashes of the test files, test data and test infrastructure at one revision (or
    in one working tree)."""

    model_config = ConfigDict(frozen=True)
    __test__ = False  # not a pytest test class

    rev: str
    # project-relative posix path -> sha256 of the content; of a test infrastructure file that
    # configures other tools too, of its test part only (`infrastructure_part`), and such a
    # file without a test part is not listed
    files: dict[str, str]

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
                if is_watched(path) and not _in_skipped_dir(path):
                    blobs[path] = item
            found = {
                path: _content_digest(path, blob.size, blob.data_stream.read)
                for path, blob in blobs.items()
            }
            found.update(_checked_out(repo, commit.hexsha, _converted(repo, list(blobs))))
            files = {path: digest for path, digest in found.items() if digest is not None}
            return cls(rev=commit.hexsha, files=dict(sorted(files.items())))

    @classmethod
    def from_tree(cls, root: Path, hashed: Set[str] | None = None) -> TestPins:
        """The pinned files of a working tree; with `hashed`, only those paths are read (the
        others are listed with an empty digest: all a comparison needs of a file that was not
        pinned is that it is there), but for test infrastructure, which is always read: whether
        it is listed depends on its content. Only regular files and symlinks: a FIFO or a
        socket under `tests/` is not read."""
        files: dict[str, str] = {}
        for path in _walk(root):
            if not is_watched(path):
                continue
            file = root / path
            digest: str | None
            if file.is_symlink():
                target = os.readlink(file).encode()
                digest = _content_digest(path, len(target), partial(bytes, target))
            else:
                try:
                    info = file.stat()
                except OSError:
                    continue
                if not stat.S_ISREG(info.st_mode):
                    continue
                if hashed is not None and path not in hashed and is_pinned(path):
                    digest = ""
                else:
                    digest = _content_digest(path, info.st_size, file.read_bytes)
            if digest is not None:
                files[path] = digest
        return cls(rev="working-tree", files=files)


def _content_digest(path: str, size: int, read: Callable[[], bytes]) -> str | None:
    """A pinned file's fingerprint; None for test infrastructure without a test part."""
    if not is_pinned(path):
        return infrastructure_digest(path, read())
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


def _checked_out(repo: Path, rev: str, paths: list[str]) -> dict[str, str | None]:
    """`_content_digest` of each path of `rev` as a checkout writes it (`git cat-file
    --filters`); a path git could not give (a filter that failed) is left out."""
    digests: dict[str, str | None] = {}
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
    change: Literal["modified", "deleted", "added"]

    @property
    def doubtful(self) -> bool:
        """Whether the change makes a pass suspicious: any but an added test file. Added test
        infrastructure is doubtful too: a new conftest.py can rewrite what every test
        reports."""
        return self.change != "added" or bool(pinned_role(self.path))


def changed_tests(pins: TestPins, root: Path) -> list[TestChange]:
    """Test files in the working tree `root` that are not as they were pinned, by path. A
    test infrastructure file still there whose test part is gone is modified, not deleted."""
    now = TestPins.from_tree(root, hashed=pins.files.keys()).files
    changes: list[TestChange] = []
    for path in sorted(pins.files.keys() | now.keys()):
        if path not in now:
            kept = is_test_infrastructure(path) and (root / path).is_file()
            changes.append(TestChange(path=path, change="modified" if kept else "deleted"))
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
