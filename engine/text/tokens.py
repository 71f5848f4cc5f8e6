"""Counting prompt tokens for the packet's cap.

With a model named and litellm already loaded, its tokenizer counts. Otherwise
a stated approximation: one token per three UTF-8 bytes, which over-counts
English and code for the tokenizers we know (they average 3.5–4.5 bytes per
token), so a packet under the cap by this measure is under it for real too.
"""

from __future__ import annotations

import math
import sys

BYTES_PER_TOKEN = 3


def approximate_tokens(text: str) -> int:
    return math.ceil(len(text.encode("utf-8")) / BYTES_PER_TOKEN)


def count_tokens(text: str, model: str | None = None) -> int:
    """Tokens of `text` for `model`; never imports litellm itself (it is slow to import)."""
    litellm = sys.modules.get("litellm")
    if model and litellm is not None:
        try:
            return int(litellm.token_counter(model=model, text=text))
        except Exception:  # an unknown model or tokenizer: fall back, never fail a packet
            pass
    return approximate_tokens(text)
