"""The batch's summary: a row per task, totals per status, the rate, and who was retried."""

from __future__ import annotations

import io

from engine.batch.task_outcome import Attempt, TaskOutcome, summarize
from tui.batch import Progress, render_table

HERE = Attempt(node="a" * 56, host="node-a")
LOST = Attempt(node="b" * 56, host="node-b", lost=True)


def outcome(id_: str, status: str, *attempts: Attempt, tokens: int = 0) -> TaskOutcome:
    return TaskOutcome(
        id=id_,
        line=1,
        repo="/srv/calc",
        status=status,
        reason="" if status == "ok" else f"why {id_}",
        exit_code=0 if status == "ok" else 1,
        attempts=list(attempts),
        tokens=tokens,
        cost_usd=0.01,
        duration_s=30.0,
    )


BATCH = [
    outcome("calc", "ok", LOST, HERE, tokens=100),
    outcome("parse", "ok", HERE, tokens=50),
    outcome("dates", "exhausted", HERE, tokens=400),
    outcome("gone", "error", LOST, LOST),
]


def test_totals_are_per_status_ok_first_and_the_rate_is_the_batchs_own() -> None:
    summary = summarize(BATCH, wall_s=60.0)
    assert [(row.status, row.tasks, row.tokens) for row in summary.by_status] == [
        ("ok", 2, 150),
        ("error", 1, 0),
        ("exhausted", 1, 400),
    ]
    assert (summary.tasks, summary.ok, summary.tokens) == (4, 2, 550)
    assert summary.tasks_per_minute == 4.0
    assert summary.retried == 2


def test_the_table_names_a_retried_tasks_attempt_and_the_batch_rate() -> None:
    table = render_table(BATCH, summarize(BATCH, wall_s=60.0))
    rows = table.splitlines()
    assert rows[0].split() == ["task", "status", "iters", "tokens", "cost", "wall", "node"]
    assert rows[1].startswith("calc ")
    assert rows[1].endswith("aaaaaaaaaaaa (attempt 2)")
    assert "all        4      550" in table
    assert table.endswith("2/4 ok in 1m00s (4 tasks/min); 2 retried after a lost node or worker")


def test_a_progress_line_says_whether_a_task_was_retried_or_lost_every_time() -> None:
    stream = io.StringIO()
    progress = Progress(len(BATCH), stream)
    for each in BATCH:
        progress.finished(each)
    lines = stream.getvalue().splitlines()
    assert lines[0] == (
        "fixloop: [#####---------------] 1/4 calc: ok in 30.0s on node-a, "
        "retried after 1 lost attempt"
    )
    assert lines[2].endswith("dates: exhausted in 30.0s on node-a — why dates")
    assert "gone: error in 30.0s on node-b, lost on every attempt (2) — why gone" in lines[3]
