"""The header's account of what the loop does, folded from events: a retry of the model shows
its count, wait and reason until the next attempt answers."""

from __future__ import annotations

from engine.run.events import (
    AnswerReasked,
    AnswerStreamed,
    BaseEvent,
    IterationStarted,
    ModelRequested,
    ModelResponded,
    ModelRetrying,
    RunStarted,
    StrategyChanged,
)
from tui.widgets.header import activity_of
from tui.widgets.run_view import RunView

RETRY = ModelRetrying(
    ts=3.0, n=1, attempt=2, max_attempts=4, wait_s=3.04, reason="connection refused"
)


def view_after(*events: BaseEvent) -> RunView:
    view = RunView()
    for event in (
        RunStarted(
            ts=1.0, run_id="r", task="t", project="/p", model="m", sandbox="s", max_iterations=4
        ),
        IterationStarted(ts=2.0, n=1, max_n=4),
        ModelRequested(ts=2.1, n=1, model="m"),
        *events,
    ):
        view.apply(event)
    return view


def test_a_retry_shows_its_count_wait_and_reason() -> None:
    activity = activity_of(view_after(RETRY))
    assert activity.text == "the model did not answer (connection refused): retry 2/4 in 3 s"
    assert activity.busy


def test_a_short_wait_is_said_in_tenths() -> None:
    quick = RETRY.model_copy(update={"wait_s": 0.3, "attempt": 3})
    assert activity_of(view_after(quick)).text.endswith("retry 3/4 in 0.3 s")


def test_once_the_retry_streams_its_answer_the_header_says_so() -> None:
    view = view_after(RETRY)
    view.stream(AnswerStreamed(n=1, text="def mean(", tokens=3, seconds=0.1))
    assert activity_of(view).text == "answering: 3 tok"


def test_the_answer_clears_the_retry() -> None:
    view = view_after(RETRY, ModelResponded(ts=9.0, n=1, attempts=2))
    assert view.iterations[1].retry == ""
    assert activity_of(view).text == "reading the answer"


def test_a_retry_drops_the_failed_attempts_partial_text() -> None:
    view = view_after()
    view.iterations[1].model_text = "half an ans"
    view.apply(RETRY)
    assert view.iterations[1].model_text == ""


def test_a_later_candidates_request_keeps_the_first_answers_streamed_text() -> None:
    # Sampled candidates asked together (a provider's `n`) are requested once the client
    # knows it may: after the first, greedy answer began to stream, which is the one shown.
    view = view_after()
    view.iterations[1].model_text = "half an ans"
    view.apply(ModelRequested(ts=2.2, n=1, model="m", candidate=2, together=2))
    assert view.iterations[1].model_text == "half an ans"
    view.apply(ModelRequested(ts=2.3, n=1, model="m", candidate=1))  # the first asked anew
    assert view.iterations[1].model_text == ""


def test_a_sampled_candidates_retry_keeps_the_first_answers_streamed_text() -> None:
    view = view_after()
    view.iterations[1].model_text = "half an ans"
    view.apply(RETRY.model_copy(update={"streamed": False}))
    assert view.iterations[1].model_text == "half an ans"
    assert activity_of(view).text.startswith("the model did not answer")


def test_a_reasked_answer_streams_in_place_of_the_unchanged_one() -> None:
    view = view_after()
    view.iterations[1].model_text = "the file, unchanged"
    view.apply(AnswerReasked(ts=2.5, n=1, reason="the answer changed no file", temperature=0.7))
    assert view.iterations[1].model_text == ""


def test_after_an_escalation_the_header_names_the_stronger_model() -> None:
    restart = StrategyChanged(ts=4.0, n=3, kind="restart", reason="stalled")
    escalate = StrategyChanged(ts=4.1, n=4, kind="escalate", reason="last", model="openai/big")
    assert view_after(restart).model == "m"
    assert view_after(restart, escalate).model == "openai/big"
