"""Spec mode end to end: the real CLI (or the runner, for a person's decision at the gate),
the scripted model server over HTTP through litellm, the real gVisor sandbox and real git.

The model writes durations.py and tests/test_durations.py from examples/specs/parse_duration.toml;
fixloop writes tests/test_parse_duration_examples.py itself.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import git
import pytest

from engine.edits.proposal import Proposal
from engine.project.paths import fixloop_dir
from engine.project.settings import load_settings
from engine.run.gate import PassReview, Review
from engine.run.run_directory import read_events
from engine.run.start import start_run
from tests.model_server import ScriptedModelServer, reply
from tests.projects import answer, readable

REPO = Path(__file__).parents[2]
SPEC = REPO / "examples" / "specs" / "parse_duration.toml"
KEY = "sk-test-spec-0123456789"
MODULE = "durations.py"
TESTS = "tests/test_durations.py"
EXAMPLES = "tests/test_parse_duration_examples.py"

RIGHT = '''import re

_PART = re.compile(r"(\\d+)([hms])")
_SECONDS = {"h": 3600, "m": 60, "s": 1}


def parse_duration(text: str) -> int:
    """Seconds in a duration like 1h30m."""
    if not text or _PART.sub("", text):
        raise ValueError(f"not a duration: {text!r}")
    return sum(int(n) * _SECONDS[unit] for n, unit in _PART.findall(text))
'''
# Reads "5m" as 5: every unit ignored. The model's own (weak) tests cannot tell.
WRONG = RIGHT.replace("int(n) * _SECONDS[unit]", "int(n)")
UNITS_FIX = {
    "path": MODULE,
    "search": "int(n) for n, unit",
    "replace": "int(n) * _SECONDS[unit] for n, unit",
}
WEAK_TESTS = """import pytest

from durations import parse_duration


def test_constraint_1_unknown_unit_raises():
    with pytest.raises(ValueError):
        parse_duration("5x")


def test_constraint_2_number_without_unit_raises():
    with pytest.raises(ValueError):
        parse_duration("10")
