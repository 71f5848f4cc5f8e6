"""Whether a model can be called at all, asked before a run creates anything: a known provider
and its key in the environment, by litellm's own validation. Problems are one line with the fix.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping

from engine.errors import ConfigError

EXAMPLE_MODEL = "openai/gpt-4o-mini"

# The variables that hold a key for the most used providers (any one of them will do; none:
# a local server that needs no key). These answer without importing litellm, which costs
# seconds; every other name goes to litellm. tests/engine/test_preflight.py holds this table
# to litellm's `validate_environment`.
KNOWN_KEYS: Mapping[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "mistral": ("MISTRAL_API_KEY",),
    "groq": ("GROQ_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",),
    "xai": ("XAI_API_KEY",),
    "ollama": (),
    "ollama_chat": (),
    "hosted_vllm": (),
    "lm_studio": (),
}


def check_model(model: str, api_base: str | None = None) -> str | None:
    """None when `model` can be called from here; else one plain line that says the fix.

    The embedded model (`local/...`) needs no key. A provider in `KNOWN_KEYS` is checked
    without litellm; any other name is read by litellm (`get_llm_provider`, then
    `validate_environment`), which may take seconds the first time: call this off the UI
    thread. Of litellm's missing variables only API keys count: a base URL, a region or a
    cloud login can come from elsewhere. A value is never part of the line, only its name.
    """
    if model.startswith("local/"):
        return None
    provider = model.split("/", 1)[0] if "/" in model else None
    if provider is not None and provider in KNOWN_KEYS:
        return _missing_key(provider, model, KNOWN_KEYS[provider], api_base)
    return _ask_litellm(model, provider, api_base)


async def require_usable_model(model: str, api_base: str | None) -> None:
    """`check_model` off the event loop; a problem is a usage error, raised before a run
    creates its branch, run directory or sandbox."""
    if problem := await asyncio.to_thread(check_model, model, api_base):
        raise ConfigError(problem)


def _missing_key(
    provider: str,
    model: str,
    variables: tuple[str, ...],
    api_base: str | None,
) -> str | None:
    env = os.environ
    if not variables or any(env.get(name) for name in variables):
        return None
    names = " or ".join(variables)
    if any(name in env for name in variables):
        said = f"{names} is empty" if len(variables) == 1 else f"{names} are empty"
        return f"no API key for {provider} ({model}): {said}; set it to your key"
    where = f" (a local server at {api_base} takes any value)" if api_base else ""
    return f"no API key for {provider} ({model}): set {names}{where}"


def _ask_litellm(model: str, provider: str | None, api_base: str | None) -> str | None:
    from engine.model.litellm_module import import_litellm

    litellm = import_litellm()
    try:
        _, found, _, _ = litellm.get_llm_provider(model=model, api_base=api_base)
    except Exception:  # litellm's text names its docs; ours says what to type
        if provider is None:
            return (
                f"unknown model {model!r}: name its provider too, as in {EXAMPLE_MODEL}"
                " (any litellm model name)"
            )
        return (
            f"unknown model provider {provider!r} in {model!r}: use a litellm model name"
            f" such as {EXAMPLE_MODEL}"
        )
    try:
        missing = litellm.validate_environment(model=model, api_base=api_base)["missing_keys"]
    except Exception:  # no verdict from litellm: the first call will say what is wrong
        return None
    keys = tuple(name for name in missing if str(name).endswith("_API_KEY"))
    return _missing_key(str(found), model, keys, api_base) if keys else None
