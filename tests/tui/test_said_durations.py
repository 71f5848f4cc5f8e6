"""Durations where the person reads them (the history's time column, the progress lines) say
`1h02m` or `1m15s`, the engine's one wording, never a count of seconds."""

from __future__ import annotations

import io

from engine.run.events import IterationStarted, ModelResponded
from tui.headless import ProgressPrinter
from tui.widgets.history.pane import time_cell
from tui.widgets.run_view import IterationView


def test_the_history_says_an_hour_long_iteration_in_hours_and_minutes() -> None:
    assert time_cell(IterationView(n=1, started=100.0, ended=3825.0)) == "1h02m"


def test_the_progress_line_says_a_slow_answer_in_minutes_and_seconds() -> None:
    stream = io.StringIO()
    printer = ProgressPrinter(stream)
    printer.emit(IterationStarted(n=1, max_n=4))
    printer.emit(ModelResponded(n=1, prompt_tokens=90, completion_tokens=10, duration_s=75.0))
    assert stream.getvalue() == "fixloop: [1/4] model answered: 100 tokens in 1m15s\n"
