"""`fixloop-tui bench` end to end: the real CLI process, the scripted model server over HTTP
(through litellm), the real loop and the real gVisor sandbox, on a two-task suite."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.model_server import ScriptedModelServer, reply, status

REPO = Path(__file__).parents[2]
KEY = "sk-test-bench-0123456789"
USAGE = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}

pytestmark = [pytest.mark.sandbox, pytest.mark.usefixtures("needs_gvisor")]

TASKS = [
    {
        "task_id": "t/1",
        "prompt": 'def add(a, b):\n    """The sum of a and b."""\n',
        "entry_point": "add",
        "canonical_solution": "    return a + b\n",
        "test": (
            "def check(candidate):\n    assert candidate(1, 2) == 3\n"
            "    assert candidate(2, 2) == 4\n"
        ),
    },
    {
        "task_id": "t/2",
        "prompt": 'def negate(x):\n    """-x."""\n',
        "entry_point": "negate",
        "canonical_solution": "    return -x\n",
        "test": "def check(candidate):\n    assert candidate(3) == -3\n",
    },
]


def code(body: str, name: str = "add", args: str = "a, b") -> Any:
    """An answer in the json edit format (the loop's, for a hosted model): solution.py whole."""
    program = f"def {name}({args}):\n    {body}\n"
    edits = [{"path": "solution.py", "content": program}]
    answer = json.dumps({"explanation": f"{name}: {body}", "edits": edits})
    return reply(f"```json\n{answer}\n```", usage=USAGE)


def bench(
    server: ScriptedModelServer, tmp_path: Path, *extra: str, key: str | None = KEY
) -> subprocess.CompletedProcess[str]:
    """`fixloop-tui bench` on TASKS against the scripted server; `key=None` gives the command
    no API key (a Ray cluster's nodes have their own)."""
    suite = tmp_path / "suite"
    suite.mkdir(exist_ok=True)
    (suite / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in TASKS))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tui.cli",
            "bench",
            "--suite",
            str(suite),
            "--model",
            "openai/scripted",
            "--api-base",
            server.base_url,
            *extra,
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
        | ({"OPENAI_API_KEY": key} if key else {}),
        timeout=600,
        check=False,
    )
    assert KEY not in done.stdout + done.stderr
    return done


def user_prompt(server: ScriptedModelServer, n: int) -> str:
    return str(server.requests[n].body["messages"][-1]["content"])


