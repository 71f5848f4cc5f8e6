"""fixloop's pytest plugin, the runtime values of a failure: the local variables of the deepest
project frame, as capped reprs taken while the frame is still there. Standalone like the
plugin (stdlib only); it never raises, whatever the values' reprs do.
"""

from __future__ import annotations

import builtins
import re
import reprlib
import time
import types
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Any

MAX_NAMES = 8
VALUE_CHARS = 80
CUT = "..."
REPR_FAILED = "<repr failed>"
# A slow __repr__ cannot be interrupted safely; past this, the remaining names are skipped.
TIME_BUDGET_S = 0.5
# Imported or nested functions, modules and classes are code, not state.
NOISE_TYPES = (
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.ModuleType,
    type,
)
# `<Random object at 0x55d0...>`: the address tells the model nothing and changes every run.
ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


class _CappedRepr(reprlib.Repr):
    """reprlib's limits (few items, short strings, shallow nesting); a failing __repr__
    raises instead of being replaced by an address, so the caller can say it failed."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel = 3
        self.maxtuple = self.maxlist = self.maxarray = self.maxdeque = 8
        self.maxset = self.maxfrozenset = 8
        self.maxdict = 6
        self.maxstring = self.maxother = VALUE_CHARS
        self.maxlong = VALUE_CHARS

    def repr_instance(self, x: object, level: int) -> str:
        return cut(builtins.repr(x))


_REPR = _CappedRepr()


def cut(text: str, limit: int = VALUE_CHARS) -> str:
    """At most `limit` characters, ending in "..." where cut."""
    return text if len(text) <= limit else text[: limit - len(CUT)] + CUT


def value_repr(value: object) -> str:
    """The value's repr, capped, without memory addresses; "<repr failed>" when it raises."""
    try:
        return cut(ADDRESS.sub("", _REPR.repr(value)))
    except Exception:
        return REPR_FAILED


def _shown(name: str) -> bool:
    """A name the code wrote: not a dunder, an assert-rewrite temporary (`@py_assert1`) or a
    comprehension's hidden iterator (`.0`)."""
    return name.isidentifier() and not (name.startswith("__") and name.endswith("__"))


def _noise(value: object) -> bool:
    """Code rather than state, or a pytest fixture's object (`capsys`)."""
    try:
        if isinstance(value, NOISE_TYPES):  # may ask a proxy's __class__, which may raise
            return True
        module = getattr(type(value), "__module__", "") or ""
    except Exception:
        return False
    return module.split(".")[0] in ("_pytest", "pytest")


def frame_values(frame: FrameType) -> tuple[list[dict[str, str]], int]:
    """Up to MAX_NAMES (name, repr) pairs of the frame's state, in the frame's own order
    (arguments first), and how many more there were."""
    names: list[tuple[str, Any]] = [
        (name, value)
        for name, value in dict(frame.f_locals).items()
        if _shown(name) and not _noise(value)
    ]
    values: list[dict[str, str]] = []
    deadline = time.monotonic() + TIME_BUDGET_S
    for name, value in names[:MAX_NAMES]:
        if time.monotonic() > deadline:
            break
        values.append({"name": name, "value": value_repr(value)})
    return values, len(names) - len(values)


def failing_frame(
    tb: TracebackType | None,
    in_project: Callable[[str], bool],
    is_test_file: Callable[[str], bool],
) -> tuple[FrameType, int] | None:
    """(frame, line) of the deepest project frame of the traceback: the last one outside
    the tests (the code under test), else the last one in them."""
    entries: list[tuple[FrameType, int]] = []
    while tb is not None:
        entries.append((tb.tb_frame, tb.tb_lineno))
        tb = tb.tb_next
    project = [(f, line) for f, line in entries if in_project(f.f_code.co_filename)]
    code = [(f, line) for f, line in project if not is_test_file(f.f_code.co_filename)]
    return code[-1] if code else project[-1] if project else None
