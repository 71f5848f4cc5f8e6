"""Finding the search text in a file: exact, whitespace- and indentation-tolerant, and the
errors that show the model where to look; through `apply`, on real files."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.edits.apply import apply
from engine.edits.proposal import AppliedEdits
from engine.errors import EditFormatError
from tests.engine.edit_project import SERVICE, STATS, proposal, replace, write


def test_exact_search_is_replaced(tmp_path: Path) -> None:
    write(tmp_path, {"stats/core.py": STATS})

    result = apply(
        proposal(replace("stats/core.py", "sum(xs) // len(xs)", "sum(xs) / len(xs)")), tmp_path
    )

    assert result == AppliedEdits(files=["stats/core.py"], unchanged=[])
    assert (tmp_path / "stats/core.py").read_text() == STATS.replace(
        "sum(xs) // len(xs)", "sum(xs) / len(xs)"
    )


def test_search_with_less_indentation_matches_and_replacement_is_reindented(
    tmp_path: Path,
) -> None:
    write(tmp_path, {"svc.py": SERVICE})
    search = "if self.ready:\n    self.start()\n"
    new = "if self.ready and not self.started:\n    self.start()\n    self.started = True\n"

    apply(proposal(replace("svc.py", search, new)), tmp_path)

    assert (tmp_path / "svc.py").read_text() == (
        "class Service:\n"
        "    def run(self):\n"
        "        if self.ready and not self.started:\n"
        "            self.start()\n"
        "            self.started = True\n"
        "        return self.status\n"
    )


def test_search_with_more_indentation_matches_and_replacement_is_dedented(
    tmp_path: Path,
) -> None:
    write(tmp_path, {"stats/core.py": STATS})
    search = "    def mean(xs):\n        return sum(xs) // len(xs)\n"
    new = (
        "    def mean(xs):\n"
        "        if not xs:\n"
        "            return 0.0\n"
        "        return sum(xs) / len(xs)\n"
    )

    apply(proposal(replace("stats/core.py", search, new)), tmp_path)

    assert (
        (tmp_path / "stats/core.py")
        .read_text()
        .startswith(
            "def mean(xs):\n    if not xs:\n        return 0.0\n    return sum(xs) / len(xs)\n\n"
        )
    )


def test_trailing_spaces_in_the_file_do_not_prevent_a_match(tmp_path: Path) -> None:
    write(tmp_path, {"a.py": "x = 1   \ny = 2\t\nz = 3\n"})

    apply(proposal(replace("a.py", "x = 1\ny = 2\n", "x = 10\ny = 20\n")), tmp_path)

    assert (tmp_path / "a.py").read_text() == "x = 10\ny = 20\nz = 3\n"


def test_tolerant_match_at_the_end_of_a_file_without_final_newline(tmp_path: Path) -> None:
    write(tmp_path, {"a.py": "class A:\n    x = 1"})

    apply(proposal(replace("a.py", "x = 1\n", "x = 2\ny = 3\n")), tmp_path)

    assert (tmp_path / "a.py").read_text() == "class A:\n    x = 2\n    y = 3"


def test_blank_lines_around_search_and_replace_are_not_required_in_the_file(
    tmp_path: Path,
) -> None:
    write(tmp_path, {"a.py": "def f():\n    x = 1\n    y = 2\n"})

    apply(proposal(replace("a.py", "\n  x = 1\n  y = 2\n\n", "\n  x = 5\n  y = 6\n\n")), tmp_path)

    assert (tmp_path / "a.py").read_text() == "def f():\n    x = 5\n    y = 6\n"


def test_missing_search_names_the_file_and_shows_the_closest_lines(tmp_path: Path) -> None:
    write(tmp_path, {"stats/core.py": STATS})
    search = "def mean(values):\n    return sum(values) // len(values)\n"

    with pytest.raises(EditFormatError) as caught:
        apply(proposal(replace("stats/core.py", search, "pass\n")), tmp_path)

    message = str(caught.value)
    assert "stats/core.py" in message
    assert "not found" in message
    assert "    1 | def mean(xs):" in message
    assert "    2 |     return sum(xs) // len(xs)" in message
    assert "median" not in message
    assert (tmp_path / "stats/core.py").read_text() == STATS


def test_search_like_nothing_in_the_file_says_so(tmp_path: Path) -> None:
    write(tmp_path, {"stats/core.py": STATS})

    with pytest.raises(EditFormatError) as caught:
        apply(proposal(replace("stats/core.py", "import numpy as np\n", "")), tmp_path)

    assert "nothing in the file looks like it" in str(caught.value)


def test_search_occurring_twice_is_an_error_with_count_and_lines(tmp_path: Path) -> None:
    write(tmp_path, {"stats/core.py": STATS})

    with pytest.raises(EditFormatError) as caught:
        apply(proposal(replace("stats/core.py", "// ", "/ ")), tmp_path)

    message = str(caught.value)
    assert "occurs 2 times (at lines 2, 7)" in message
    assert "more of the surrounding lines" in message
    assert (tmp_path / "stats/core.py").read_text() == STATS


def test_tolerant_search_occurring_twice_is_an_error(tmp_path: Path) -> None:
    write(tmp_path, {"a.py": "def f():\n    pass\n\nclass C:\n    def f():\n        pass\n"})

    with pytest.raises(EditFormatError) as caught:
        apply(proposal(replace("a.py", "  def f():\n      pass\n", "x\n")), tmp_path)

    assert "occurs 2 times (at lines 1, 5)" in str(caught.value)


def test_edits_to_one_file_apply_in_order_on_the_evolving_content(tmp_path: Path) -> None:
    write(tmp_path, {"stats/core.py": STATS})

    apply(
        proposal(
            replace("stats/core.py", "return sum(xs) // len(xs)", "return total(xs) / len(xs)"),
            replace("stats/core.py", "return total(xs)", "return sum(xs)"),
            replace("stats/core.py", "middle = len(ordered) // 2", "middle = len(ordered) >> 1"),
        ),
        tmp_path,
    )

    text = (tmp_path / "stats/core.py").read_text()
    assert "    return sum(xs) / len(xs)\n" in text
    assert "middle = len(ordered) >> 1" in text


def test_empty_search_on_an_existing_file_is_an_error(tmp_path: Path) -> None:
    write(tmp_path, {"stats/core.py": STATS})

    with pytest.raises(EditFormatError, match='"search" is empty'):
        apply(proposal(replace("stats/core.py", "", "import math\n")), tmp_path)


def test_search_on_a_missing_file_suggests_content(tmp_path: Path) -> None:
    with pytest.raises(EditFormatError) as caught:
        apply(proposal(replace("stats/new.py", "x", "y")), tmp_path)

    assert "stats/new.py does not exist" in str(caught.value)
    assert '"content"' in str(caught.value)


def test_search_indented_with_spaces_matches_a_block_indented_with_tabs(tmp_path: Path) -> None:
    write(tmp_path, {"a.py": "def f(xs):\n\tfor x in xs:\n\t\tif x:\n\t\t\tyield x\n"})
    search = "    for x in xs:\n        if x:\n            yield x\n"
    new = "    for x in xs:\n        if x:\n            yield x.strip()\n"

    apply(proposal(replace("a.py", search, new)), tmp_path)

    assert (tmp_path / "a.py").read_text() == (
        "def f(xs):\n\tfor x in xs:\n\t\tif x:\n\t\t\tyield x.strip()\n"
    )


def test_a_tab_is_read_as_eight_columns_when_four_find_nothing(tmp_path: Path) -> None:
    write(tmp_path, {"a.py": "def f(x):\n\tif x:\n\t\treturn 1\n"})
    search = "        if x:\n                return 1\n"  # tabs as 8 spaces, as Python reads them

    apply(proposal(replace("a.py", search, "        if x:\n                return 2\n")), tmp_path)

    assert (tmp_path / "a.py").read_text() == "def f(x):\n\tif x:\n\t\treturn 2\n"


def test_lines_a_search_quotes_unchanged_keep_the_files_trailing_spaces(tmp_path: Path) -> None:
    write(tmp_path, {"a.py": "x = 1   \ny = 2\nz = 3  \n"})

    apply(proposal(replace("a.py", "x = 1\ny = 2\nz = 3\n", "x = 1\ny = 20\nz = 3\n")), tmp_path)

    assert (tmp_path / "a.py").read_text() == "x = 1   \ny = 20\nz = 3  \n"


def test_a_missing_search_is_named_by_its_first_line(tmp_path: Path) -> None:
    write(tmp_path, {"stats/core.py": STATS})
    search = "\ndef mean(values):\n    return sum(values) // len(values)\n"

    with pytest.raises(EditFormatError) as caught:
        apply(proposal(replace("stats/core.py", search, "pass\n")), tmp_path)

    assert "the \"search\" that begins 'def mean(values):' was not found" in str(caught.value)
