"""The edit protocol: parsing both answer formats, path safety, and applying edits to real files."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import pytest

from engine.edits.protocol import (
    AppliedEdits,
    Edit,
    EditFormatError,
    Proposal,
    apply,
    dropped_definitions,
    instructions,
    parse,
    safe_path,
)

STATS = """\
def mean(xs):
    return sum(xs) // len(xs)


def median(xs):
    ordered = sorted(xs)
    middle = len(ordered) // 2
    return ordered[middle]
"""

SERVICE = """\
class Service:
    def run(self):
        if self.ready:
            self.start()
        return self.status
"""


def write(root: Path, files: dict[str, str]) -> None:
    for path, content in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)


def proposal(*edits: Edit) -> Proposal:
    return Proposal(explanation="test", edits=list(edits), format="json")


def replace(path: str, search: str, new: str) -> Edit:
    return Edit(path=path, search=search, replace=new)


def project_files(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


# --- applying search/replace -----------------------------------------------------------------


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


# --- applying whole files --------------------------------------------------------------------


def test_content_creates_a_new_file_with_its_parent_directories(tmp_path: Path) -> None:
    result = apply(proposal(Edit(path="pkg/sub/deep/new.py", content="VALUE = 1\n")), tmp_path)

    assert result.files == ["pkg/sub/deep/new.py"]
    assert (tmp_path / "pkg/sub/deep/new.py").read_text() == "VALUE = 1\n"


def test_search_on_a_file_created_earlier_in_the_same_proposal(tmp_path: Path) -> None:
    apply(
        proposal(
            Edit(path="pkg/new.py", content="VALUE = 1\n"),
            replace("pkg/new.py", "VALUE = 1", "VALUE = 2"),
        ),
        tmp_path,
    )

    assert (tmp_path / "pkg/new.py").read_text() == "VALUE = 2\n"


def test_whole_file_identical_to_the_current_one_is_unchanged_and_not_written(
    tmp_path: Path,
) -> None:
    write(tmp_path, {"tests/test_core.py": "def test_x():\n    assert True\n"})
    target = tmp_path / "tests/test_core.py"
    os.utime(target, ns=(1_000_000_000, 1_000_000_000))

    result = apply(
        proposal(Edit(path="tests/test_core.py", content="def test_x():\n    assert True\n")),
        tmp_path,
    )

    assert result == AppliedEdits(files=[], unchanged=["tests/test_core.py"])
    assert target.stat().st_mtime_ns == 1_000_000_000


def test_content_replaces_an_existing_file(tmp_path: Path) -> None:
    write(tmp_path, {"stats/core.py": STATS})

    result = apply(proposal(Edit(path="stats/core.py", content="X = 1\n")), tmp_path)

    assert result.files == ["stats/core.py"]
    assert (tmp_path / "stats/core.py").read_text() == "X = 1\n"


def test_file_mode_is_kept(tmp_path: Path) -> None:
    write(tmp_path, {"run.py": "#!/usr/bin/env python\nprint(1)\n"})
    (tmp_path / "run.py").chmod(0o755)

    apply(proposal(replace("run.py", "print(1)", "print(2)")), tmp_path)

    assert stat.S_IMODE((tmp_path / "run.py").stat().st_mode) == 0o755
    assert (tmp_path / "run.py").read_text().endswith("print(2)\n")


def test_no_temporary_files_are_left_behind(tmp_path: Path) -> None:
    write(tmp_path, {"stats/core.py": STATS})

    apply(
        proposal(
            replace("stats/core.py", "// len", "/ len"), Edit(path="stats/new.py", content="")
        ),
        tmp_path,
    )

    assert sorted(p.name for p in (tmp_path / "stats").iterdir()) == ["core.py", "new.py"]


def test_crlf_file_keeps_crlf(tmp_path: Path) -> None:
    (tmp_path / "win.py").write_bytes(b"def f():\r\n    return 1 // 2\r\n\r\nX = 3\r\n")

    apply(
        proposal(replace("win.py", "def f():\n    return 1 // 2\n", "def f():\n    return 0.5\n")),
        tmp_path,
    )

    assert (tmp_path / "win.py").read_bytes() == b"def f():\r\n    return 0.5\r\n\r\nX = 3\r\n"


def test_crlf_file_keeps_crlf_with_a_whitespace_tolerant_match(tmp_path: Path) -> None:
    (tmp_path / "win.py").write_bytes(b"class C:\r\n    def f(self):\r\n        return 1\r\n")

    apply(
        proposal(replace("win.py", "def f(self):\n    return 1\n", "def f(self):\n    return 2\n")),
        tmp_path,
    )

    assert (tmp_path / "win.py").read_bytes() == (
        b"class C:\r\n    def f(self):\r\n        return 2\r\n"
    )


def test_crlf_file_keeps_crlf_when_search_ends_mid_line(tmp_path: Path) -> None:
    (tmp_path / "win.py").write_bytes(b"def f():\r\n    return 1 // 2\r\n\r\nX = 3\r\n")

    apply(proposal(replace("win.py", "1 // 2\n\nX = 3", "0.5\n\nX = 4\nY = 5")), tmp_path)

    assert (tmp_path / "win.py").read_bytes() == (
        b"def f():\r\n    return 0.5\r\n\r\nX = 4\r\nY = 5\r\n"
    )


def test_whole_content_on_a_crlf_file_is_written_with_crlf(tmp_path: Path) -> None:
    (tmp_path / "win.py").write_bytes(b"X = 1\r\n")

    apply(proposal(Edit(path="win.py", content="X = 2\nY = 3\n")), tmp_path)

    assert (tmp_path / "win.py").read_bytes() == b"X = 2\r\nY = 3\r\n"


def test_non_utf8_file_is_left_byte_identical_and_the_edit_is_an_error(tmp_path: Path) -> None:
    latin1 = "# café\nX = 1\n".encode("latin-1")
    (tmp_path / "legacy.py").write_bytes(latin1)

    with pytest.raises(
        EditFormatError, match=re.escape("legacy.py is not UTF-8 text; fixloop does not edit it")
    ):
        apply(proposal(Edit(path="legacy.py", content="X = 2\n")), tmp_path)

    assert (tmp_path / "legacy.py").read_bytes() == latin1


def test_one_bad_edit_means_nothing_is_written(tmp_path: Path) -> None:
    write(tmp_path, {"stats/core.py": STATS})
    before = project_files(tmp_path)

    with pytest.raises(EditFormatError) as caught:
        apply(
            proposal(
                replace("stats/core.py", "// len(xs)", "/ len(xs)"),
                Edit(path="stats/extra.py", content="Y = 1\n"),
                replace("stats/core.py", "def mode(xs):", "def mode(values):"),
            ),
            tmp_path,
        )

    assert project_files(tmp_path) == before
    assert "edit 3: stats/core.py" in str(caught.value)
    assert "None of your edits were applied" in str(caught.value)


def test_every_failing_edit_is_listed(tmp_path: Path) -> None:
    write(tmp_path, {"stats/core.py": STATS})

    with pytest.raises(EditFormatError) as caught:
        apply(
            proposal(
                replace("stats/core.py", "def mode(xs):", "x"),
                Edit(path="../outside.py", content="x\n"),
                replace("stats/missing.py", "a", "b"),
            ),
            tmp_path,
        )

    assert [p.split(":")[0] for p in caught.value.problems] == ["edit 1", "edit 2", "edit 3"]


def test_edit_through_a_symlink_inside_the_project_keeps_the_link(tmp_path: Path) -> None:
    write(tmp_path, {"stats/core.py": STATS})
    (tmp_path / "core_link.py").symlink_to("stats/core.py")

    result = apply(proposal(replace("core_link.py", "// len", "/ len")), tmp_path)

    assert result.files == ["core_link.py"]
    assert (tmp_path / "core_link.py").is_symlink()
    assert "sum(xs) / len(xs)" in (tmp_path / "stats/core.py").read_text()


# --- path safety -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("/etc/passwd", "absolute"),
        ("../outside.py", "'..'"),
        ("pkg/../../outside.py", "'..'"),
        (".git/config", ".git is not part of the project"),
        (".fixloop/runs/x.json", ".fixloop is not part of the project"),
        ("", "empty"),
        ("   ", "empty"),
        ("pkg\\..\\..\\evil.py", "backslash"),
        ("C:/Windows/evil.py", "absolute"),
    ],
)
def test_path_is_refused(tmp_path: Path, path: str, why: str) -> None:
    with pytest.raises(EditFormatError) as caught:
        safe_path(tmp_path, path)

    assert why in str(caught.value)
    assert repr(path) in str(caught.value)


def test_symlink_pointing_outside_the_project_is_refused(tmp_path: Path) -> None:
    root, outside = tmp_path / "project", tmp_path / "elsewhere"
    root.mkdir()
    outside.mkdir()
    (root / "escape").symlink_to(outside)

    with pytest.raises(EditFormatError, match="outside the project"):
        apply(proposal(Edit(path="escape/evil.py", content="x\n")), root)

    assert list(outside.iterdir()) == []


def test_symlink_pointing_into_git_is_refused(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git/config").write_text("[core]\n")
    (tmp_path / "settings.cfg").symlink_to(".git/config")

    with pytest.raises(EditFormatError, match=re.escape("into .git or .fixloop")):
        safe_path(tmp_path, "settings.cfg")


def test_refused_path_in_apply_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()

    with pytest.raises(EditFormatError):
        apply(proposal(Edit(path=".git/hooks/pre-commit", content="rm -rf ~\n")), tmp_path)

    assert not (tmp_path / ".git/hooks").exists()


def test_safe_path_normalises_to_a_relative_posix_path(tmp_path: Path) -> None:
    assert safe_path(tmp_path, "./pkg//sub/./mod.py") == "pkg/sub/mod.py"


# --- parsing json ----------------------------------------------------------------------------

JSON_ANSWER = (
    '{"explanation": "use true division", "edits": [{"path": "stats/core.py", '
    '"search": "sum(xs) // len(xs)", "replace": "sum(xs) / len(xs)"}, '
    '{"path": "stats/new.py", "content": "X = {1: 2}\\n"}]}'
)
JSON_EDITS = [
    Edit(path="stats/core.py", search="sum(xs) // len(xs)", replace="sum(xs) / len(xs)"),
    Edit(path="stats/new.py", content="X = {1: 2}\n"),
]


def test_bare_json_is_parsed() -> None:
    assert parse(JSON_ANSWER, "json") == Proposal(
        explanation="use true division", edits=JSON_EDITS, format="json"
    )


def test_fenced_json_is_parsed() -> None:
    assert parse(f"```json\n{JSON_ANSWER}\n```", "json").edits == JSON_EDITS


def test_json_with_prose_around_it_is_parsed() -> None:
    answer = (
        "The bug is in {mean}: it uses floor division.\n\n"
        f"```json\n{JSON_ANSWER}\n```\n\nLet me know if {{this}} helps!"
    )

    assert parse(answer, "json").edits == JSON_EDITS


def test_json_object_in_the_prose_does_not_pass_for_the_answer() -> None:
    answer = f'The config {{"debug": true}} is fine; the fix:\n{JSON_ANSWER}'

    assert parse(answer, "json").edits == JSON_EDITS


def test_json_after_a_stray_brace_in_the_prose_is_parsed() -> None:
    assert parse(f"Replace the {{ block:\n{JSON_ANSWER}", "json").edits == JSON_EDITS


def test_json_content_may_contain_fences_and_raw_newlines() -> None:
    answer = (
        '```json\n{"edits": [{"path": "README.md", "content": "# Demo\n```sh\nmake\n```\n"}]}\n```'
    )

    assert parse(answer, "json").edits == [
        Edit(path="README.md", content="# Demo\n```sh\nmake\n```\n")
    ]


def test_single_edit_object_instead_of_a_list_is_accepted() -> None:
    answer = '{"explanation": "x", "edits": {"path": "a.py", "search": "1", "replace": "2"}}'

    assert parse(answer, "json").edits == [Edit(path="a.py", search="1", replace="2")]


def test_lone_edit_object_is_accepted() -> None:
    answer = '{"path": "a.py", "search": "1", "replace": "2"}'

    assert parse(answer, "json") == Proposal(
        explanation="", edits=[Edit(path="a.py", search="1", replace="2")], format="json"
    )


def test_missing_explanation_is_empty() -> None:
    answer = '{"edits": [{"path": "a.py", "content": "x = 1\\n"}]}'

    assert parse(answer, "json").explanation == ""


def test_malformed_json_is_an_error_showing_the_expected_shape() -> None:
    with pytest.raises(EditFormatError) as caught:
        parse('{"explanation": "x", "edits": [{"path": "a.py" "content": "y"}]}', "json")

    message = str(caught.value)
    assert "your JSON does not parse: Expecting ',' delimiter" in message
    assert '"edits": [' in message  # the shape to answer in


def test_trailing_comma_is_an_error_that_names_it() -> None:
    answer = '{"edits": [{"path": "a.py", "search": "1", "replace": "2"},]}'

    with pytest.raises(EditFormatError, match="trailing comma"):
        parse(answer, "json")


def test_edit_inside_a_malformed_answer_does_not_pass_for_the_answer() -> None:
    answer = '{"explanation": "x" "edits": [{"path": "a.py", "content": "x"}]}'

    with pytest.raises(EditFormatError, match="does not parse"):
        parse(answer, "json")


def test_cut_off_json_is_an_error_saying_it_never_closes() -> None:
    answer = '```json\n{"edits": [{"path": "a.py", "content": "def f():\\n    return {1: '

    with pytest.raises(EditFormatError, match="never closed"):
        parse(answer, "json")


def test_answer_without_json_is_an_error() -> None:
    with pytest.raises(EditFormatError, match="no JSON object"):
        parse("I think the bug is in mean().", "json")


def test_empty_answer_is_an_error() -> None:
    with pytest.raises(EditFormatError, match="empty"):
        parse("  \n", "json")


def test_missing_edits_is_an_error() -> None:
    with pytest.raises(EditFormatError, match='"edits" is missing'):
        parse('{"explanation": "fixed it"}', "json")


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        ('{"path": "a.py"}', 'needs "search" and "replace", or the whole file as "content"'),
        ('{"path": "a.py", "search": "x"}', 'has "search" but no "replace"'),
        ('{"path": "a.py", "replace": "x"}', 'has "replace" but no "search"'),
        ('{"search": "x", "replace": "y"}', '"path" is missing'),
        ('{"path": "a.py", "content": 3}', '"content" must be a string'),
        ('{"path": ["a.py"], "content": "x"}', '"path" must be a string'),
        ('{"path": "a.py", "content": "x", "search": "y", "replace": "z"}', "not both"),
        ('"a.py"', "not an object"),
    ],
)
def test_incomplete_edit_is_an_error(edit: str, problem: str) -> None:
    with pytest.raises(EditFormatError) as caught:
        parse(f'{{"explanation": "x", "edits": [{edit}]}}', "json")

    assert problem in str(caught.value)


def test_every_bad_edit_in_an_answer_is_reported() -> None:
    answer = '{"edits": [{"path": "a.py"}, {"path": "b.py", "search": "x"}]}'

    with pytest.raises(EditFormatError) as caught:
        parse(answer, "json")

    assert len(caught.value.problems) == 2


def test_refused_path_in_json_is_a_format_error() -> None:
    with pytest.raises(EditFormatError, match=re.escape("refused path '../x.py'")):
        parse('{"edits": [{"path": "../x.py", "content": "x"}]}', "json")


def test_parsed_paths_are_normalised() -> None:
    answer = '{"edits": [{"path": "./stats//core.py", "content": "x"}]}'

    assert parse(answer, "json").edits[0].path == "stats/core.py"


# --- parsing whole files ---------------------------------------------------------------------


def test_whole_answer_with_two_files_and_prose() -> None:
    answer = """\
