"""A commit's subject when the model gave no explanation: the first function or class the
change touched, read from the texts (parsed, never run)."""

from __future__ import annotations

from engine.project.changed_code import change_subject, first_changed_definition
from engine.project.workspace import iteration_message

CORE = '''"""Text statistics."""

import re


def word_count(text):
    return len(re.findall(r"\\w+", text))


def mean_word_length(text):
    found = re.findall(r"\\w+", text)
    return sum(len(w) for w in found) // len(found)


class Counter:
    @staticmethod
    def top(words, n):
        return words[: n - 1]
'''
MEAN_FIXED = CORE.replace("// len(found)", "/ len(found)")
TOP_FIXED = CORE.replace("words[: n - 1]", "words[:n]")


def test_the_function_whose_body_changed_is_named() -> None:
    assert first_changed_definition("textstats/core.py", CORE, MEAN_FIXED) == "mean_word_length"


def test_a_method_is_named_with_its_class() -> None:
    assert first_changed_definition("textstats/core.py", CORE, TOP_FIXED) == "Counter.top"


def test_a_change_outside_any_definition_names_none() -> None:
    after = CORE.replace("import re\n", "import re\nimport math\n")
    assert first_changed_definition("textstats/core.py", CORE, after) is None


def test_a_deleted_function_is_named_from_the_old_text() -> None:
    after = CORE.replace('def word_count(text):\n    return len(re.findall(r"\\w+", text))\n', "")
    assert first_changed_definition("textstats/core.py", CORE, after) == "word_count"


def test_code_that_does_not_parse_names_no_definition() -> None:
    assert first_changed_definition("x.py", "def f(:\n  1\n", "def f(:\n  2\n") is None


def test_the_subject_names_the_file_and_how_many_others_changed() -> None:
    changes = [
        ("textstats/core.py", CORE, MEAN_FIXED),
        ("README.md", "a\n", "b\n"),
        ("notes.txt", None, "new\n"),
    ]
    assert change_subject(changes) == "edit mean_word_length in textstats/core.py and 2 more files"
    assert change_subject(changes[1:2]) == "edit README.md"
    assert change_subject(changes[2:]) == "add notes.txt"


def test_a_commit_without_explanation_names_the_changed_function() -> None:
    message = iteration_message(1, 4, "  \n", [("textstats/core.py", CORE, MEAN_FIXED)])
    assert message == "fixloop[iter 1/4]: edit mean_word_length in textstats/core.py"


def test_a_commit_with_an_explanation_keeps_it() -> None:
    message = iteration_message(
        1, 4, "use true division", [("textstats/core.py", CORE, MEAN_FIXED)]
    )
    assert message == "fixloop[iter 1/4]: use true division"


def test_code_nested_too_deep_to_parse_names_no_definition() -> None:
    nested = "X = " + "1+" * 3000 + "1\n"
    assert first_changed_definition("x.py", "X = 1\n", nested) is None
