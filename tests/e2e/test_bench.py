"""`fixloop-tui bench` end to end: the real CLI process, the scripted model server over HTTP
(through litellm) and the real gVisor sandbox, on a two-task suite in a directory."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.model_server import ScriptedModelServer, reply

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
    return reply(f"solution.py\n```python\ndef {name}({args}):\n    {body}\n```\n", usage=USAGE)


def bench(
    server: ScriptedModelServer, tmp_path: Path, *extra: str
) -> subprocess.CompletedProcess[str]:
    suite = tmp_path / "suite"
    suite.mkdir()
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
        env={"PATH": "/usr/bin:/bin", "OPENAI_API_KEY": KEY, "HOME": str(tmp_path)},
        timeout=600,
        check=False,
    )
    assert KEY not in done.stdout + done.stderr
    return done


def user_prompt(server: ScriptedModelServer, n: int) -> str:
    return str(server.requests[n].body["messages"][1]["content"])


def test_both_arms_on_two_tasks_one_fixed_in_round_2_one_never(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    model_server.script(
        # t/1: a one-shot answer shared by both arms, then each arm's two repair rounds
        code("return a - b"),
        code("return a * b"),  # packet, round 1: right for (2, 2) only
        code("return a + b"),  # packet, round 2: fixed
        code("return a * b"),  # raw, round 1
        code("return b - a"),  # raw, round 2: never fixed
        # t/2: wrong every time
        code("return x", "negate", "x"),
        code("return x + 0", "negate", "x"),
        code("return abs(x)", "negate", "x"),
        code("return x * 1", "negate", "x"),
        code("return x // 1", "negate", "x"),
    )
    plot = tmp_path / "bench.png"
    done = bench(
        model_server, tmp_path, "--feedback", "both", "--max-iters", "2", "--plot", str(plot)
    )
    assert done.returncode == 0, done.stderr
    assert model_server.count == 10  # round 0 asked once for both arms
    table = done.stdout
    expected_rows = [
        ["tasks", "2", "2"],
        ["pass@1", "(one-shot)", "0.0%", "0.0%"],
        ["pass", "after", "round", "1", "0.0%", "0.0%"],
        ["pass", "after", "round", "2", "50.0%", "0.0%"],
        ["mean", "rounds", "to", "pass", "2.00", "-"],
        ["model", "calls", "6", "6"],
        ["prompt", "tokens", "600", "600"],
        ["completion", "tokens", "60", "60"],
    ]
    rows = [line.split() for line in table.splitlines()]
    for row in expected_rows:
        assert row in rows, f"{row} not in the table:\n{table}"
    assert ["t/1", "r2", "-"] in rows
    assert ["t/2", "-", "-"] in rows
    assert any(line.startswith(" r2 packet |" + "█" * 20) for line in table.splitlines())
    assert max(len(line) for line in table.splitlines()) <= 100
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "[##########..........] 1/2 t/1: packet r2, raw failed" in done.stderr

    # What each arm was told after the one-shot answer failed: the same file, other feedback.
    packet, raw = user_prompt(model_server, 1), user_prompt(model_server, 3)
    for prompt in (packet, raw):
        assert "def add(a, b):\n    return a - b" in prompt
    assert "Verification failed (iteration 1/3): 2 of 2 tests failing" in packet
    assert "expected: `3`" in packet
    assert "actual:   `-1`" in packet
    assert "Test output:" not in packet
    assert "Test output:\n```\n" in raw
    assert "\n```\nPlease fix it.\n\n" in raw
    for prompt in (packet, raw):
        assert prompt.endswith(
            "Reply with the whole corrected solution.py in one fenced python code block."
        )
    assert "FAILED test_solution.py::test_add_1" in raw
    assert "Verification failed" not in raw
    # The packet's second round knows what the first changed.
    assert "Progress: 1 test now passes that failed before; 1 still fails." in user_prompt(
        model_server, 2
    )


def test_json_has_per_task_rows_and_scores(
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
    assert [a["status"] for a in second["attempts"]] == ["failed"]
    assert second["attempts"][0]["summary"] == "1 of 1 tests failing"
    score = result["scores"]["raw"]
    assert (score["tasks"], score["pass_at_1"], score["pass_after_round"]) == (2, 0.5, [0.5])


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