I fixed the division and added a helper.

stats/core.py
```python
def mean(xs):
    return sum(xs) / len(xs)
```

And the new helper module:

stats/helpers.py
```
def clamp(x, lo, hi):
    return max(lo, min(x, hi))
```
That's all.
"""

    assert parse(answer, "whole") == Proposal(
        explanation="I fixed the division and added a helper.",
        edits=[
            Edit(path="stats/core.py", content="def mean(xs):\n    return sum(xs) / len(xs)\n"),
            Edit(
                path="stats/helpers.py",
                content="def clamp(x, lo, hi):\n    return max(lo, min(x, hi))\n",
            ),
        ],
        format="whole",
    )


@pytest.mark.parametrize(
    "path_line",
    [
        "`stats/core.py`",
        "**stats/core.py**",
        "File: stats/core.py",
        "### stats/core.py",
        "### `stats/core.py`",
        "**File:** `stats/core.py`",
        "stats/core.py:",
    ],
)
def test_whole_path_line_may_be_decorated(path_line: str) -> None:
    answer = f"{path_line}\n\n~~~python\nX = 1\n~~~\n"

    assert parse(answer, "whole").edits == [Edit(path="stats/core.py", content="X = 1\n")]


def test_whole_code_block_without_a_path_is_an_error() -> None:
    answer = "Here is the fix:\n```python\ndef mean(xs):\n    return sum(xs) / len(xs)\n```\n"

    with pytest.raises(EditFormatError) as caught:
        parse(answer, "whole")

    message = str(caught.value)
    assert "a code block without its file path on the line above it" in message
    assert '"Here is the fix:"' in message
    assert "its path alone on a line" in message  # how to answer, without a block to copy
    assert "pkg/mod.py" not in message


def test_whole_second_block_right_after_the_first_has_no_path() -> None:
    answer = "a.py\n```\nA = 1\n```\n```\nB = 2\n```\n"

    with pytest.raises(EditFormatError, match="at line 5 of your answer"):
        parse(answer, "whole")


def test_whole_unclosed_block_is_an_error() -> None:
    with pytest.raises(EditFormatError, match="never closed"):
        parse("stats/core.py\n```python\ndef mean(xs):\n    return sum(xs) /", "whole")


def test_whole_answer_without_blocks_is_an_error() -> None:
    with pytest.raises(EditFormatError, match="no fenced code block"):
        parse("Change // to / in stats/core.py.", "whole")


def test_whole_diff_block_is_an_error() -> None:
    answer = "stats/core.py\n```diff\n-    return a // b\n+    return a / b\n```\n"

    with pytest.raises(EditFormatError, match="not a diff"):
        parse(answer, "whole")


def test_whole_refused_path_is_a_format_error() -> None:
    with pytest.raises(EditFormatError, match="refused path '/etc/passwd'"):
        parse("/etc/passwd\n```\nroot::0:0::/:/bin/sh\n```\n", "whole")


def test_whole_content_is_kept_exactly_and_ends_with_one_newline() -> None:
    answer = "a.py\n```python\n\tX = '  '  \n\n\ndef f():\n    pass\n\n\n```\n"

    assert parse(answer, "whole").edits[0].content == "\tX = '  '  \n\n\ndef f():\n    pass\n"


def test_real_small_model_answer_applies(tmp_path: Path) -> None:
    write(tmp_path, {"stats/core.py": "def mean(xs):\n    return sum(xs) // len(xs)\n"})
    answer = (
        "Here is the fix:\n\nstats/core.py\n```python\ndef mean(xs):\n"
        "    return sum(xs) / len(xs)\n```\nThis changes // to /."
    )

    result = apply(parse(answer, "whole"), tmp_path)

    assert result.files == ["stats/core.py"]
    assert (tmp_path / "stats/core.py").read_text() == (
        "def mean(xs):\n    return sum(xs) / len(xs)\n"
    )


# --- instructions ----------------------------------------------------------------------------


def test_json_instructions_example_is_a_valid_answer() -> None:
    text = instructions("json")
    example = text[text.index("{") : text.rindex("}") + 1]

    assert [e.path for e in parse(example, "json").edits] == ["pkg/mod.py", "pkg/new_module.py"]


def test_instructions_use_a_real_path_of_the_project_as_the_example() -> None:
    text = instructions("whole", "textstats/core.py")
    assert "textstats/core.py" in text
    assert "pkg/mod.py" not in text


def test_a_whole_file_that_leaves_out_functions_is_refused(tmp_path: Path) -> None:
    (tmp_path / "core.py").write_text("def keep():\n    return 1\n\n\ndef other():\n    return 2\n")
    proposal = parse("core.py\n```python\ndef keep():\n    return 3\n```\n", "whole")
    [problem] = dropped_definitions(proposal, tmp_path)
    assert "core.py leaves out other" in problem


def test_a_whole_file_with_every_function_is_not_refused(tmp_path: Path) -> None:
    (tmp_path / "core.py").write_text("def keep():\n    return 1\n")
    proposal = parse(
        "core.py\n```python\ndef keep():\n    return 3\n\n\ndef new():\n    pass\n```\n", "whole"
    )
    assert dropped_definitions(proposal, tmp_path) == []
