"""The model client's retries as `ModelRetrying` events of the iteration under way, so the
header and the headless printer can say "retry 2/4 in 3 s" while the run waits."""

from __future__ import annotations

from collections.abc import Sequence

from engine.model.client import LiteLLMClient
from engine.model.types import ModelClient, Retry
from engine.run.events import BaseEvent, EventSink, ModelRequested, ModelRetrying
from engine.run.journal import Journal
from engine.run.run_directory import RunDirectory


class RetryReporter:
    """An EventSink that learns which iteration asks the model, and the client's `on_retry`."""

    def __init__(self, run_dir: RunDirectory, sinks: Sequence[EventSink]) -> None:
        self.journal = Journal(run_dir, sinks)
        self.n = 0

    def emit(self, event: BaseEvent) -> None:
        if isinstance(event, ModelRequested):
            self.n = event.n

    def __call__(self, retry: Retry) -> None:
        self.journal.emit(
            ModelRetrying(
                n=self.n,
                attempt=retry.attempt,
                max_attempts=retry.max_attempts,
                wait_s=round(retry.wait_s, 3),
                reason=retry.reason,
                streamed=retry.streamed,
            )
        )


def with_retry_events(
    client: ModelClient, run_dir: RunDirectory, sinks: Sequence[EventSink]
) -> list[EventSink]:
    """`sinks`, plus the reporter the client's retries go to (a client of ours only)."""
    if not isinstance(client, LiteLLMClient):
        return list(sinks)
    reporter = RetryReporter(run_dir, sinks)
    client.on_retry = reporter
    return [*sinks, reporter]
