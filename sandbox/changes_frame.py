"""The host's side of `return_changes`: cutting the changes frame off the end of a job's
stdout (`inside/changes.py` writes it) and reading it as untrusted data.

A job can print anything, a forged frame included; it gains nothing by it: every entry
is checked as any sandbox output is (a workspace-relative path outside the excluded
names, a bounded size), so a forged frame can say no more than the job could have said
by writing those files.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable

from pydantic import ValidationError

from sandbox.contract import FileChange
from sandbox.inside.changes import MAGIC, TRAILER_BYTES
from sandbox.output import CappedStream


class StdoutWithChanges(CappedStream):
    """A job's capped stdout that holds back its last bytes, where the changes frame is,
    until `take_frame()` cuts it off (the rest then joins the output). Memory stays
    within the output cap plus the frame's."""

    def __init__(self, cap: int, frame_cap: int) -> None:
        super().__init__(cap)
        self._hold = frame_cap + TRAILER_BYTES
        self._held = bytearray()

    def feed(self, chunk: bytes) -> None:
        self._held += chunk
        excess = len(self._held) - self._hold
        if excess > 0:
            super().feed(bytes(self._held[:excess]))
            del self._held[:excess]

    def take_frame(self) -> bytes | None:
        """The frame's JSON, or None when the stream does not end with one (the job was
        killed before the zygote could send it). Call once, after the stream ended."""
        held, self._held = bytes(self._held), bytearray()
        payload: bytes | None = None
        trailer = held[-TRAILER_BYTES:]
        if len(held) >= TRAILER_BYTES and trailer.startswith(MAGIC) and trailer.endswith(b"\n"):
            digits = trailer[len(MAGIC) : -1]
            if digits.isdigit() and int(digits) <= len(held) - TRAILER_BYTES:
                start = len(held) - TRAILER_BYTES - int(digits)
                payload = held[start : len(held) - TRAILER_BYTES]
                held = held[:start]
        CappedStream.feed(self, held)
        return payload


def read_changes(
    payload: bytes | None, excludes: Iterable[str]
) -> tuple[list[FileChange] | None, bool]:
    """(changes, truncated) from a frame's JSON. None: no frame, or one that is not what the
    zygote writes. Entries under an excluded name are dropped, whatever sent them."""
    if payload is None:
        return None, False
    try:
        data = json.loads(payload)
        if data["truncated"] is True:
            return [], True
        skip = frozenset(excludes)
        changes = []
        for entry in data["changes"]:
            content = entry["content"]
            change = FileChange(
                path=entry["path"],
                content=None if content is None else base64.b64decode(content, validate=True),
                executable=entry["executable"] is True,
            )
            if not skip.intersection(change.path.split("/")):
                changes.append(change)
    except (ValueError, KeyError, TypeError, ValidationError, binascii.Error):
        return None, False
    return changes, False
