"""Answers being written, folded into the run's view: the header's tokens live (the prompt's
estimate and the streamed count, then the server's), what it says while they come, and a row
per candidate for the model tab."""

from __future__ import annotations

from engine.run.events import (
    AnswerStreamed,
    BaseEvent,
    IterationStarted,
    ModelRequested,
    ModelResponded,
    ModelRetrying,
    RunStarted,
    RunStopped,
)
from tui.widgets.feedback.pane import stream_rows
from tui.widgets.header import activity_of
from tui.widgets.run_view import RunView


def asked(*requests: ModelRequested) -> RunView:
    view = RunView()
    for event in (
        RunStarted(
            ts=1.0, run_id="r", task="t", project="/p", model="m", sandbox="s", max_iterations=4
        ),
        IterationStarted(ts=2.0, n=1, max_n=4),
        *requests,
    ):
        view.apply(event)
    return view


def candidates(*events: BaseEvent) -> RunView:
    """Three candidates asked each on its own, 500 prompt tokens each."""
    view = asked(
        *[ModelRequested(n=1, model="m", prompt_tokens=500, candidate=k) for k in (1, 2, 3)]
    )
    for event in events:
        view.apply(event)
    return view


def piece(k: int, tokens: int, seconds: float = 2.0, text: str = "x") -> AnswerStreamed:
    return AnswerStreamed(n=1, candidate=k, text=text, tokens=tokens, seconds=seconds)


def test_the_tokens_count_the_prompt_and_the_answer_as_it_streams() -> None:
    view = asked(ModelRequested(n=1, model="m", prompt_tokens=800))
    assert view.live_tokens == 800
    view.stream(piece(0, 143))
    assert view.live_tokens == 943


def test_the_servers_count_replaces_the_streamed_one_when_the_answer_ends() -> None:
    view = asked(ModelRequested(n=1, model="m", prompt_tokens=800))
    view.stream(piece(0, 143))
    view.apply(ModelResponded(n=1, prompt_tokens=812, completion_tokens=150))
    assert view.live_tokens == 962


def test_the_header_says_the_answers_tokens_and_their_rate() -> None:
    view = asked(ModelRequested(n=1, model="m", prompt_tokens=800))
    view.stream(piece(0, 143, seconds=11.9))
    assert activity_of(view).text == "answering: 143 tok, 12 tok/s"


def test_with_candidates_the_header_sums_them_and_says_how_many_are_done() -> None:
    view = candidates(ModelResponded(n=1, prompt_tokens=500, completion_tokens=140, candidate=3))
    view.stream(piece(1, 120, seconds=10.0))
    view.stream(piece(2, 88, seconds=8.0))
    assert activity_of(view).text == "answering: 348 tok, 23 tok/s (3 candidates, 1 done)"


def test_each_candidate_has_a_row_with_its_own_count() -> None:
    view = candidates(ModelResponded(n=1, prompt_tokens=500, completion_tokens=140, candidate=3))
    view.stream(piece(1, 120, seconds=10.0))
    view.stream(piece(2, 88, seconds=0.2))  # too soon for a rate
    rows = stream_rows(view.iterations[1])
    assert rows is not None
    assert rows.plain.splitlines() == [
        "#1 ▍ 120 tok · 12 tok/s",
        "#2 ▍ 88 tok",
        "#3 done 140 tok",
    ]


def test_an_only_answer_has_no_rows() -> None:
    view = asked(ModelRequested(n=1, model="m", prompt_tokens=800))
    view.stream(piece(0, 143))
    assert stream_rows(view.iterations[1]) is None


def test_only_the_first_candidates_text_is_shown_as_it_streams() -> None:
    view = candidates()
    view.stream(piece(1, 1, text="first "))
    view.stream(piece(2, 1, text="second "))
    assert view.iterations[1].model_text == "first "


def test_a_retry_while_candidates_are_written_keeps_the_shown_text() -> None:
    view = candidates()
    view.stream(piece(1, 1, text="half an ans"))
    view.apply(ModelRetrying(n=1, attempt=2, max_attempts=4, wait_s=1.0, reason="HTTP 503"))
    assert view.iterations[1].model_text == "half an ans"


def test_a_failed_candidate_no_longer_counts_once_the_next_iteration_starts() -> None:
    view = candidates()
    view.stream(piece(2, 50))
    view.apply(IterationStarted(n=2, max_n=4))
    assert view.live_tokens == 0


def test_a_stopped_runs_unanswered_requests_no_longer_count_once_it_is_resumed() -> None:
    view = candidates()
    view.stream(piece(1, 50))
    view.apply(RunStopped(n=1, reason="stopped by you"))
    view.resumed()
    assert view.live_tokens == 0
