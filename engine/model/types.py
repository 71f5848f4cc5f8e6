"""What a model call is made of and returns, without the client that makes it: the messages,
an answer (`Completion`) and its `Usage`, a retry's notice, the error of a call that failed
for good, and the protocols the loop asks a model through (tests swap in fakes)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, field_validator

from engine.errors import ModelError
from engine.text.untrusted import valid_unicode


class Message(BaseModel):
    role: Literal["system", "user", "assistant"]
    content: str


class Usage(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float


class Completion(BaseModel):
    text: str
    usage: Usage
    finish_reason: str | None
    model: str
    attempts: int
    duration_s: float

    @field_validator("text")
    @classmethod
    def _encodable(cls, text: str) -> str:
        """Whatever a server sent, the answer can be written, logged and parsed: a lone
        surrogate (an escape the server's JSON decoded) is U+FFFD from here on."""
        return valid_unicode(text)


@dataclass(frozen=True)
class Retry:
    """A failed attempt that will be made again: what a front end shows while it waits."""

    attempt: int  # the attempt about to be made: 2 is the first retry
    max_attempts: int
    wait_s: float
    reason: str  # a few words: "connection refused", "HTTP 503 Service Unavailable"
    streamed: bool = True  # the retried request streams its text (the answer shown as it comes)


class ModelClient(Protocol):
    """Anything that turns a conversation into one answer (tests swap in fakes here)."""

    model: str

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        on_text: Callable[[str], None] | None = None,
        temperature: float | None = None,
        seed: int | None = None,
    ) -> Completion:
        """One answer; `temperature` (None: the client's own) and `seed` vary it, for the
        candidates of one iteration and for a re-asked no-op answer."""
        ...


@runtime_checkable
class SamplesTogether(Protocol):
    """A client that can ask for several sampled answers in one request (a provider's `n`),
    so that their prompt is sent, and billed, once."""

    async def samples_together(self) -> bool:
        """Whether `sample` may ask this model for several answers at once."""
        ...

    async def sample(
        self,
        messages: Sequence[Message],
        n: int,
        *,
        temperature: float,
        seed: int,
        on_text: Callable[[int, str], None] | None = None,
    ) -> list[Completion | ModelError]:
        """Up to `n` answers from one request (fewer: the server ignores `n`), each a
        Completion or the ModelError of a choice that came back truncated or empty; where
        the client can, each piece of text is told to `on_text` with its choice's index (from
        0) as it streams."""
        ...
