"""Test infrastructure is pinned like test files, on real git repositories: a proposal's edit
that changes how tests run or what they report is held back, one that lets it through makes the
pass suspicious, and an edit to the rest of a shared configuration file is the project's."""

from __future__ import annotations

from pathlib import Path

import git
import pytest

from engine.edits.proposal import Edit, Proposal
from engine.feedback.tree import Verification
from engine.project.pins import TestChange, TestPins, changed_tests, pinned_why
from engine.run.checker import doubtful_paths
from engine.run.gate import held_back_note, split_test_edits
from engine.run.preview import pass_test_diff
from engine.verify.classify import Classification, ErrorClass
from engine.verify.results import StageKind, StageResult, TestCounts, TestReport
from engine.verify.verdict import Judgement, Verdict, pass_doubts

AUTHOR = git.Actor("fixloop tests", "tests@fixloop.invalid")

PYPROJECT = """\
[project]
name = "demo"
version = "0.1.0"
dependencies = []

[tool.pytest.ini_options]
testpaths = ["tests"]
"""
SETUP_CFG = """\
[metadata]
name = demo

[tool:pytest]
testpaths = tests

[flake8]
max-line-length = 100
"""
TOX_INI = """\
[tox]
envlist = py311

[pytest]
testpaths = tests
"""
PACKAGE_JSON = """\
{
  "name": "demo",
  "version": "1.0.0",
  "scripts": {"test": "jest", "build": "tsc"},
  "devDependencies": {"jest": "^29.0.0"}
}
"""
GO_MOD = """\
module example.com/demo

go 1.22

require example.com/dep v1.0.0

replace example.com/dep => ../dep
"""
FLIP = """\
import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    outcome.get_result().outcome = "passed"
"""

BASELINE = {
    "pkg/__init__.py": "",
    "pkg/stats.py": "def mean(xs):\n    return sum(xs) / len(xs)\n",
    "tests/__init__.py": "",
    "tests/test_stats.py": "from pkg.stats import mean\n\n\ndef test_mean():\n"
    "    assert mean([1, 2, 3]) == 2\n",
    "tests/conftest.py": "",
    "pyproject.toml": PYPROJECT,
    "setup.cfg": SETUP_CFG,
    "tox.ini": TOX_INI,
    "web/package.json": PACKAGE_JSON,
    "web/jest.config.js": "module.exports = {testEnvironment: 'node'};\n",
    "go/go.mod": GO_MOD,
}


def write(root: Path, files: dict[str, str]) -> None:
    for path, content in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A committed project with pytest's, Jest's and Go's configuration."""
    project = tmp_path / "project"
    repo = git.Repo.init(project)
    write(project, BASELINE)
    repo.git.add(A=True)
    repo.index.commit("baseline", author=AUTHOR, committer=AUTHOR)
    return project


def proposal(*edits: Edit) -> Proposal:
    return Proposal(explanation="fix", edits=list(edits), format="json")


def swap(path: str, search: str, replace: str) -> Edit:
    return Edit(path=path, search=search, replace=replace)


def held(root: Path, *edits: Edit) -> list[str]:
    pins = TestPins.from_commit(root)
    return split_test_edits(proposal(*edits), pins, root).held_back


# --- what the model may not change ------------------------------------------------------------

INFRASTRUCTURE_EDITS = {
    "a new conftest.py at the root": Edit(path="conftest.py", content=FLIP),
    "a new conftest.py deep in the package": Edit(path="pkg/sub/conftest.py", content=FLIP),
    "a new pytest.ini": Edit(path="pytest.ini", content="[pytest]\naddopts = -p flip\n"),
    "pyproject.toml's pytest table": swap(
        "pyproject.toml", '["tests"]', '["tests"]\naddopts = "-p flip"'
    ),
    "a new [tool.pytest] table in a new pyproject.toml": Edit(
        path="pkg/pyproject.toml", content='[tool.pytest.ini_options]\naddopts = "-x"\n'
    ),
    "setup.cfg's pytest section": swap("setup.cfg", "testpaths = tests", "testpaths = pkg"),
    "tox.ini's pytest section": swap(
        "tox.ini", "[pytest]\ntestpaths = tests", "[pytest]\naddopts = -p flip"
    ),
    "jest.config.js": swap("web/jest.config.js", "'node'", "'node', reporters: []"),
    "a new vitest.config.ts": Edit(path="web/vitest.config.ts", content="export default {};\n"),
    "package.json's test script": swap("web/package.json", '"test": "jest"', '"test": "true"'),
    "package.json's jest key": swap(
        "web/package.json", '"version": "1.0.0",', '"version": "1.0.0", "jest": {"bail": 1},'
    ),
    "go.mod's replace line": swap("go/go.mod", "=> ../dep", "=> ./fake"),
}


@pytest.mark.parametrize("edit", INFRASTRUCTURE_EDITS.values(), ids=INFRASTRUCTURE_EDITS.keys())
def test_an_edit_to_test_infrastructure_is_held_back(root: Path, edit: Edit) -> None:
    fix = swap("pkg/stats.py", "len(xs)", "max(len(xs), 1)")
    split = split_test_edits(proposal(fix, edit), TestPins.from_commit(root), root)
    assert split.held_back == [edit.path]
    assert split.kept.edits == [fix]


