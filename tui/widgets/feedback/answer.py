"""A model's answer as a person reads it in the model tab: a JSON answer (fenced or bare)
laid out with one key per line, and every string that holds several lines (a file's
content, a search or replace text) shown as its lines, indented under its key, instead of
one line of `\\n` escapes. Anything else is shown as it came. Pure: text in, text out."""

from __future__ import annotations

import json
import re
from typing import Any

INDENT = "  "
_FENCE = re.compile(r"^\s*```[\w-]*\s*\n(?P<body>.*?)\n\s*```\s*$", re.S)


def readable_answer(text: str) -> str:
    """`text` laid out for reading, or `text` itself when it is no JSON object."""
    body = text.strip()
    if fenced := _FENCE.match(body):
        body = fenced.group("body").strip()
    if not body.startswith("{"):
        return text
    try:
        value = json.loads(body)
    except ValueError:
        return text
    if not isinstance(value, dict):
        return text
    return "\n".join(_lines(value, 0))


def _lines(value: Any, depth: int, key: str | None = None) -> list[str]:
    pad = INDENT * depth
    label = f"{pad}{key}: " if key is not None else pad
    if isinstance(value, dict):
        inner = [line for k, v in value.items() for line in _lines(v, depth + 1, str(k))]
        return [f"{label}{{", *inner, f"{pad}}}"]
    if isinstance(value, list):
        inner = [line for item in value for line in _lines(item, depth + 1)]
        return [f"{label}[", *inner, f"{pad}]"]
    if isinstance(value, str) and "\n" in value:
        text = value[:-1] if value.endswith("\n") else value  # a file's last newline
        return [
            f"{label}|",
            *(f"{INDENT * (depth + 1)}{line}".rstrip() for line in text.split("\n")),
        ]
    return [f"{label}{json.dumps(value, ensure_ascii=False)}"]