"""


def draft(explanation: str, module: str, tests: str) -> str:
    return answer(
        explanation, {"path": MODULE, "content": module}, {"path": TESTS, "content": tests}
    )


def spec_project(tmp_path: Path) -> Path:
    """A small git project without the module: what a person starts a spec from."""
    root = tmp_path / "timekeeping"
    root.mkdir()
    (root / "README.md").write_text("Time keeping helpers.\n", encoding="utf-8")
    repo = git.Repo.init(root)
    repo.git.add("-A")
    repo.index.commit("start")
    readable(tmp_path)
    return root


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return spec_project(tmp_path)


def fixloop(
    server: ScriptedModelServer, root: Path, *extra: str, spec: Path = SPEC
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tui.cli",
            str(root),
            "--headless",
            "--json",
            "--spec",
            str(spec),
            "--model",
            "openai/scripted",
            "--api-base",
            server.base_url,
            "--sandbox",
            "gvisor",  # not auto: a docker engine, if one runs, costs more per job
            *extra,
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={"PATH": "/usr/bin:/bin", "OPENAI_API_KEY": KEY, "HOME": str(root.parent)},
        timeout=600,
        check=False,
    )
    assert KEY not in done.stdout + done.stderr
    return done, json.loads(done.stdout) if done.stdout.strip() else {}


def events_of(result: dict[str, Any]) -> list[Any]:
    return read_events(Path(result["run_dir"]) / "events.jsonl")


def at_tip(root: Path, result: dict[str, Any], path: str) -> str:
    blob = git.Repo(root).commit(result["branch"]).tree / path
    return str(blob.data_stream.read().decode())


def prompt(server: ScriptedModelServer, index: int) -> str:
    return str(server.requests[index].body["messages"][-1]["content"])


@pytest.mark.sandbox
@pytest.mark.usefixtures("needs_gvisor")
def test_the_first_answer_creates_both_files_and_the_examples_catch_a_wrong_module(
    model_server: ScriptedModelServer, project: Path
) -> None:
    model_server.script(
        reply(draft("parse each part's number", WRONG, WEAK_TESTS)),
        reply(answer("multiply by the unit", UNITS_FIX)),
    )
    done, result = fixloop(model_server, project)
    assert done.returncode == 0, done.stderr
    assert result["status"] == "ok"
    assert [it["status"] for it in result["iterations"]] == ["failing", "ok"]
    # The wrong module passed the model's own two tests; three examples caught it.
    first = result["iterations"][0]["tests"]
    assert (first["passed"], first["failed"]) == (4, 3)
    first_prompt = prompt(model_server, 0)
    assert "def parse_duration(text: str) -> int" in first_prompt
    assert "```" not in first_prompt  # no implementation, no file: the spec only
    second_prompt = prompt(model_server, 1)
    assert "[example 2: parse_duration('5m') == 300]" in second_prompt
    assert "expected: `300`" in second_prompt
    assert "actual:   `5`" in second_prompt
    repo = git.Repo(project)
    first_commit = result["iterations"][0]["commit"]
    changed = repo.git.diff("--name-only", f"{first_commit}~1", first_commit).split()
    assert changed == [MODULE, TESTS]
    generated = repo.git.diff("--name-only", f"{first_commit}~2", f"{first_commit}~1").split()
    assert generated == [EXAMPLES]
    assert at_tip(project, result, TESTS) == WEAK_TESTS
    kinds = [e.type for e in events_of(result)]
    assert kinds.index("SpecPrepared") < kinds.index("IterationStarted")
    latched = [e for e in events_of(result) if e.type == "TestsLatched"]
    assert [(e.n, sorted(e.files)) for e in latched] == [(0, [EXAMPLES]), (1, [TESTS])]
    assert (Path(result["run_dir"]) / "spec.toml").is_file()
    assert not (project / MODULE).exists()  # the user's checkout is untouched


@pytest.mark.sandbox
@pytest.mark.usefixtures("needs_gvisor")
def test_a_later_test_edit_is_refused_and_the_model_is_told(
    model_server: ScriptedModelServer, project: Path
) -> None:
    loosen = {"path": TESTS, "search": 'parse_duration("10")', "replace": 'parse_duration("10x")'}
    skip = {"path": EXAMPLES, "content": "def test_nothing():\n    pass\n"}
    model_server.script(
        reply(draft("parse each part's number", WRONG, WEAK_TESTS)),
        reply(answer("the examples are wrong", skip)),
        reply(answer("units, and a looser test", UNITS_FIX, loosen)),
    )
    done, result = fixloop(model_server, project)
    assert done.returncode == 0, done.stderr
    assert [it["status"] for it in result["iterations"]] == ["failing", "format_error", "ok"]
    assert result["iterations"][1]["commit"] is None
    third_prompt = prompt(model_server, 2)
    assert (
        f"your edits to {EXAMPLES} were refused: in spec mode the tests are frozen after your "
        "first answer" in third_prompt
    )
    refused = [(e.n, e.files) for e in events_of(result) if e.type == "TestEditsRefused"]
    assert refused == [(2, [EXAMPLES]), (3, [TESTS])]
    applied = [e for e in events_of(result) if e.type == "EditsApplied" and e.n == 3]
    assert [(e.files, e.held_back) for e in applied] == [([MODULE], [TESTS])]
    assert at_tip(project, result, TESTS) == WEAK_TESTS
    assert "def test_example_returns" in at_tip(project, result, EXAMPLES)


@pytest.mark.sandbox
@pytest.mark.usefixtures("needs_gvisor")
def test_a_test_calling_an_undefined_function_is_a_reference_error_and_nothing_runs(
    model_server: ScriptedModelServer, project: Path
) -> None:
    typo = (
        WEAK_TESTS
        + '\n\ndef test_constraint_3_parts_add_up():\n    assert parse_seconds("1m30s") == 90\n'
    )
    typo = typo.replace("import parse_duration", "import parse_duration, parse_seconds")
    alias_added = RIGHT + "\n\nparse_seconds = parse_duration\n"
    model_server.script(
        reply(draft("parse each part", RIGHT, typo)),
        reply(answer("define what the tests import", {"path": MODULE, "content": alias_added})),
    )
    done, result = fixloop(model_server, project)
    assert done.returncode == 0, done.stderr
    assert [it["status"] for it in result["iterations"]] == ["failing", "ok"]
    assert result["iterations"][0]["error_class"] == "reference_error"
    assert result["iterations"][0]["tests"] is None
    events = events_of(result)
    assert not [e for e in events if e.type == "StageStarted" and e.n == 1]  # no sandbox run
    [checked] = [e for e in events if e.type == "ReferencesChecked" and e.n == 1]
    assert checked.problems == [
        f"{TESTS}:3: imports parse_seconds from durations, but {MODULE} does not define it "
        "(it defines parse_duration, re)"
    ]
    second_prompt = prompt(model_server, 1)
    assert "Error class: reference_error" in second_prompt
    assert "imports parse_seconds from durations, but durations.py does not define it" in (
        second_prompt
    )
    assert "The spec's signature: def parse_duration(text: str) -> int" in second_prompt


@pytest.mark.sandbox
@pytest.mark.usefixtures("needs_gvisor")
def test_a_run_that_ends_failing_reports_the_examples_that_kept_failing(
    model_server: ScriptedModelServer, project: Path
) -> None:
    hours_only = {
        "path": MODULE,
        "search": "int(n) for n, unit",
        "replace": "int(n) * 60 for n, unit",
    }
    model_server.script(
        reply(draft("parse each part's number", WRONG, WEAK_TESTS)),
        reply(answer("everything is minutes", hours_only)),
    )
    done, result = fixloop(model_server, project, "--max-iters", "2")
    assert done.returncode == 1, done.stderr
    assert result["status"] == "exhausted"
    report = Path(result["report"]).read_text(encoding="utf-8")
    assert "## The spec: what kept failing" in report
    assert "| example 2: parse_duration('5m') == 300 | 1 | expected 300, got 5 |" in report
    assert "| example 3: parse_duration('2h') == 7200 | 1, 2 | expected 7200, got 120 |" in report
    assert "| example 5: parse_duration('') raises ValueError | — | passed |" in report
    assert (
        "- example 3 (`parse_duration('2h') == 7200`): still failing while every test the model "
        "wrote from the description passed" in report
    )


def test_a_bad_spec_is_one_line_and_writes_nothing(
    model_server: ScriptedModelServer, project: Path, tmp_path: Path
) -> None:
    bad = tmp_path / "bad.toml"
    text = SPEC.read_text(encoding="utf-8").replace(
        'signature = "parse_duration(text: str) -> int"',
        'signature = "parse_duration(text) -> int"',
    )
    bad.write_text(text, encoding="utf-8")
    branches = [head.name for head in git.Repo(project).heads]
    done, result = fixloop(model_server, project, spec=bad)
    assert done.returncode == 2
    assert result == {}
    assert done.stderr == (
        f"fixloop-tui: error: spec {bad}: signature `parse_duration(text) -> int`: parameter "
        "'text' has no type hint (like text: str)\n"
    )
    assert not fixloop_dir(project).exists()
    assert [head.name for head in git.Repo(project).heads] == branches
    assert model_server.count == 0


class ApprovingGate:
    """A person who lets the model change its own tests at the second proposal."""

    approval = "step"

    def __init__(self) -> None:
        self.held: list[list[str]] = []

    async def review(self, n: int, proposal: Proposal, held_back: list[str]) -> Review:
        self.held.append(list(held_back))
        if held_back:
            return Review(
                decision="approve", allow_test_edits=True, note="the 90 was a typo", by="person"
            )
        return Review(decision="approve")

    async def review_pass(self, n: int, reasons: list[str]) -> PassReview:
        return PassReview(accept=False, note="no")

    async def between(self, n: int) -> str | None:
        return None


@pytest.mark.sandbox
@pytest.mark.usefixtures("needs_gvisor")
async def test_a_test_change_the_person_approves_is_applied_and_recorded(
    model_server: ScriptedModelServer, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    wrong_test = (
        WEAK_TESTS
        + '\n\ndef test_constraint_3_parts_add_up():\n    assert parse_duration("1m30s") == 91\n'
    )
    fix_test = {"path": TESTS, "search": "== 91", "replace": "== 90"}
    never = {"path": EXAMPLES, "content": "def test_nothing():\n    pass\n"}
    model_server.script(
        reply(draft("parse each part", RIGHT, wrong_test)),
        reply(answer("the test had a typo", fix_test, never)),
    )
    settings = load_settings(
        project,
        {
            "model": "openai/scripted",
            "api_base": model_server.base_url,
            "sandbox": "gvisor",
            "spec": SPEC,
        },
    )
    gate = ApprovingGate()
    result = await start_run(project, settings, gate=gate)
    assert [r.status for r in result.iterations] == ["failing", "ok"]
    assert result.status.value == "ok"  # the person's approval re-froze the test: no doubt
    assert gate.held == [[], sorted([TESTS, EXAMPLES])]
    events = read_events(Path(result.run_dir) / "events.jsonl")
    [approved] = [e for e in events if e.type == "TestsLatched" and e.n == 2]
    assert list(approved.files) == [TESTS]
    assert approved.reason == f"changed with the person's approval at the gate: {TESTS}"
    assert [(e.n, e.files) for e in events if e.type == "TestEditsRefused"] == [(2, [EXAMPLES])]
    tip = git.Repo(project).commit(result.branch).tree
    assert "== 90" in (tip / TESTS).data_stream.read().decode()
    assert "def test_example_returns" in (tip / EXAMPLES).data_stream.read().decode()
