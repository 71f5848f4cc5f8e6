"""litellm, imported once and lazily: importing it costs ~10 s of CPU here, fetches price maps
from the network unless told not to, and leaves ~400k objects for the garbage collector. Also
the provider part of a model name, which needs litellm's own table for bare names.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import re
import threading
from collections.abc import Iterator
from types import ModuleType

from engine.text.redact import redact_record

log = logging.getLogger(__name__)

_litellm: ModuleType | None = None
_import_lock = threading.Lock()


def import_litellm() -> ModuleType:
    """The litellm module, imported once (seconds of CPU: call it off the UI thread)."""
    global _litellm
    with _import_lock:
        if _litellm is None:
            # litellm fetches price maps and header configs from GitHub unless told not to.
            os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
            os.environ.setdefault("LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS", "True")
            os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
            # In its default DEV mode litellm loads the working directory's `.env` into the
            # environment on import: a repository's `.env` with OPENAI_API_BASE would route the
            # user's key to its server (and FIXLOOP_* would set restricted settings). Only the
            # user's own environment counts.
            os.environ["LITELLM_MODE"] = "PRODUCTION"
            with _frozen_after():
                import litellm

                litellm.suppress_debug_info = True
                litellm.telemetry = False
                _quiet_litellm_loggers()
                _warm_tokenizers(litellm)
            _litellm = litellm
        return _litellm


@contextlib.contextmanager
def _frozen_after() -> Iterator[None]:
    """No garbage collection during the block; what it created is then left out of later ones.

    Importing litellm creates ~400k long-lived objects. Each full pass of the collector over
    them held the GIL for 90-240 ms, in whichever thread triggered it: the app's longest UI
    stalls. Frozen objects are never traversed again (their garbage, if any, is a one-off).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def _quiet_litellm_loggers() -> None:
    """litellm prints through its own stderr handler; hand its records to the app's logging."""
    for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy"):
        logger = logging.getLogger(name)
        for handler in list(logger.handlers):
            logger.removeHandler(handler)
        logger.setLevel(logging.WARNING)
        logger.propagate = True
        logger.addFilter(redact_record)


def _warm_tokenizers(litellm: ModuleType) -> None:
    """Load tiktoken's encodings here, off the event loop.

    Otherwise the first acompletion of each encoding family spends ~0.7 s of CPU loading one
    on the loop, inside litellm's own response-cost bookkeeping.
    """
    for model in ("gpt-3.5-turbo", "gpt-4o"):  # cl100k_base, o200k_base
        try:
            litellm.token_counter(model=model, text="warm up")
        except Exception:
            log.debug("could not preload the tokenizer for %s", model)


async def load_litellm() -> ModuleType:
    """The litellm module, imported on first use in a worker thread (it costs ~10 s of CPU)."""
    if _litellm is not None:
        return _litellm
    return await asyncio.to_thread(import_litellm)


def provider_of(model: str) -> str:
    """The provider part of a model name: "openai/gpt-4o" → "openai", "gpt-4o" → "openai"."""
    if "/" in model:
        return model.split("/", 1)[0]
    if _litellm is not None:
        try:
            return str(_litellm.get_llm_provider(model)[1])
        except Exception:
            pass
    return "openai" if re.match(r"(gpt-|chatgpt-|o\d)", model) else "unknown"
