"""The diff pane's styling and the code pane's marks, read from one parse of the diff."""

from __future__ import annotations

from textual.content import Content

from engine.run.preview import file_diff
from tui.widgets.diff import added_lines, diff_content
from tui.widgets.diff.render import ADDED, FILE, HUNK, REMOVED


def styles_by_line(content: Content) -> list[tuple[str, set[str]]]:
    lines: list[tuple[str, set[str]]] = []
    start = 0
    for line in content.plain.split("\n"):
        end = start + len(line)
        styles = {str(s.style) for s in content.spans if s.start <= start and s.end >= end}
        lines.append((line, styles if line else set()))
        start = end + 1
    return lines


def test_each_line_is_styled_by_what_it_is() -> None:
    diff = "diff --git a/a.py b/a.py\n" + file_diff("a.py", "x = 1\ny = 2\n", "x = 1\ny = 3\n")

    assert styles_by_line(diff_content(diff)) == [
        ("diff --git a/a.py b/a.py", {FILE}),
        ("--- a/a.py", {FILE}),
        ("+++ b/a.py", {FILE}),
        ("@@ -1,2 +1,2 @@", {HUNK}),
        (" x = 1", set()),
        ("-y = 2", {REMOVED}),
        ("+y = 3", {ADDED}),
    ]


def test_an_added_line_that_looks_like_a_file_header_is_styled_as_added() -> None:
    diff = file_diff("notes.txt", "a\n", "a\n++ b/fake.py\n")

    assert styles_by_line(diff_content(diff))[-1] == ("+++ b/fake.py", {ADDED})
    assert added_lines(diff) == {"notes.txt": {2}}


def test_added_lines_are_numbered_on_the_new_side_per_file() -> None:
    diff = file_diff("a.py", "one\ntwo\nthree\n", "zero\none\nthree\nfour\n") + file_diff(
        "gone.py", "x\n", None
    )

    assert added_lines(diff) == {"a.py": {1, 4}}


def test_an_escape_sequence_in_the_models_code_is_shown_not_obeyed() -> None:
    diff = file_diff("a.py", "x = 1\n", "x = '\x1b]0;pwned\x07\x1b[2J'\n")

    shown = styles_by_line(diff_content(diff))[-1][0]
    assert shown == "+x = '\u241b]0;pwned\u2407\u241b[2J'"
