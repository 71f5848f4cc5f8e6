"""What went wrong with a model call, in the user's words, and whether it is worth another
attempt: litellm's and the OpenAI SDK's exceptions, read by name, status code and headers.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from http import HTTPStatus

from sandbox.errors import FixloopError


@dataclass(frozen=True)
class AttemptFailure:
    """Why one attempt failed, and whether another one could go better."""

    cause: str
    retryable: bool
    retry_after_s: float | None = None
    brief: str = ""  # a few words for a header while the next attempt waits ("HTTP 503")

    @property
    def said_briefly(self) -> str:
        return self.brief or self.cause


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not s for s in seen):
        seen.append(current)
        original = getattr(current, "original_exception", None)
        nxt = original if isinstance(original, BaseException) else None
        current = nxt or current.__cause__ or current.__context__
    return seen


def _named(exc: BaseException, *names: str) -> bool:
    return any(cls.__name__ in names for cls in type(exc).__mro__)


# litellm's pointers to its own documentation ("Learn more: https://docs.litellm.ai/...").
_DOCS_LINK = re.compile(r"\s*(?:(?:learn more|see|visit|docs?)\s*(?:at|:)?\s*)?https?://\S+", re.I)


def _detail(exc: BaseException) -> str:
    """The server's words without litellm's "litellm.XError: XError: OpenAIException - " prefix
    or links to documentation."""
    text = str(getattr(exc, "message", None) or exc)
    prefix = re.compile(r"^\s*(?:[\w.]+(?:Error|Exception|Timeout))\s*[:-]\s*")
    while (stripped := prefix.sub("", text, count=1)) != text:
        text = stripped
    text = " ".join(_DOCS_LINK.sub("", text).split())
    return text[:300] + ("…" if len(text) > 300 else "")


def _http(code: int) -> str:
    try:
        return f"HTTP {code} {HTTPStatus(code).phrase}"
    except ValueError:
        return f"HTTP {code}"


def _retry_after(exc: BaseException) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None) or getattr(exc, "litellm_response_headers", None)
    if not headers:
        return None
    try:
        if (millis := headers.get("retry-after-ms")) is not None:
            return max(0.0, float(millis) / 1000)
        if (value := headers.get("retry-after")) is None:
            return None
        try:
            return max(0.0, float(value))
        except ValueError:
            return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError, AttributeError):
        return None


def classify_failure(exc: BaseException, *, timeout_s: float, key_variable: str) -> AttemptFailure:
    """What a failed model call's exception means to the user, and whether to try again."""
    chain = _chain(exc)
    # Our own failure raised under litellm (e.g. by the local model's provider) already says
    # what to do; litellm would dress it up as a connection or stream error.
    if own := next((e for e in chain if isinstance(e, FixloopError)), None):
        return AttemptFailure(str(own), retryable=False)
    if isinstance(exc, TimeoutError) or _named(exc, "Timeout", "APITimeoutError"):
        waited = f"no answer within {timeout_s:g} s"
        return AttemptFailure(f"{waited} (timeout)", retryable=True, brief=waited)
    if any(_named(e, "JSONDecodeError", "MidStreamFallbackError") for e in chain):
        detail = next((str(e) for e in chain if _named(e, "JSONDecodeError")), _detail(exc))
        return AttemptFailure(
            f"malformed response from the server ({detail})", True, brief="bad answer"
        )
    if any(isinstance(e, ConnectionError) or _named(e, "APIConnectionError") for e in chain):
        refused = any(isinstance(e, ConnectionRefusedError) for e in chain)
        brief = "connection refused" if refused else "connection failed"
        return AttemptFailure(
            f"connection failed ({_detail(chain[-1])})", retryable=True, brief=brief
        )
    if cannot := _cannot_succeed(chain, key_variable):
        return cannot
    code = getattr(exc, "status_code", None)
    if not isinstance(code, int):
        return AttemptFailure(f"unexpected failure: {type(exc).__name__}: {_detail(exc)}", False)
    detail = _detail(exc)
    said = f": {detail}" if detail and not detail.startswith("Error code") else ""
    if code == 429:
        limited = "rate limited"
        return AttemptFailure(f"{limited} ({_http(code)}){said}", True, _retry_after(exc), limited)
    if code >= 500 or code == 408:
        return AttemptFailure(f"{_http(code)}{said}", retryable=True, brief=_http(code))
    if code == 401:
        hint = f"check the API key variable ({key_variable})"
        return AttemptFailure(f"authentication failed: {hint} ({_http(code)})", retryable=False)
    if code == 403:
        hint = "the API key is not allowed to use this model"
        return AttemptFailure(f"permission denied: {hint} ({_http(code)})", retryable=False)
    if code == 404:
        hint = "check --model and --api-base"
        return AttemptFailure(f"unknown model or endpoint: {hint} ({_http(code)})", retryable=False)
    return AttemptFailure(f"bad request ({_http(code)}){said}", retryable=False)


def _cannot_succeed(chain: list[BaseException], key_variable: str) -> AttemptFailure | None:
    """Failures raised before any request left, which no retry can mend: no key, or a model
    name litellm cannot place. litellm reports the first as an HTTP 500."""
    for exc in chain:
        # The OpenAI SDK's own refusal to build a request is its base error itself; whatever
        # reached a server is a subclass (APIStatusError, APIConnectionError, ...).
        kind = type(exc)
        if (kind.__module__.split(".")[0], kind.__name__) != ("openai", "OpenAIError"):
            continue
        text = str(exc).lower()
        if "api_key" in text or "credentials" in text:
            return AttemptFailure(f"no API key: set {key_variable}", retryable=False)
        return AttemptFailure(f"the request could not be made: {_detail(exc)}", retryable=False)
    if any("LLM Provider NOT provided" in str(e) for e in chain):
        return AttemptFailure(
            "unknown model provider: use a litellm model name such as openai/gpt-4o-mini",
            retryable=False,
        )
    return None