# A shared configuration file: (an edit to its test part, an edit to the rest of it).
SHARED_FILE_EDITS = {
    "pyproject.toml": (
        swap("pyproject.toml", '["tests"]', '["pkg"]'),
        swap("pyproject.toml", "dependencies = []", 'dependencies = ["attrs"]'),
    ),
    "a new pyproject.toml": (
        Edit(path="pkg/pyproject.toml", content='[tool.pytest.ini_options]\naddopts = "-x"\n'),
        Edit(path="pkg/pyproject.toml", content='[project]\nname = "inner"\n'),
    ),
    "setup.cfg": (
        swap("setup.cfg", "testpaths = tests", "testpaths = pkg"),
        swap("setup.cfg", "max-line-length = 100", "max-line-length = 120"),
    ),
    "tox.ini": (
        swap("tox.ini", "testpaths = tests", "testpaths = pkg"),
        swap("tox.ini", "envlist = py311", "envlist = py312"),
    ),
    "package.json": (
        swap("web/package.json", '"test": "jest"', '"test": "true"'),
        swap("web/package.json", '"build": "tsc"', '"build": "tsc -p ."'),
    ),
    "go.mod": (
        swap("go/go.mod", "=> ../dep", "=> ./fake"),
        swap("go/go.mod", "dep v1.0.0", "dep v1.0.1"),
    ),
}


@pytest.mark.parametrize(
    ("test_part", "elsewhere"), SHARED_FILE_EDITS.values(), ids=SHARED_FILE_EDITS.keys()
)
def test_only_the_test_part_of_a_shared_configuration_file_is_held_back(
    root: Path, test_part: Edit, elsewhere: Edit
) -> None:
    assert held(root, test_part) == [test_part.path]
    assert held(root, elsewhere) == []


def test_the_held_back_reason_names_the_file_and_why(root: Path) -> None:
    assert pinned_why("pkg/sub/conftest.py") == (
        "pinned test infrastructure pkg/sub/conftest.py "
        "(its hooks and fixtures decide how tests run and what they report)"
    )
    assert pinned_why("pyproject.toml") == (
        "pinned test infrastructure pyproject.toml (its [tool.pytest] table configures pytest)"
    )
    assert pinned_why("tests/test_stats.py") == "pinned test file tests/test_stats.py"


def test_the_model_is_told_why_its_conftest_was_not_applied() -> None:
    note = held_back_note(["conftest.py"])
    assert note.startswith("Your edits to conftest.py were NOT applied")
    assert "conftest.py: its hooks and fixtures decide how tests run" in note


# --- what a run that let it through is --------------------------------------------------------


def passed_stage() -> StageResult:
    counts = TestCounts(collected=1, passed=1)
    report = TestReport(exitstatus=0, counts=counts, nodeids=["tests/test_stats.py::test_mean"])
    return StageResult(
        name="tests", kind=StageKind.TESTS, cmd="pytest", exit_code=0, duration_ms=1, report=report
    )


def test_an_added_conftest_makes_a_pass_suspicious_an_added_test_file_does_not(
    root: Path,
) -> None:
    pins = TestPins.from_commit(root)
    write(root, {"pkg/conftest.py": FLIP, "tests/test_more.py": "def test_more():\n    pass\n"})
    changes = changed_tests(pins, root)
    assert changes == [
        TestChange(path="pkg/conftest.py", change="added"),
        TestChange(path="tests/test_more.py", change="added"),
    ]
    reasons = pass_doubts([passed_stage()], changed_tests=changes)
    assert reasons == [
        "test infrastructure pkg/conftest.py was added since the baseline "
        "(its hooks and fixtures decide how tests run and what they report)"
    ]


def test_removing_pytests_table_from_pyproject_is_a_modification(root: Path) -> None:
    pins = TestPins.from_commit(root)
    write(root, {"pyproject.toml": PYPROJECT.split("[tool.pytest")[0]})
    assert changed_tests(pins, root) == [TestChange(path="pyproject.toml", change="modified")]


def test_a_deleted_pytest_configuration_is_a_change(root: Path) -> None:
    pins = TestPins.from_commit(root)
    (root / "tox.ini").unlink()
    assert changed_tests(pins, root) == [TestChange(path="tox.ini", change="deleted")]


def test_only_the_test_part_of_shared_configuration_is_compared(root: Path) -> None:
    pins = TestPins.from_commit(root)
    write(
        root,
        {
            "pyproject.toml": PYPROJECT.replace("dependencies = []", 'dependencies = ["x"]'),
            "web/package.json": PACKAGE_JSON.replace('"tsc"', '"tsc -b"'),
            "go/go.mod": GO_MOD.replace("v1.0.0", "v1.2.0"),
            "setup.cfg": SETUP_CFG.replace("100", "120"),
        },
    )
    assert changed_tests(pins, root) == []
    write(root, {"go/go.mod": GO_MOD.replace("=> ../dep", "=> ./fake")})
    assert changed_tests(pins, root) == [TestChange(path="go/go.mod", change="modified")]


def test_a_rejected_pass_takes_an_added_conftest_away(root: Path) -> None:
    judgement = Judgement(
        verdict=Verdict.SUSPICIOUS_PASS,
        classification=Classification(error_class=ErrorClass.NONE, primary=""),
    )
    current = Verification(
        judgement=judgement,
        stages=[],
        changed_tests=[
            TestChange(path="conftest.py", change="added"),
            TestChange(path="tests/test_more.py", change="added"),
        ],
    )
    assert doubtful_paths(current) == ["conftest.py"]


def test_the_suspicious_pass_review_shows_a_change_to_the_test_script(root: Path) -> None:
    repo = git.Repo(root)
    baseline = repo.head.commit.hexsha
    write(root, {"web/package.json": PACKAGE_JSON.replace('"test": "jest"', '"test": "true"')})
    repo.git.add(A=True)
    repo.index.commit("the run's change", author=AUTHOR, committer=AUTHOR)
    assert '+  "scripts": {"test": "true", "build": "tsc"},' in pass_test_diff(root, baseline)
