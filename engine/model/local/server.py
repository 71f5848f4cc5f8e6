"""The in-process llama.cpp server (xllamacpp) for one GGUF file: loaded on first use, up to
`SLOTS` generations decoded together as one batch, each stream handed from a worker thread to
an async reader.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.errors import LocalModelError
from engine.model.local import INSTALL_HINT, PROVIDER
from engine.model.local.weights import CHUNK

# Runtime settings measured on 2 cores (LOCAL_MODEL.md, bench/local_parallel.py). Greedy unless
# a request asks for a temperature, so answers are repeatable by default.
N_CTX = 4096  # each generation's own context window (a slot's)
SLOTS = 4  # generations decoded together: one batch reads the weights once for all of them
N_THREADS = 2
ABANDON_AFTER = 10.0  # seconds of unread chunks after which a generation stops
TIMINGS_KEPT = 512  # generations whose timings `timings_log` remembers


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
    read_prompt_tokens: int = 0  # decoded for this generation: not reused (prompt_n)
    prompt_read_seconds: float = 0.0  # decoding them (llama.cpp's prompt_ms)
    answers: int = 1  # completions from this one read of the prompt (a request's `n`)


class Slots:
    """The model's `SLOTS` slots, taken several at a time: a request for `n` answers decodes
    its prompt once and continues it in `n` slots (llama.cpp's `n_cmpl`), so it waits until
    `n` are free at once; taking them one by one could leave two such requests each holding
    part of what it needs, forever."""

    def __init__(self, count: int = SLOTS) -> None:
        self.count = count
        self.free = count
        self.changed = threading.Condition()

    @contextlib.contextmanager
    def taken(self, n: int = 1) -> Iterator[None]:
        n = min(max(n, 1), self.count)
        with self.changed:
            self.changed.wait_for(lambda: self.free >= n)
            self.free -= n
        try:
            yield
        finally:
            with self.changed:
                self.free += n
                self.changed.notify_all()


@dataclass
class LoadedModel:
    """One GGUF file: the in-process llama.cpp server, the lock that loads it once, and the
    slots its concurrent generations take (llama.cpp decodes them as one batch)."""

    path: Path
    lock: threading.Lock = field(default_factory=threading.Lock)  # guards `server`
    slots: Slots = field(default_factory=Slots)
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

    def preload(self) -> float:
        """Load now; the seconds it took (0.0 if it was loaded). Blocking, ~1-2 s of it
        holding the GIL."""
        with self.lock:
            if self.server is not None:
                return 0.0
            self.load()
            return self.load_seconds


def _read_through(path: Path) -> None:
    """Pull the file into the page cache while the GIL is free.

    xllamacpp.Server() holds the GIL for the whole load, freezing every Python thread
    (the TUI's event loop included); reading the file first leaves it only the CPU part.
    """
    buffer = bytearray(CHUNK)
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
    # One KV cache per slot (not unified), each N_CTX long: a long prompt in one slot never
    # takes room from another. ~115 MB per slot for this model.
    params.n_parallel = SLOTS
    params.kv_unified = False
    params.n_ctx = N_CTX * SLOTS
    params.cpuparams.n_threads = N_THREADS
    params.cpuparams_batch.n_threads = N_THREADS
    # The defaults for a request that names no sampling; provider.py sets it per request.
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


_loaded: dict[Path, LoadedModel] = {}
_loaded_lock = threading.Lock()
_last_timings: Timings | None = None
_timings_log: collections.deque[Timings] = collections.deque(maxlen=TIMINGS_KEPT)


def loaded_model(path: Path) -> LoadedModel:
    """The one `LoadedModel` of this file in this process (not loaded until first used)."""
    with _loaded_lock:
        model = _loaded.get(path)
        if model is None:
            model = _loaded[path] = LoadedModel(path)
        return model


def unload_all() -> None:
    """Free every loaded model (~2.2 GB each) once its running generations end; the next
    completion loads again."""
    with _loaded_lock:
        models = list(_loaded.values())
        _loaded.clear()
    for model in models:
        with model.lock:
            model.server = None


def last_timings() -> Timings | None:
    """Timings of the most recent finished local generation in this process."""
    return _last_timings


def timings_log() -> list[Timings]:
    """The timings of this process's most recent local generations (up to TIMINGS_KEPT),
    oldest first: what the bench sums into prompt-reading seconds and reused tokens."""
    return list(_timings_log)


# --- one generation ------------------------------------------------------------------------------

_workers: set[asyncio.Future[None]] = set()
_STARTED = object()  # the model is loaded and a slot is ours: timeouts start now
_DONE = object()


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


def _generate(model: LoadedModel, request: dict[str, Any], handoff: _Handoff) -> None:
    """Worker-thread body: one generation in one of the model's slots, each chunk handed over.

    The slot is taken here rather than left to llama.cpp's queue so that the idle timeout
    starts only once the generation really runs. llama.cpp swallows exceptions raised in the
    chunk callback (so `put` must not raise) and ends a generation when the callback returns
    True.
    """
    global _last_timings
    try:
        with model.slots.taken(answers_asked(request)):
            if handoff.stop.is_set():
                return
            with model.lock:
                was_loaded = model.server is not None
                server = model.load()
            handoff.emit(_STARTED)
            started = time.monotonic()
            last: dict[str, Any] = {}
            answers: set[int] = set()

            def on_chunk(chunk: Any) -> bool:
                if isinstance(chunk, dict):
                    if "timings" in chunk:
                        last.update(chunk)
                    answers.update(int(c.get("index") or 0) for c in chunk.get("choices") or ())
                handoff.emit(chunk)
                return handoff.abandoned()

            server.handle_chat_completions(request, on_chunk)
            if last:
                load = 0.0 if was_loaded else model.load_seconds
                _last_timings = _timings(last, load, time.monotonic() - started, len(answers))
                _timings_log.append(_last_timings)
    except BaseException as exc:
        handoff.emit(exc)
    finally:
        handoff.emit(_DONE)


def answers_asked(request: dict[str, Any]) -> int:
    """How many answers (slots) a request asks for: its `n_cmpl`, at most SLOTS."""
    return min(max(int(request.get("n_cmpl") or 1), 1), SLOTS)


def _timings(chunk: dict[str, Any], load_seconds: float, wall: float, answers: int = 1) -> Timings:
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
        read_prompt_tokens=int(t.get("prompt_n", 0)),
        prompt_read_seconds=float(t.get("prompt_ms", 0.0)) / 1000.0,
        answers=max(answers, 1),
    )


def _accept(name: str, item: object) -> dict[str, Any] | None:
    """A chunk to yield, None for a marker, or raise what the worker reported."""
    if isinstance(item, BaseException):
        raise item
    if isinstance(item, dict):
        _raise_if_error(name, item)
        return item
    return None


async def achunks(
    model: LoadedModel, name: str, request: dict[str, Any], idle_timeout: float | None
) -> AsyncIterator[dict[str, Any]]:
    """llama.cpp's OpenAI-style stream chunks for `request`, generated in a worker thread.

    `idle_timeout` bounds each wait for the next chunk once the model is loaded and ours (the
    prompt's reading is one such wait); leaving early (cancelled, closed, timed out) stops the
    generation at its next token. `name` names the model in errors.
    """
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[object] = asyncio.Queue()

    def put(item: object) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is listening
            loop.call_soon_threadsafe(queue.put_nowait, item)

    handoff = _Handoff(put)
    worker = asyncio.ensure_future(asyncio.to_thread(_generate, model, request, handoff))
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
        handoff.stop.set()  # the worker ends within one token and releases the model


# litellm is imported here only where a stream fails: we are called by litellm, so it is loaded.


def _raise_if_error(name: str, chunk: dict[str, Any]) -> None:
    error = chunk.get("error")
    if not error:
        return
    from litellm.exceptions import APIError, ContextWindowExceededError

    model = f"{PROVIDER}/{name}"
    message = str(error.get("message", error)) if isinstance(error, dict) else str(error)
    kind = error.get("type") if isinstance(error, dict) else None
    if kind == "exceed_context_size_error":
        raise ContextWindowExceededError(message=message, model=model, llm_provider=PROVIDER)
    raise APIError(status_code=500, message=message, llm_provider=PROVIDER, model=model)


def _timeout_error(name: str, wait: float | None) -> Exception:
    from litellm.exceptions import Timeout

    exc: Exception = Timeout(
        message=f"the local model produced nothing for {wait} s",
        model=f"{PROVIDER}/{name}",
        llm_provider=PROVIDER,
    )
    return exc