def test_two_arms_on_two_tasks_through_the_loop(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    model_server.script(
        # t/1, arm today: wrong, then fixed in round 1
        code("return a - b"),
        code("return a + b"),
        # t/1, arm raw: wrong twice
        code("return a - b"),
        code("return a * b"),
        # t/2: right at once, in both arms
        code("return -x", "negate", "x"),
        code("return -x", "negate", "x"),
    )
    plot = tmp_path / "bench.png"
    done = bench(
        model_server,
        tmp_path,
        "--arms",
        "today,raw",
        "--max-iters",
        "1",
        "--plot",
        str(plot),
        "--keep",
    )
    assert done.returncode == 0, done.stderr
    assert model_server.count == 6  # every arm asks for itself: the loop runs once per arm
    table = done.stdout
    rows = [line.split() for line in table.splitlines()]
    for row in [
        ["tasks", "2", "2"],
        ["pass@1", "(round", "0)", "50.0%", "50.0%"],
        ["pass", "after", "round", "1", "100.0%", "50.0%"],
        ["model", "calls", "3", "3"],
        ["prompt", "tokens", "per", "fix", "150", "300"],
        ["t/1", "r1", "-"],
        ["t/2", "r0", "r0"],
    ]:
        assert row in rows, f"{row} not in the table:\n{table}"
    assert "  runs ended: exhausted 1, ok 1" in table
    assert max(len(line) for line in table.splitlines()) <= 100
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "[##########..........] 1/2 t/1: today r1, raw failed" in done.stderr
    assert "  t/1 [raw] round 1: failing (1 passed, 1 failed)" in done.stderr

    # What each arm was told about the same wrong first answer.
    today, raw = user_prompt(model_server, 1), user_prompt(model_server, 3)
    assert "expected: `3`\n  actual:   `-1`" in today
    assert "Please fix it." not in today
    assert "FAILED test_solution.py::test_add_1" in raw  # pytest's own words
    assert raw.rstrip().endswith("Please fix it.")
    assert "expected: `3`" not in raw

    # --keep: every run's audit trail is where the bench said.
    kept = Path(done.stderr.split("audit trails kept in ")[1].split()[0])
    trails = sorted(kept.glob("*/.fixloop/runs/*/events.jsonl"))
    assert [p.parts[-5] for p in trails] == [
        "001-t-1-raw",
        "001-t-1-today",
        "002-t-2-raw",
        "002-t-2-today",
    ]
    shutil.rmtree(kept)


def test_json_has_per_task_runs_and_scores(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    model_server.script(code("return a + b"), code("return x", "negate", "x"))
    done = bench(
        model_server, tmp_path, "--json", "--feedback", "raw", "--max-iters", "0", "--seed", "5"
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["config"]["seed"] == 5
    assert result["config"]["arms"] == ["raw"]
    assert [item["item_id"] for item in result["items"]] == ["t/1", "t/2"]
    first, second = (item["arms"]["raw"] for item in result["items"])
    assert (first["passed_round"], second["passed_round"]) == (0, None)
    assert (first["status"], second["status"]) == ("ok", "exhausted")
    assert second["rounds"] == ["failing"]
    assert second["spend"]["prompt_tokens"] == 100
    assert second["run_dir"].startswith(result["trails"])
    assert "/.fixloop/runs/" in second["run_dir"]
    assert not Path(result["trails"]).exists()  # no --keep: the task repositories are gone
    score = result["scores"]["raw"]
    assert (score["tasks"], score["pass_at_1"], score["pass_after_round"]) == (2, 0.5, [0.5])
    assert not (tmp_path / ".fixloop").exists()  # nothing in the home directory


def test_a_model_that_refuses_the_key_stops_the_bench(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    model_server.script(status(401))
    done = bench(model_server, tmp_path, "--keep")
    assert done.returncode == 6, done.stderr
    assert model_server.count == 1  # no retry, and no second task asked the same dead model
    [error] = [line for line in done.stderr.splitlines() if line.startswith("fixloop-tui:")]
    assert error.startswith("fixloop-tui: error: ")
    assert "401" in error
    assert "Traceback" not in done.stderr
    kept = Path(done.stderr.split("audit trails kept in ")[1].split()[0])
    [trail] = kept.glob("*/.fixloop/runs/*/events.jsonl")
    assert '"status":"error"' in trail.read_text().replace(" ", "")
    shutil.rmtree(kept)


def test_an_unknown_arm_is_a_usage_error(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tui.cli", "bench", "--arms", "today,fast"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("fixloop-tui: error: unknown arm 'fast' (known: today, raw,")


def test_the_help_lists_the_arms(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tui.cli", "bench", "--help"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        timeout=120,
        check=False,
    )
    assert done.returncode == 0
    assert "--arms A,B" in done.stdout
    assert "  raw       today + raw feedback\n" in done.stdout
    assert max(len(line) for line in done.stdout.splitlines()) <= 80


def test_an_unknown_suite_is_a_usage_error(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tui.cli", "bench", "--suite", str(tmp_path / "missing")],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"fixloop-tui: error: unknown suite {str(tmp_path / 'missing')!r}: use humaneval, "
        "examples, or a directory of *.jsonl task files"
    ]
    assert model_server.count == 0


def test_a_ledger_carries_a_bench_over_two_sittings(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger.jsonl"
    common = ("--feedback", "raw", "--max-iters", "0", "--ledger", str(ledger))
    model_server.script(code("return a + b"))
    first = bench(model_server, tmp_path, *common, "--limit", "1")
    assert first.returncode == 0, first.stderr
    [line] = ledger.read_text().splitlines()
    assert json.loads(line)["key"]["max_rounds"] == 0
    # The second sitting asks for both tasks: only the one the ledger lacks is run.
    model_server.script(code("return x", "negate", "x"))
    second = bench(model_server, tmp_path, *common, "--json")
    assert second.returncode == 0, second.stderr
    assert model_server.count == 2
    result = json.loads(second.stdout)
    assert [item["item_id"] for item in result["items"]] == ["t/1", "t/2"]
    assert result["reused_runs"] == 1
    assert result["revisions"]  # the fixloop source each run was measured with
    assert second.stderr.count("(from the ledger)") == 1
    assert len(ledger.read_text().splitlines()) == 2
    # Other conditions (another number of rounds) share nothing with it.
    model_server.script(code("return a + b"), code("return -x", "negate", "x"))
    third = bench(model_server, tmp_path, "--feedback", "raw", "--ledger", str(ledger))
    assert third.returncode == 0, third.stderr
    assert model_server.count == 4
    assert "(from the ledger)" not in third.stderr
    # --report-only: the first two sittings' report again, with nothing run.
    report = bench(model_server, tmp_path, *common, "--report-only", "--json")
    assert report.returncode == 0, report.stderr
    assert model_server.count == 4
    again = json.loads(report.stdout)
    assert [item["item_id"] for item in again["items"]] == ["t/1", "t/2"]
    assert again["scores"] == result["scores"]
    assert again["reused_runs"] == 2


def test_a_broken_ledger_is_a_one_line_usage_error(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    ledger.write_text("not json\n{}\n")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tui.cli",
            "bench",
            "--ledger",
            str(ledger),
            "--model",
            "openai/scripted",
            "--api-base",
            "http://127.0.0.1:9",
            "--suite",
            "examples",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "OPENAI_API_KEY": KEY},
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"fixloop-tui: error: --ledger {ledger}: line 1 is not a bench ledger line"
    )
