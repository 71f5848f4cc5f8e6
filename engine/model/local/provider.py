"""litellm's door to the embedded model: `local/<name>` registered as a custom provider whose
async completion and streaming come from the in-process server.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.errors import LocalModelError
from engine.model.litellm_module import import_litellm
from engine.model.local import EMBEDDED_MODEL, PROVIDER, server, weights

if TYPE_CHECKING:
    from litellm.types.llms.openai import ChatCompletionUsageBlock
    from litellm.types.utils import GenericStreamingChunk

DEFAULT_MAX_TOKENS = 1024
# Sampling above temperature 0: the usual nucleus settings, so that a 1.5B model's candidates
# differ without wandering into its long tail of unlikely tokens.
TOP_K = 40
TOP_P = 0.95

_models: dict[str, Path] = {}  # "qwen2.5-coder-1.5b" -> GGUF path
_registry_lock = threading.Lock()
_model_path_override: Path | None = None
_prompt_cache = True
_answers_together = True


def set_prompt_cache(on: bool, *, answers_together: bool | None = None) -> None:
    """Reuse what was decoded (the default), or read every prompt afresh (the bench's "off"
    arm, bench/prompt_cache.py).

    On: each slot keeps its last prompt decoded and a request continues from the longest
    prefix it shares with it (llama.cpp's `cache_prompt`; the prompt's stable part, system
    prompt and files, comes first), and a request's `n` answers come from one decoded prompt
    (`n_cmpl`; `answers_together=False` asks each on its own, to measure that part alone).
    This is no setting a project or a person can change: only the prompt's own tokens are
    reused, so a hostile repository or answer can put nothing in the cache that the same
    prompt read afresh would not, and nothing of it leaves the process."""
    global _prompt_cache, _answers_together
    _prompt_cache = on
    _answers_together = on if answers_together is None else answers_together and on


def shares_prompts() -> bool:
    """Whether a request for `n` answers decodes its prompt once for all of them."""
    return _answers_together


def default_model() -> str | None:
    """The embedded model's name when its extra is installed, else None."""
    return EMBEDDED_MODEL if weights.installed() else None


def set_model_path(path: Path | None) -> None:
    """Use this GGUF file (the CLI's `--model-path`) for the next `ensure_registered`."""
    global _model_path_override
    _model_path_override = path


def ensure_registered(model: str, model_path: Path | None = None) -> None:
    """Make litellm answer `model` ("local/<name>") from a GGUF file in this process.

    Idempotent and cheap once done. The embedded model is joined from its parts on first use
    (3-15 s of disk work: call this off the event loop); any other name needs `model_path`
    (or `set_model_path`). The model itself loads on its first completion.
    """
    provider, _, name = model.partition("/")
    if provider != PROVIDER or not name:
        raise LocalModelError(
            f"{model!r} is not a local model: local models are named local/<name>"
        )
    path = model_path or _model_path_override
    if path is None:
        if model != EMBEDDED_MODEL:
            raise LocalModelError(
                f"{model} needs a GGUF file: pass --model-path /path/to/model.gguf "
                f"(or use the embedded {EMBEDDED_MODEL})"
            )
        path = weights.model_file()
    else:
        path = _checked_gguf(Path(path))
    litellm = import_litellm()
    with _registry_lock:
        if _models.get(name) == path:
            return
        _models[name] = path
        if not any(item.get("provider") == PROVIDER for item in litellm.custom_provider_map):
            litellm.custom_provider_map.append(
                {"provider": PROVIDER, "custom_handler": make_provider()}
            )
        # Free and bounded by the context window; every cost field is set so that litellm
        # neither warns about missing ones nor guesses.
        litellm.register_model(
            {
                model: {
                    "litellm_provider": PROVIDER,
                    "mode": "chat",
                    "max_input_tokens": server.N_CTX,  # per generation (slot)
                    "max_output_tokens": server.N_CTX,
                    "max_tokens": server.N_CTX,
                    "input_cost_per_token": 0.0,
                    "output_cost_per_token": 0.0,
                    "cache_creation_input_token_cost": 0.0,
                    "cache_read_input_token_cost": 0.0,
                }
            }
        )


