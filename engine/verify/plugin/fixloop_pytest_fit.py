"""fixloop's pytest plugin, fitting its report into MAX_REPORT_BYTES: the first failures whole,
the rest one line each, then as many nodeids as fit. Standalone like the plugin (stdlib only).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fixloop_pytest_source import clip

MAX_REPORT_BYTES = 256 * 1024
FULL_DETAIL_TESTS = 50  # the first failures keep everything; the rest one line each
MAX_TESTS = 2000
MAX_NODEIDS = 5000
FULL_DETAIL_COLLECTION_ERRORS = 20
MAX_COLLECTION_ERRORS = 500
NODEID_SHARE = 0.3  # of the byte budget kept for nodeids before test details take the rest
SHORT_MESSAGE_CHARS = 200
SLIM_FIELDS = ("nodeid", "outcome", "when", "file", "line", "exception_type")


def _size(value: object) -> int:
    return len(json.dumps(value, separators=(",", ":"))) + 1  # +1: the comma


def _slim_test(case: dict[str, Any]) -> dict[str, Any]:
    slim = {name: case[name] for name in SLIM_FIELDS if name in case}
    for name in ("exception_message", "skip_reason"):
        if case.get(name):
            slim[name] = clip(str(case[name]), SHORT_MESSAGE_CHARS)
    return slim


def _slim_collection_error(error: dict[str, Any]) -> dict[str, Any]:
    slim = {name: error.get(name) for name in ("nodeid", "exception_type", "frame")}
    slim["exception_message"] = clip(str(error.get("exception_message") or ""), SHORT_MESSAGE_CHARS)
    return slim


def _loses(item: dict[str, Any], slim: dict[str, Any]) -> bool:
    """Does the slim form leave out or shorten anything the item said?"""
    return any(value and slim.get(name) != value for name, value in item.items())


@dataclass
class ByteBudget:
    """Bytes left for the report's lists, and how much of them full details may take."""

    left: int
    dropped: bool = False

    def fill(
        self,
        items: list[dict[str, Any]],
        slim: Callable[[dict[str, Any]], dict[str, Any]],
        full_count: int,
        full_bytes: int,
    ) -> list[dict[str, Any]]:
        """The first `full_count` items whole while `full_bytes` last, the rest slim; in order."""
        kept: list[dict[str, Any]] = []
        for index, item in enumerate(items):
            piece = item
            if index >= full_count or _size(item) > min(full_bytes, self.left):
                piece = slim(item)
                self.dropped = self.dropped or _loses(item, piece)
            size = _size(piece)
            if size > self.left:
                break
            if piece is item:
                full_bytes -= size
            self.left -= size
            kept.append(piece)
        self.dropped = self.dropped or len(kept) < len(items)
        return kept


def fit_report(
    base: dict[str, Any],
    tests: list[dict[str, Any]],
    nodeids: list[str],
    collection_errors: list[dict[str, Any]],
) -> dict[str, Any]:
    """Fill the lists by value, within MAX_REPORT_BYTES: full details of the first errors
    and failures, one line for the rest, then as many nodeids as fit."""
    budget = ByteBudget(MAX_REPORT_BYTES - 4096 - _size(base))
    budget.dropped = len(nodeids) > MAX_NODEIDS
    nodeids = nodeids[:MAX_NODEIDS]
    reserve = min(sum(_size(nodeid) for nodeid in nodeids), int(budget.left * NODEID_SHARE))
    budget.left -= reserve
    base["collection_errors"] = budget.fill(
        collection_errors[:MAX_COLLECTION_ERRORS],
        _slim_collection_error,
        FULL_DETAIL_COLLECTION_ERRORS,
        budget.left // 4,
    )
    base["tests"] = budget.fill(tests[:MAX_TESTS], _slim_test, FULL_DETAIL_TESTS, budget.left // 2)
    budget.dropped = budget.dropped or len(collection_errors) > MAX_COLLECTION_ERRORS
    budget.dropped = budget.dropped or len(tests) > MAX_TESTS
    budget.left += reserve
    for nodeid in nodeids:
        if _size(nodeid) > budget.left:
            budget.dropped = True
            break
        budget.left -= _size(nodeid)
        base["nodeids"].append(nodeid)
    base["truncated"] = budget.dropped
    return base
