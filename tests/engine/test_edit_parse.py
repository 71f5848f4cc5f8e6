"""Reading a model's answer in both formats, and the instructions that ask for them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from engine.edits.instructions import FOCUSED_TEST_FILE_LABEL, TEST_FILE_LABEL, instructions
from engine.edits.parse import parse
from engine.edits.proposal import Edit, Proposal
from engine.errors import EditFormatError
from engine.run.answers import refuse_dropped_definitions

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


def test_whole_files_sent_when_json_was_asked_for_are_read_as_whole_files() -> None:
    answer = "stats/core.py\n```python\ndef mean(xs):\n    return sum(xs) / len(xs)\n```\n"
    assert parse(answer, "json") == Proposal(
        explanation="",
        edits=[Edit(path="stats/core.py", content="def mean(xs):\n    return sum(xs) / len(xs)\n")],
        format="whole",
    )
    # Code with braces (a dict, an f-string) is still a whole file, not broken JSON.
    braces = 'app.py\n```python\nD = {}\n\n\ndef f(x):\n    return f"{x}"\n```\n'
    assert parse(braces, "json").edits == [
        Edit(path="app.py", content='D = {}\n\n\ndef f(x):\n    return f"{x}"\n')
    ]
    # An answer that tried the JSON shape keeps its JSON error.
    with pytest.raises(EditFormatError, match="never closed"):
        parse('stats/core.py\n```python\nX = {"a":\n```\n{"edits": [', "json")
    # A code block without a path is neither: the JSON error, which asks for the JSON shape.
    with pytest.raises(EditFormatError, match="no JSON object"):
        parse("```python\nX = 1\n```\n", "json")


def test_whole_files_read_from_a_json_answer_are_checked_for_dropped_definitions(
    tmp_path: Path,
) -> None:
    (tmp_path / "app.py").write_text("def helper():\n    return 1\n\n\nVALUE = 1\n")
    shortened = parse("app.py\n```python\nVALUE = 2\n```\n", "json")
    with pytest.raises(EditFormatError, match="leaves out helper"):
        refuse_dropped_definitions(shortened, tmp_path)


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


@pytest.mark.parametrize(
    "answer",
    [
        # Seen from the embedded 1.5B model in the demo: one fence line closes and opens.
        "```\nstats/core.py\n```python\nX = 1\n```\n",
        "```\nstats/core.py\n```\n```python\nX = 1\n```\n",
        "```text\nstats/core.py\n```\n\n```\nX = 1\n```\n",
    ],
)
def test_whole_path_may_be_fenced_on_its_own(answer: str) -> None:
    assert parse(answer, "whole", lone_block_path="stats/other.py").edits == [
        Edit(path="stats/core.py", content="X = 1\n")
    ]


@pytest.mark.parametrize(
    "label",
    [
        f"  {TEST_FILE_LABEL}",
        f"  {FOCUSED_TEST_FILE_LABEL}",
        "  (test file, read only: its failing tests)",  # copied back shortened
    ],
)
def test_a_test_file_sent_back_with_the_prompts_label_is_that_file(label: str) -> None:
    """Seen from the embedded model: the fix, then the test file copied back with its label."""
    answer = (
        "solution.py\n```python\nX = 1\n```\n\n"
        f"test_solution.py{label}\n```python\nassert X == 1\n```\n"
    )
    assert parse(answer, "whole").edits == [
        Edit(path="solution.py", content="X = 1\n"),
        Edit(path="test_solution.py", content="assert X == 1\n"),
    ]


def test_a_fenced_file_that_holds_a_path_like_line_is_still_a_file() -> None:
    answer = "notes.txt\n```\nstats/core.py\n```\nThat is all.\n"

    assert parse(answer, "whole").edits == [Edit(path="notes.txt", content="stats/core.py\n")]


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


# --- instructions ----------------------------------------------------------------------------


def test_json_instructions_example_is_a_valid_answer() -> None:
    text = instructions("json")
    example = text[text.index("{") : text.rindex("}") + 1]

    assert [e.path for e in parse(example, "json").edits] == ["pkg/mod.py", "pkg/new_module.py"]


def test_instructions_use_a_real_path_of_the_project_as_the_example() -> None:
    text = instructions("whole", "textstats/core.py")
    assert "textstats/core.py" in text
    assert "pkg/mod.py" not in text


UNFENCED = "def mean(xs):\n    return sum(xs) / len(xs)\n"


@pytest.mark.parametrize(
    "answer",
    [
        "#solution.py\n\n" + UNFENCED,  # seen from the embedded model, sampled
        "solution.py\n" + UNFENCED,
        "\n" + UNFENCED,
    ],
)
def test_the_one_file_asked_for_may_come_without_a_fence(answer: str) -> None:
    assert parse(answer, "whole", lone_block_path="solution.py").edits == [
        Edit(path="solution.py", content=UNFENCED)
    ]


@pytest.mark.parametrize(
    ("answer", "asked"),
    [
        (UNFENCED, None),  # no one file was asked for: which file would it be?
        ("other.py\n" + UNFENCED, "solution.py"),  # it names another file
        ("The assumption that xs is never empty is wrong.\n", "solution.py"),  # prose
        ("x = 1\n", "solution.py"),  # code, but it defines nothing: not a file sent back
        (UNFENCED, "README.md"),
    ],
)
def test_unfenced_text_that_is_not_the_file_asked_for_is_still_unusable(
    answer: str, asked: str | None
) -> None:
    with pytest.raises(EditFormatError, match="there is no fenced code block"):
        parse(answer, "whole", lone_block_path=asked)


def test_edit_objects_in_separate_fences_are_all_read_in_order() -> None:
    first = '{"path": "a.py", "search": "1", "replace": "2"}'
    second = '{"explanation": "x", "edits": [{"path": "b.py", "search": "3", "replace": "4"}]}'
    answer = f"First:\n```json\n{first}\n```\nThen:\n```json\n{second}\n```"

    assert parse(answer, "json") == Proposal(
        explanation="x",
        edits=[
            Edit(path="a.py", search="1", replace="2"),
            Edit(path="b.py", search="3", replace="4"),
        ],
        format="json",
    )


def test_an_edit_object_sent_twice_is_read_once() -> None:
    answer = f"```json\n{JSON_ANSWER}\n```\nAgain, in full:\n```json\n{JSON_ANSWER}\n```"

    assert parse(answer, "json").edits == JSON_EDITS