def preload(model: str = EMBEDDED_MODEL) -> float:
    """Load a registered model now rather than on its first completion; returns the seconds
    it took (0.0 if it was loaded). Blocking, and ~1-2 s of it holds the GIL."""
    return _loaded_model(model.partition("/")[2]).preload()


def _checked_gguf(path: Path) -> Path:
    try:
        with path.open("rb") as f:
            magic = f.read(4)
    except OSError as exc:
        raise LocalModelError(f"cannot read the model file {path}: {exc.strerror}") from exc
    if magic != b"GGUF":
        raise LocalModelError(f"{path} is not a GGUF model file (it does not start with GGUF)")
    return path.resolve()


def _loaded_model(name: str) -> server.LoadedModel:
    with _registry_lock:
        path = _models.get(name)
    if path is None:
        raise LocalModelError(
            f"local/{name} is not registered: "
            "call engine.model.local.provider.ensure_registered first"
        )
    return server.loaded_model(path)


# --- litellm's request and answer, as llama.cpp's -----------------------------------------------


def _request(messages: list[Any], optional_params: dict[str, Any]) -> dict[str, Any]:
    """llama.cpp's request body; its sampling is per request (the slot's own sampler)."""
    request: dict[str, Any] = {
        "messages": [_plain_message(m) for m in messages],
        "max_tokens": optional_params.get("max_tokens")
        or optional_params.get("max_completion_tokens")
        or DEFAULT_MAX_TOKENS,
        "stream": True,
        "stream_options": {"include_usage": True},
        "cache_prompt": _prompt_cache,
    }
    answers = int(optional_params.get("n") or 1)
    if answers > 1 and _answers_together:  # fewer than asked: the client asks for the rest
        request["n_cmpl"] = min(answers, server.SLOTS)
    request.update(_sampling(optional_params))
    if optional_params.get("stop") is not None:
        request["stop"] = optional_params["stop"]
    return request


def _sampling(optional_params: dict[str, Any]) -> dict[str, Any]:
    """Temperature 0 (or none): greedy, the same answer every time. Above 0: top-k/top-p
    sampling from `seed` (a fresh random one when None), so one seed repeats its answer."""
    temperature = float(optional_params.get("temperature") or 0.0)
    if temperature <= 0.0:
        return {"temperature": 0.0, "top_k": 1}
    sampling: dict[str, Any] = {
        "temperature": temperature,
        "top_k": optional_params.get("top_k") or TOP_K,
        "top_p": optional_params.get("top_p") or TOP_P,
    }
    if optional_params.get("seed") is not None:
        sampling["seed"] = int(optional_params["seed"])
    return sampling


def _plain_message(message: Any) -> dict[str, Any]:
    """A chat message as the JSON llama.cpp reads (litellm may hand over pydantic objects)."""
    items = message.items() if isinstance(message, dict) else dict(message).items()
    return {key: value for key, value in items if value is not None}


def _seconds(timeout: Any) -> float | None:
    """litellm's timeout (a float or an httpx.Timeout) as one number of seconds, or None."""
    if timeout is None:
        return None
    if isinstance(timeout, int | float):
        return float(timeout)
    read = getattr(timeout, "read", None)
    return float(read) if read is not None else None


def _achunks(name: str, request: dict[str, Any], timeout: Any) -> AsyncIterator[dict[str, Any]]:
    return server.achunks(_loaded_model(name), name, request, _seconds(timeout))


