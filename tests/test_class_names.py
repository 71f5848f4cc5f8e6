"""Names that say what they are: no two top-level classes in fixloop's packages share a name,
so a name read anywhere (a type hint, a traceback, a grep) means one thing. Classes nested in
a class (a widget's or screen's own Textual messages) are named within it and left out."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("sandbox", "engine", "bench", "tui")


def top_level_classes() -> dict[str, list[str]]:
    """Each top-level class name, with the files that define one by that name."""
    found: dict[str, list[str]] = defaultdict(list)
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for node in tree.body:
                if isinstance(node, ast.ClassDef):
                    found[node.name].append(str(path.relative_to(ROOT)))
    return found


def test_no_class_name_is_defined_twice() -> None:
    twice = {name: files for name, files in top_level_classes().items() if len(files) > 1}
    assert twice == {}
