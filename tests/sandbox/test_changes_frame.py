"""The changes frame on the host: cut off the end of stdout, read as untrusted data."""

from __future__ import annotations

import base64
import json

from sandbox.changes_frame import StdoutWithChanges, read_changes
from sandbox.contract import FileChange
from sandbox.inside.changes import frame


def entry(path: str, content: bytes | None = b"x") -> dict[str, object]:
    encoded = None if content is None else base64.b64encode(content).decode()
    return {"path": path, "content": encoded, "executable": False}


def payload(*entries: dict[str, object]) -> bytes:
    return json.dumps({"truncated": False, "changes": list(entries)}).encode()


def test_the_frame_is_cut_off_and_the_output_kept_whole() -> None:
    stream = StdoutWithChanges(cap=4096, frame_cap=1024)
    body = payload(entry("a.py"))
    data = b"job output\n" * 300 + frame(body)
    for start in range(0, len(data), 7):
        stream.feed(data[start : start + 7])
    assert stream.take_frame() == body
    assert stream.text() == "job output\n" * 300


def test_output_without_a_frame_stays_output() -> None:
    stream = StdoutWithChanges(cap=4096, frame_cap=1024)
    stream.feed(b"killed before the frame\n")
    assert stream.take_frame() is None
    assert stream.text() == "killed before the frame\n"


def test_paths_out_of_the_workspace_make_the_frame_unreadable() -> None:
    for path in ("../etc/passwd", "/etc/passwd", "a/../../b", "a//b", "./a", ""):
        assert read_changes(payload(entry("ok.py"), entry(path)), []) == (None, False)


def test_excluded_names_are_dropped_whoever_sent_them() -> None:
    changes, truncated = read_changes(
        payload(entry("src/a.py"), entry(".git/config"), entry("src/__pycache__/a.pyc")),
        [".git", "__pycache__"],
    )
    assert changes == [FileChange(path="src/a.py", content=b"x")]
    assert truncated is False


def test_a_truncated_frame_carries_nothing() -> None:
    body = json.dumps({"truncated": True, "changes": [entry("a.py")]}).encode()
    assert read_changes(body, []) == ([], True)


def test_garbage_is_no_frame() -> None:
    for body in (b"not json", b"[]", b'{"truncated": false, "changes": [{"path": 1}]}'):
        assert read_changes(body, []) == (None, False)
