"""Strong models, same loop: answers a GPT-4- or Claude-class model gives in the JSON edit
format, recorded in tests/fixtures/strong_answers/ (each with a line saying the shape it stands
for), replayed by the scripted model server to `run --headless` under a model name the embedded
path does not know, on the real bench's task shape (strong_project.py: a src layout installed
editable into its own `.venv`, a module of 3,000+ lines), verified in the real gVisor sandbox.

Each test asserts the verdict, the tests that passed, and what the run's commits hold against
the task's one commit. The project is built once per module (venv and editable install); each
test copies it with its own bug. Slow as a file: run it under the heavy lock.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import git
import pytest

from engine.run.events import EditsApplied
from engine.run.run_directory import read_events
from tests.e2e.strong_project import MONEY, build_green, records_module, task
from tests.e2e.test_headless import GVISOR, REPO, checkout_state
from tests.model_server import ScriptedModelServer, reply

pytestmark = [pytest.mark.sandbox, pytest.mark.usefixtures("needs_gvisor")]

ANSWERS = REPO / "tests" / "fixtures" / "strong_answers"
# Any litellm model: a name fixloop knows nothing of, as a user's strong model would be.
STRONG_MODEL = "openai/some-strong-model"
KEY = "sk-fixloop-canary-5b0e6a52-strong"
TESTS = 13  # the project's whole suite

MONEY_PY, LEDGER_PY = "src/ledgerkit/money.py", "src/ledgerkit/ledger.py"
RECORDS_PY, LEGACY_PY, RATES_PY = (
    "src/ledgerkit/records.py",
    "src/ledgerkit/legacy.py",
    "src/ledgerkit/rates.py",
)
# Each bug: the project's right text, and the buggy text written in its place.
FRACTION_BUG = {
    MONEY_PY: ('    fraction = (fraction + "00")[:2]\n', "    fraction = fraction[:2]\n")
}
LEDGER_BUG = {LEDGER_PY: ("in self.entries:\n", "in self.entries[:-1]:\n")}
SIGN_BUG = {
    MONEY_PY: (
        '    fraction = (fraction + "00")[:2]\n'
        '    cents = int(whole or "0") * 100 + int(fraction)\n'
        "    return Money(-cents if negative else cents, currency)\n",
        "    fraction = fraction[:2]\n"
        '    cents = int(whole or "0") * 100 + int(fraction)\n'
        "    return Money(cents, currency)\n",
    )
}
FORMAT_BUG = {MONEY_PY: ("divmod(abs(self.cents), 100)", "divmod(self.cents, 100)")}
SETTLE_BUG = {
    RECORDS_PY: (
        "totals[account] = totals.get(account, 0) + parse_cents(",
        "totals[account] = parse_cents(",
    )
}
CREDITS_BUG = {RECORDS_PY: ("        total -= item.cents\n", "        total += item.cents\n")}
TABS_BUG = {LEGACY_PY: ("\t\t\tparts.append(part.strip())\n", "\t\t\tparts.append(part)\n")}
ROUNDING_BUG = {RATES_PY: ("return round(", "return int(")}


def recorded(name: str) -> list[str]:
    """The answers of tests/fixtures/strong_answers/<name>.json, in the order they were given."""
    fixture = json.loads((ANSWERS / f"{name}.json").read_text())
    assert fixture["shape"], f"{name}.json: say which shape the answers stand for"
    answers: list[str] = fixture["answers"]
    return answers


@dataclass(frozen=True)
class Replayed:
    root: Path  # the task's repository (the user's checkout)
    base: str  # its one commit
    done: subprocess.CompletedProcess[str]
    result: dict[str, Any]  # the --json object
    prompts: list[list[dict[str, Any]]]  # each request's messages

    @property
    def statuses(self) -> list[str]:
        return [it["status"] for it in self.result["iterations"]]

    def changed(self) -> dict[str, str]:
        """Each file the run's commits changed against the task's commit, and how (A, M, D)."""
        diff = git.Repo(self.root).git.diff(
            "--name-status", "--no-renames", self.base, self.result["final_commit"]
        )
        return {path: status for status, path in (line.split("\t") for line in diff.splitlines())}

    def final_text(self, path: str) -> bytes:
        tip = git.Repo(self.root).commit(self.result["final_commit"])
        return bytes(tip.tree[path].data_stream.read())

    def held_back(self) -> list[list[str]]:
        events = read_events(Path(self.result["run_dir"]) / "events.jsonl")
        return [e.held_back for e in events if isinstance(e, EditsApplied)]


def replay(server: ScriptedModelServer, root: Path, name: str) -> Replayed:
    """`run --headless` on `root` with the strong model's recorded answers, no edit format named
    (the model's default is the one on trial); the checkout must come out as it went in."""
    before = checkout_state(root)
    server.script(*(reply(answer) for answer in recorded(name)))
    done = subprocess.run(
        [
            sys.executable, "-m", "tui.cli", str(root), "--headless", "--json",
            "--model", STRONG_MODEL, "--api-base", server.base_url, *GVISOR,
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={"PATH": "/usr/bin:/bin", "OPENAI_API_KEY": KEY, "HOME": str(root.parent)},
        timeout=600,
        check=False,
    )  # fmt: skip
    assert KEY not in done.stdout + done.stderr
    result = json.loads(done.stdout) if done.stdout.strip() else {}
    assert checkout_state(root) == before, "the run changed the user's checkout"
    base = git.Repo(root).head.commit.hexsha
    prompts = [request.body["messages"] for request in server.requests]
    return Replayed(root, base, done, result, prompts)


def assert_green(run: Replayed, iterations: int = 1) -> None:
    """Ended ok, honestly: every test of the suite collected and passed, in `iterations`."""
    assert run.done.returncode == 0, run.done.stderr[-3000:]
    assert run.result["status"] == "ok", run.result
    assert len(run.prompts) == iterations
    assert run.statuses[-1] == "ok"
    tests = run.result["iterations"][-1]["tests"]
    assert (tests["collected"], tests["passed"], tests["failed"]) == (TESTS, TESTS, 0), tests


@pytest.fixture(scope="module")
def green(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project, green, installed editable into its own venv: built once for the module."""
    return build_green(tmp_path_factory.mktemp("strong-green") / "ledgerkit")


@pytest.fixture(scope="module")
def multi_file(green: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Replayed]:
    """One run read by two tests: two modules' bugs, one answer fixing both."""
    root = task(
        green, tmp_path_factory.mktemp("multi-file") / "ledgerkit", FRACTION_BUG | LEDGER_BUG
    )
    server = ScriptedModelServer().start()
    try:
        yield replay(server, root, "multi_file")
    finally:
        server.stop()


def test_one_answer_edits_two_modules_and_adds_a_test_helper(multi_file: Replayed) -> None:
    assert_green(multi_file)
    assert multi_file.changed() == {MONEY_PY: "M", LEDGER_PY: "M", "tests/helpers.py": "A"}
    assert multi_file.final_text(MONEY_PY).decode() == MONEY


def test_an_unknown_litellm_model_is_asked_for_json_edits(multi_file: Replayed) -> None:
    system = multi_file.prompts[0][0]
    assert system["role"] == "system"
    assert "Answer with one JSON object" in system["content"]


def test_a_search_in_the_middle_of_a_3000_line_module_keeps_its_trailing_spaces(
    green: Path, tmp_path: Path, model_server: ScriptedModelServer
) -> None:
    run = replay(
        model_server, task(green, tmp_path / "ledgerkit", SETTLE_BUG), "large_file_trailing_spaces"
    )
    assert_green(run)
    assert len(records_module().splitlines()) > 3000
    assert run.changed() == {RECORDS_PY: "M"}
    # Only the line the model changed differs: the lines it quoted keep their trailing spaces.
    assert run.final_text(RECORDS_PY).decode() == records_module()


def test_a_search_written_with_spaces_lands_in_a_file_indented_with_tabs(
    green: Path, tmp_path: Path, model_server: ScriptedModelServer
) -> None:
    run = replay(model_server, task(green, tmp_path / "ledgerkit", TABS_BUG), "tabs_as_spaces")
    assert_green(run)
    assert run.changed() == {LEGACY_PY: "M"}
    assert b"\t\t\tparts.append(part.strip())\n" in run.final_text(LEGACY_PY)
    assert b"    " not in run.final_text(LEGACY_PY)  # still indented with tabs only


def test_a_search_with_unix_newlines_edits_a_crlf_file_and_keeps_it_crlf(
    green: Path, tmp_path: Path, model_server: ScriptedModelServer
) -> None:
    run = replay(model_server, task(green, tmp_path / "ledgerkit", ROUNDING_BUG), "crlf_file")
    assert_green(run)
    text = run.final_text(RATES_PY)
    assert b"    return round(euros * RATES[target])\r\n" in text
    assert text.count(b"\n") == text.count(b"\r\n")


def test_a_search_that_occurs_twice_is_refused_with_both_lines_then_lands(
    green: Path, tmp_path: Path, model_server: ScriptedModelServer
) -> None:
    run = replay(
        model_server, task(green, tmp_path / "ledgerkit", CREDITS_BUG), "search_matches_twice"
    )
    assert_green(run, iterations=2)
    assert run.statuses == ["format_error", "ok"]
    assert run.result["iterations"][0]["commit"] is None  # not applied to the first hit
    lines = [
        n for n, line in enumerate(records_module().splitlines(), 1) if line == "    total = 0"
    ]
    told = run.prompts[1][-1]["content"]
    assert f'{RECORDS_PY}: "search" occurs 2 times (at lines {lines[0]}, {lines[1]})' in told
    # sum_debits, whose lines the first answer's search also matched, is as it was.
    assert run.final_text(RECORDS_PY).decode() == records_module()


def test_a_search_not_found_is_named_with_the_closest_lines_then_lands(
    green: Path, tmp_path: Path, model_server: ScriptedModelServer
) -> None:
    bugs = FRACTION_BUG | LEDGER_BUG
    run = replay(model_server, task(green, tmp_path / "ledgerkit", bugs), "search_not_found")
    assert_green(run, iterations=2)
    assert run.statuses == ["format_error", "ok"]
    told = run.prompts[1][-1]["content"]
    assert (
        f"edit 2: {LEDGER_PY}: the \"search\" that begins 'for e in self.entries[:-1]:' "
        "was not found. The closest lines in the file are"
    ) in told
    assert "   29 |         for entry in self.entries[:-1]:" in told
    assert "None of your edits were applied" in told
    assert run.changed() == {MONEY_PY: "M", LEDGER_PY: "M"}


@pytest.mark.parametrize(
    ("shape", "bugs", "changed"),
    [
        ("prose_around_fence", FRACTION_BUG, {MONEY_PY: "M"}),
        ("reasoning_then_json", FRACTION_BUG, {MONEY_PY: "M"}),
        ("several_edits_one_file", SIGN_BUG, {MONEY_PY: "M"}),
        ("new_file_under_src", FORMAT_BUG, {MONEY_PY: "M", "src/ledgerkit/rounding.py": "A"}),
        ("edits_in_separate_fences", FRACTION_BUG | LEDGER_BUG, {MONEY_PY: "M", LEDGER_PY: "M"}),
    ],
)
def test_a_strong_models_answer_shape_lands_in_one_iteration(
    green: Path,
    tmp_path: Path,
    model_server: ScriptedModelServer,
    shape: str,
    bugs: dict[str, tuple[str, str]],
    changed: dict[str, str],
) -> None:
    run = replay(model_server, task(green, tmp_path / "ledgerkit", bugs), shape)
    assert_green(run)
    assert run.changed() == changed


def test_an_answer_that_also_edits_a_test_has_the_test_held_back(
    green: Path, tmp_path: Path, model_server: ScriptedModelServer
) -> None:
    run = replay(
        model_server, task(green, tmp_path / "ledgerkit", FRACTION_BUG), "edits_a_test_too"
    )
    assert_green(run)
    assert run.changed() == {MONEY_PY: "M"}
    assert run.held_back() == [["tests/test_money.py"]]
