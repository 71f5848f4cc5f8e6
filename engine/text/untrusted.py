"""A model's text as data: what makes it safe to encode (JSON, files, argv) and to show (a
terminal, a commit message). Pure; every answer passes `valid_unicode` where it arrives
(`Completion`, the JSON an answer holds) and `printable` where it becomes a line a person reads.
"""

from __future__ import annotations

import re

# A lone surrogate cannot be encoded as UTF-8: JSON, files and argv all refuse it.
_LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")
# Terminal escape sequences, 7-bit (ESC ...) and 8-bit (C1 introducers): CSI (colours, cursor
# moves, screen clears), OSC (window titles, hyperlinks, clipboard writes) and the string
# commands DCS/SOS/PM/APC up to their terminator, then any other two-character escape.
_ESCAPE_SEQUENCE = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"
    r"|(?:\x1b[]PX^_]|[\x90\x98\x9d\x9e\x9f]).*?(?:\x07|\x1b\\|\x9c|$)"
    r"|\x1b[ -/]*[0-~]",
    re.DOTALL,
)
# Control characters but tab and newline (C0, DEL, C1), and the bidirectional overrides and
# isolates that make a line read differently from what it holds.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def valid_unicode(text: str) -> str:
    """`text` with each lone surrogate (a `\\ud800` escape decoded from JSON) replaced by
    U+FFFD; everything else, code included, unchanged."""
    return _LONE_SURROGATE.sub("\ufffd", text)


def printable(text: str) -> str:
    """`text` as a person may be shown it: valid unicode, without terminal escape sequences
    or control characters (tab and newline kept). For explanations, messages, commit
    messages; never for a file's content."""
    return _CONTROL.sub("", _ESCAPE_SEQUENCE.sub("", valid_unicode(text)))


def visible_controls(code: str) -> str:
    """Code as a terminal may show it: each control character but tab, newline and carriage
    return (which the screen drops) as its Unicode control picture (ESC as U+241B), so the
    reader sees it is there and the terminal obeys none; a lone surrogate as U+FFFD."""
    return _VISIBLE.sub(_picture, valid_unicode(code))


_VISIBLE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def _picture(control: re.Match[str]) -> str:
    code = ord(control.group())
    if code < 0x20:
        return chr(0x2400 + code)
    return "\u2421" if code == 0x7F else "\ufffd"


def valid_unicode_data(value: object) -> object:
    """A decoded JSON value with `valid_unicode` applied to every string in it, keys too."""
    if isinstance(value, str):
        return valid_unicode(value)
    if isinstance(value, list):
        return [valid_unicode_data(item) for item in value]
    if isinstance(value, dict):
        return {valid_unicode(str(key)): valid_unicode_data(item) for key, item in value.items()}
    return value
