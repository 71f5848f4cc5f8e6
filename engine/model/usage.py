"""What a model call cost: the tokens the server counted (litellm's tokenizer's estimate when
it sent none), shared out among the answers of one request, and their price in USD."""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType
from typing import Any

from engine.feedback.tokens import approximate_tokens
from engine.model.types import Message


def counted(
    litellm: ModuleType,
    model: str,
    messages: Sequence[Message],
    reported: Any,
    texts: Sequence[str],
) -> tuple[int, list[int]]:
    """(prompt tokens, completion tokens of each answer) of one request. `reported` is the
    server's usage, or None: then both are estimated. Several answers share the completion
    tokens the server counted in proportion to their lengths."""
    if reported is None:
        dumped = [message.model_dump() for message in messages]
        prompt = count_tokens(litellm, model, messages=dumped)
        return prompt, [count_tokens(litellm, model, text=text) for text in texts]
    completion = int(reported.completion_tokens or 0)
    shares = shared_out(completion, [approximate_tokens(text) for text in texts])
    return int(reported.prompt_tokens or 0), shares


def count_tokens(litellm: ModuleType, model: str, **what: Any) -> int:
    try:
        return int(litellm.token_counter(model=model, **what))
    except Exception:  # unknown tokenizer: the packet cap's stated approximation
        return max(1, approximate_tokens(str(what.get("text") or what.get("messages") or "")))


def cost_usd(litellm: ModuleType, model: str, prompt_tokens: int, completion_tokens: int) -> float:
    """USD from litellm's price map; 0.0 for models it has no price for (local, self-hosted)."""
    try:
        response = litellm.ModelResponse(
            model=model,
            usage=litellm.Usage(
                prompt_tokens=prompt_tokens,
                completion_tokens=completion_tokens,
                total_tokens=prompt_tokens + completion_tokens,
            ),
        )
        return float(litellm.completion_cost(completion_response=response, model=model) or 0.0)
    except Exception:
        return 0.0


def shared_out(total: int, weights: Sequence[int]) -> list[int]:
    """`total` split in proportion to `weights` (evenly if they are all 0), in whole numbers
    that add up to it."""
    if not weights:
        return []
    if not any(weights):
        weights = [1] * len(weights)
    shares = [total * weight // sum(weights) for weight in weights]
    shares[-1] += total - sum(shares)
    return shares