@dataclass
class _GatheredAnswer:
    """Whole answers gathered from stream chunks, for the non-streaming call: one per choice
    index (several when the request asked for `n`)."""

    pieces: dict[int, list[str]] = field(default_factory=dict)
    finish_reasons: dict[int, str] = field(default_factory=dict)
    usage: ChatCompletionUsageBlock | None = None

    def add(self, chunk: dict[str, Any]) -> None:
        for choice in chunk.get("choices") or [{}]:
            piece = _stream_chunk({"choices": [choice]})
            if piece is not None:
                index = int(choice.get("index") or 0)
                self.pieces.setdefault(index, []).append(piece["text"])
                if piece["finish_reason"]:
                    self.finish_reasons[index] = piece["finish_reason"]
        if chunk.get("usage") and (piece := _stream_chunk({"usage": chunk["usage"]})):
            self.usage = piece["usage"] or self.usage

    def fill(self, model_response: Any, name: str) -> Any:
        litellm = import_litellm()
        indexes = sorted(self.pieces) or [0]
        first = model_response.choices[0]
        first.message.content = "".join(self.pieces.get(indexes[0], []))
        first.finish_reason = self.finish_reasons.get(indexes[0], "stop")
        for index in indexes[1:]:
            model_response.choices.append(
                litellm.Choices(
                    index=index,
                    message=litellm.Message(content="".join(self.pieces[index]), role="assistant"),
                    finish_reason=self.finish_reasons.get(index, "stop"),
                )
            )
        model_response.model = f"{PROVIDER}/{name}"
        if self.usage is not None:
            model_response.usage = litellm.Usage(**self.usage)
        return model_response


def _stream_chunk(chunk: dict[str, Any]) -> GenericStreamingChunk | None:
    """llama.cpp's OpenAI-style chunk as litellm's generic one; None when it carries nothing."""
    choices = chunk.get("choices") or [{}]
    text = (choices[0].get("delta") or {}).get("content") or ""
    finish_reason = choices[0].get("finish_reason")
    usage: ChatCompletionUsageBlock | None = None
    if chunk.get("usage"):
        prompt = int(chunk["usage"].get("prompt_tokens", 0))
        completion = int(chunk["usage"].get("completion_tokens", 0))
        usage = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
    if not (text or finish_reason or usage):
        return None
    return {
        "text": text,
        "tool_use": None,
        "is_finished": finish_reason is not None,
        "finish_reason": finish_reason or "",
        "usage": usage,
        "index": 0,
    }


# --- the provider --------------------------------------------------------------------------------


def _make_provider_class() -> type:
    from litellm.llms.custom_llm import CustomLLM

    # litellm passes `timeout` by keyword, hence the names ASYNC109 dislikes. Only the async
    # calls are served: the model client (engine/model/client.py) uses litellm.acompletion.
    class _LocalProvider(CustomLLM):
        """litellm's door to the in-process models: `local/<name>` -> `server.achunks`."""

        async def acompletion(  # type: ignore[override]
            self,
            model: str,
            messages: list[Any],
            model_response: Any,
            optional_params: dict[str, Any],
            timeout: Any = None,  # noqa: ASYNC109
            **_: Any,
        ) -> Any:
            answer = _GatheredAnswer()
            async for chunk in _achunks(model, _request(messages, optional_params), timeout):
                answer.add(chunk)
            return answer.fill(model_response, model)

        async def astreaming(  # type: ignore[override]
            self,
            model: str,
            messages: list[Any],
            optional_params: dict[str, Any],
            timeout: Any = None,  # noqa: ASYNC109
            **_: Any,
        ) -> AsyncIterator[GenericStreamingChunk]:
            async for chunk in _achunks(model, _request(messages, optional_params), timeout):
                if (piece := _stream_chunk(chunk)) is not None:
                    yield piece

    return _LocalProvider


def make_provider() -> Any:
    """A litellm `CustomLLM` serving `local/<name>`; built lazily so litellm loads lazily."""
    global _provider_class
    if _provider_class is None:
        _provider_class = _make_provider_class()
    return _provider_class()


_provider_class: type | None = None
