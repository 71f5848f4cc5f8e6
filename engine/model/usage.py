"""What a model call cost: the tokens the server counted (litellm's tokenizer's estimate when
it sent none), shared out among the answers of one request, and their price in USD."""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

from engine.model.types import Message
from engine.text import tokens as budget
from engine.text.tokens import approximate_tokens


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


# The most characters counted again with each piece: a "word" longer (a model's line of
# 100,000 characters without a space) is settled where it stands, a token miscounted at most.
LONGEST_WORD = 200
# Where a word starts: the space before it, which a tokenizer puts in the word's token.
WORD_START = re.compile(r" (?=\S)")


class StreamTokens:
    """An answer's completion tokens counted as it streams, for the screen while it is
    written (the server's usage corrects the count once the answer ends). Each piece is
    counted once: the text up to where the last word starts is tokenized and added for good,
    and only the word still being written is counted again with the next piece (up to
    LONGEST_WORD characters of it), so a long answer is never tokenized whole. Tokenizers
    start a word's token at the space before it (not at a newline, which may end the token
    before it, nor inside a run of spaces, often one token): the sum is the whole text's count
    but for the odd token that spans such a space."""

    def __init__(self, model: str) -> None:
        self.model = model
        # Resolved at the first piece: the request that streams has loaded litellm by then.
        self._counter: Callable[[str], int] | None = None
        self._settled = 0  # tokens of the text before the word being written
        self._word = ""  # the text since the last word began, counted again with each piece
        self._said = 0

    def _count(self, text: str) -> int:
        if self._counter is None:
            self._counter = text_counter(self.model)
        return self._counter(text)

    def add(self, piece: str) -> int:
        """The answer's tokens so far, with `piece` added."""
        text = self._word + piece
        cut = max((found.start() for found in WORD_START.finditer(text)), default=-1)
        if len(text) - max(cut, 0) > LONGEST_WORD:  # an answer is hostile input: no quadratic
            cut = len(text)
        if cut > 0:
            self._settled += self._count(text[:cut])
            text = text[cut:]
        self._word = text
        # A word half written may be a token more than the whole word: the count never drops.
        self._said = max(self._said, self._settled + (self._count(text) if text else 0))
        return self._said


def text_counter(model: str) -> Callable[[str], int]:
    """How `model`'s tokens in a text are counted, by the tokenizer the run's prompt budgets
    use (`engine.text.tokens`: litellm's, once it is loaded; else their approximation).
    litellm's count function for the model is resolved once here: `token_counter` resolves it
    again on every call (~0.5 ms, a stream's every piece); where litellm has no such function
    (another version), `token_counter` it is."""
    litellm = sys.modules.get("litellm")
    utils = getattr(getattr(litellm, "litellm_core_utils", None), "token_counter", None)
    resolve = getattr(utils, "_get_count_function", None)
    if resolve is None:
        return functools.partial(_budget_count, model=model)
    try:
        count = resolve(model)
    except Exception:  # a model litellm cannot place: the budgets' own fallback
        return functools.partial(_budget_count, model=model)

    def counted(text: str) -> int:
        try:
            return int(count(text))
        except Exception:
            return approximate_tokens(text)

    return counted


def _budget_count(text: str, model: str) -> int:
    return budget.count_tokens(text, model)
