"""A scripted OpenAI-compatible chat server on 127.0.0.1, for tests that need a real model endpoint.

A script is a list of steps, one consumed per request: `reply`, `replies` (several choices in
one answer, for a request's `n`), `status`, `hang`, `malformed`, `empty`, `truncated`; `held`
makes any step wait for a test's signal; `paced` streams an answer a piece at a time with a
pause before each, and `paused` streams part of it, the rest once a test says so. Of the
answers scripted, a request that asks for `n` > 1 takes the first `replies`, any other
request the first plain one (so concurrent requests get the same answers whatever their
order); failures go to whoever comes first. With no `replies` scripted, an `n` request gets a
plain `reply`: a server that ignores `n`. Runs at once (a batch) each get a script of their
own with `route`, chosen by what their prompt says.
Every request is recorded (path, headers, parsed JSON body, the route, the client's port) so
tests can assert exactly what the client sent and how often. Use the `model_server` fixture.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

import pytest

StepKind = Literal["reply", "status", "hang", "malformed"]


@dataclass(frozen=True)
class Step:
    """One scripted answer. Build it with the functions below, not by hand."""

    kind: StepKind
    text: str = ""
    finish_reason: str = "stop"
    usage: dict[str, int] | None = None
    send_usage: bool = True
    code: int = 200
    body: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    until: threading.Event | None = None  # held: answered once this is set
    more: tuple[tuple[str, str], ...] = ()  # `replies`: choices 1, 2, ... (text, finish_reason)
    pace_s: float = 0.0  # streamed: the pause before each piece of text
    pause_after: int = 0  # streamed: this many pieces of each choice, then wait for `resume`
    resume: threading.Event | None = None


def reply(
    text: str,
    finish_reason: str = "stop",
    usage: dict[str, int] | None = None,
    *,
    send_usage: bool = True,
) -> Step:
    """A normal answer (streamed as SSE when the request asks for it).

    `usage` defaults to a word count; `send_usage=False` leaves usage out, like servers that
    ignore `stream_options`.
    """
    return Step("reply", text=text, finish_reason=finish_reason, usage=usage, send_usage=send_usage)


def replies(
    *texts: str, finish_reasons: tuple[str, ...] = (), usage: dict[str, int] | None = None
) -> Step:
    """One answer with a choice per text, as a server that honours `n` sends (never more
    choices than the request's `n`). `finish_reasons`, when given, is one per text; `usage`
    defaults to word counts, the prompt counted once."""
    finish = finish_reasons or ("stop",) * len(texts)
    (text, finish_reason), *rest = zip(texts, finish, strict=True)
    return Step("reply", text=text, finish_reason=finish_reason, usage=usage, more=tuple(rest))


def status(code: int, body: str | None = None, headers: dict[str, str] | None = None) -> Step:
    """An HTTP error with an OpenAI-style error body unless `body` is given."""
    if body is None:
        kind = "rate_limit_error" if code == 429 else "api_error"
        body = json.dumps({"error": {"message": f"scripted {code}", "type": kind, "code": code}})
    return Step("status", code=code, body=body, headers=headers or {})


def hang(seconds: float = 30.0) -> Step:
    """Accept the request and send nothing for `seconds` (or until the server stops)."""
    return Step("hang", seconds=seconds)


def malformed() -> Step:
    """200 OK whose body is not JSON (or, when streaming, SSE whose data is not JSON)."""
    return Step("malformed")


def empty() -> Step:
    """200 OK with an empty answer."""
    return Step("reply", text="")


def truncated(text: str) -> Step:
    """An answer cut off by the token limit (finish_reason "length")."""
    return Step("reply", text=text, finish_reason="length")


def held(step: Step, until: threading.Event) -> Step:
    """`step`, answered only once `until` is set (or the server stops): a run kept busy while
    a test does something to it."""
    return replace(step, until=until)


def paced(step: Step, seconds: float) -> Step:
    """`step`, streamed a piece (a word) at a time with `seconds` before each: a model that
    writes slowly."""
    return replace(step, pace_s=seconds)


def paused(step: Step, after: int, until: threading.Event) -> Step:
    """`step`, streamed: the first `after` pieces of each choice, then the rest only once
    `until` is set (or the server stops): an answer caught while it is being written."""
    return replace(step, pause_after=after, resume=until)


@dataclass(frozen=True)
class RecordedRequest:
    path: str
    headers: dict[str, str]  # names lower-cased: "authorization"
    body: dict[str, Any]
    route: str | None = None  # the route key its prompt matched, if any
    client_port: int = 0  # the client's side of the connection: which process asked


class ScriptedModelServer:
    """Real HTTP on a free port, in a background thread. Unscripted requests get a 500."""

    def __init__(self, port: int = 0) -> None:
        """On `port` (0: a free one); a test that stopped a server starts another on its
        port, as a server that comes back."""
        self.requests: list[RecordedRequest] = []
        self._steps: list[Step] = []
        self._routes: dict[str, list[Step]] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd = _QuietServer(("127.0.0.1", port), _handler_for(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """What an OpenAI client takes as its base URL (`api_base`)."""
        return self.url + "/v1"

    @property
    def count(self) -> int:
        return len(self.requests)

    def script(self, *steps: Step) -> None:
        with self._lock:
            self._steps.extend(steps)

    def route(self, key: str, *steps: Step) -> None:
        """Requests whose messages contain `key` take these steps in order (and only these:
        unscripted, a 500), whatever other runs ask meanwhile; the rest take `script`'s."""
        with self._lock:
            self._routes.setdefault(key, []).extend(steps)

    def routed(self, key: str) -> list[RecordedRequest]:
        return [request for request in self.requests if request.route == key]

    def start(self) -> ScriptedModelServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # releases hanging handlers
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def _next(self, request: RecordedRequest) -> Step:
        text = "\n".join(str(m.get("content", "")) for m in request.body.get("messages", []))
        with self._lock:
            key = next((key for key in self._routes if key in text), None)
            self.requests.append(replace(request, route=key))
            steps = self._steps if key is None else self._routes[key]
            if not steps:
                return status(500, f"script exhausted ({key or 'common'})")
            several = int(request.body.get("n") or 1) > 1
            fitting = (
                i
                for i, step in enumerate(steps)
                if step.kind != "reply" or bool(step.more) == several
            )
            return steps.pop(next(fitting, 0))


class _QuietServer(ThreadingHTTPServer):
    """A client that went away mid-answer (a test killed it) is no error of the server's."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def _handler_for(server: ScriptedModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
            pass

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
                self._send(404, "application/json", b'{"error": {"message": "no such route"}}')
                return
            body = json.loads(raw or b"{}")
            headers = {k.lower(): v for k, v in self.headers.items()}
            port = int(self.client_address[1])
            step = server._next(RecordedRequest(self.path, headers, body, client_port=port))
            if step.until is not None:
                while not (step.until.is_set() or server._stopping.is_set()):
                    step.until.wait(0.1)
            if step.kind == "hang":
                server._stopping.wait(step.seconds)
                self.close_connection = True
            elif step.kind == "status":
                self._send(step.code, "application/json", step.body.encode(), step.headers)
            elif body.get("stream"):
                self._stream(step, body)
            elif step.kind == "malformed":
                self._send(200, "application/json", b"<html>this is not json")
            else:
                self._send(200, "application/json", json.dumps(_completion(step, body)).encode())

        def _send(
            self, code: int, ctype: str, data: bytes, headers: dict[str, str] | None = None
        ) -> None:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def _stream(self, step: Step, body: dict[str, Any]) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.end_headers()  # no Content-Length: the body ends when the connection closes
            self.close_connection = True
            if step.kind == "malformed":
                self.wfile.write(b"data: {this is not json\n\n")
                return
            for chunk in _chunks(step, body):
                if chunk is PAUSE:
                    assert step.resume is not None
                    while not (step.resume.is_set() or server._stopping.is_set()):
                        step.resume.wait(0.1)
                    continue
                if step.pace_s and _has_text(chunk):
                    server._stopping.wait(step.pace_s)
                self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
                self.wfile.flush()
            self.wfile.write(b"data: [DONE]\n\n")

    return Handler


def _choices(step: Step, body: dict[str, Any]) -> list[tuple[str, str]]:
    """(text, finish_reason) of each choice the answer holds: one, or `replies`' up to `n`."""
    return [(step.text, step.finish_reason), *step.more][: max(1, int(body.get("n") or 1))]


def _usage(step: Step, body: dict[str, Any]) -> dict[str, int]:
    if step.usage is not None:
        return step.usage
    prompt = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
    completion = sum(len(text.split()) for text, _ in _choices(step, body))
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _envelope(body: dict[str, Any], obj: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-scripted",
        "object": obj,
        "created": int(time.time()),
        "model": body.get("model", "scripted"),
    }


def _completion(step: Step, body: dict[str, Any]) -> dict[str, Any]:
    choices = [
        {"index": i, "message": {"role": "assistant", "content": text}, "finish_reason": finish}
        for i, (text, finish) in enumerate(_choices(step, body))
    ]
    usage = {"usage": _usage(step, body)} if step.send_usage else {}
    return {**_envelope(body, "chat.completion"), "choices": choices, **usage}


# Between two chunks of a `paused` answer: where it waits for the test.
PAUSE: dict[str, Any] = {}


def _has_text(chunk: dict[str, Any]) -> bool:
    return any(choice["delta"].get("content") for choice in chunk.get("choices", ()))


def _chunks(step: Step, body: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Each choice's role first, then the texts in small pieces (words), the choices taking
    turns as a server decoding them together sends them, each choice's finish after its last
    piece; usage last, if asked. A `paused` answer yields PAUSE after `pause_after` turns."""
    env = _envelope(body, "chat.completion.chunk")

    def chunk(i: int, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**env, "choices": [{"index": i, "delta": delta, "finish_reason": finish}]}

    choices = _choices(step, body)
    pieces = [_pieces(text) for text, _ in choices]
    for i in range(len(choices)):
        yield chunk(i, {"role": "assistant", "content": ""})
    for turn in range(max(map(len, pieces), default=0)):
        if step.resume is not None and turn == step.pause_after:
            yield PAUSE
        for i, (text_pieces, (_, finish)) in enumerate(zip(pieces, choices, strict=True)):
            if turn < len(text_pieces):
                yield chunk(i, {"content": text_pieces[turn]})
            if turn == len(text_pieces) - 1:
                yield chunk(i, {}, finish)
    for i, (text_pieces, (_, finish)) in enumerate(zip(pieces, choices, strict=True)):
        if not text_pieces:  # an empty answer: its finish alone
            yield chunk(i, {}, finish)
    if step.send_usage and (body.get("stream_options") or {}).get("include_usage"):
        yield {**env, "choices": [], "usage": _usage(step, body)}


def _pieces(text: str) -> list[str]:
    """Split so that "".join(pieces) == text: each piece is a word with its trailing spaces."""
    pieces: list[str] = []
    start = 0
    for i in range(1, len(text)):
        if text[i - 1].isspace() and not text[i].isspace():
            pieces.append(text[start:i])
            start = i
    if text:
        pieces.append(text[start:])
    return pieces


@pytest.fixture
def model_server() -> Iterator[ScriptedModelServer]:
    """A running scripted server; script it with `model_server.script(reply("..."), ...)`."""
    server = ScriptedModelServer().start()
    try:
        yield server
    finally:
        server.stop()
