"""An answer's text as it streams, turned into `AnswerStreamed` pieces for a screen: each
request gets its own count of tokens (`StreamTokens`) and its own clock."""

from __future__ import annotations

import time
from collections.abc import Callable

from engine.model.usage import StreamTokens
from engine.run.events import AnswerStreamed

# Where an answer's pieces go (the app's gate posts them to the screen); None: nowhere.
OnPiece = Callable[[AnswerStreamed], None]


def streamed_to(
    on_piece: OnPiece | None, n: int, candidate: int, model: str
) -> Callable[[str], None] | None:
    """The `on_text` of one request: each piece of text counted and sent on as data, with
    its candidate (0: the iteration's only answer) and its time since the first piece."""
    if on_piece is None:
        return None
    tokens = StreamTokens(model)
    first: float | None = None

    def on_text(text: str) -> None:
        nonlocal first
        now = time.monotonic()
        first = now if first is None else first
        so_far = tokens.add(text)
        on_piece(
            AnswerStreamed(n=n, candidate=candidate, text=text, tokens=so_far, seconds=now - first)
        )

    return on_text
