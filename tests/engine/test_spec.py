"""Spec files: every way a spec can be wrong is one line naming the field or the example."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from engine.errors import SpecError
from engine.spec.definition import (
    Spec,
    check_new_files,
    load_spec,
    parse_example_line,
    parse_signature,
    validate_spec,
)

REPO = Path(__file__).resolve().parents[2]
EXAMPLE_SPEC = REPO / "examples" / "specs" / "parse_duration.toml"
SIGNATURE = "parse_duration(text: str) -> int"


def spec_data(**changes: Any) -> dict[str, Any]:
    """The example spec's fields, changed; a value of None removes the field."""
    data = tomllib.loads(EXAMPLE_SPEC.read_text(encoding="utf-8"))
    for key, value in changes.items():
        if value is None:
            data.pop(key)
        else:
            data[key] = value
    return data


def problem(**changes: Any) -> tuple[str, str]:
    with pytest.raises(SpecError) as refused:
        validate_spec(spec_data(**changes), "spec s.toml")
    message = str(refused.value)
    assert "\n" not in message
    return message.removeprefix("spec s.toml: "), refused.value.field


def example(call: str, **outcome: str) -> list[dict[str, str]]:
    return [{"call": call, **outcome}]


def test_the_example_spec_loads() -> None:
    spec = load_spec(EXAMPLE_SPEC)
    assert spec.function.name == "parse_duration"
    assert spec.signature == SIGNATURE
    assert len(spec.examples) == 5
    assert len(spec.constraints) == 3
    assert spec.import_name == "durations"
    assert spec.examples_file == "tests/test_parse_duration_examples.py"


def test_a_spec_round_trips_through_its_toml() -> None:
    spec = load_spec(EXAMPLE_SPEC)
    assert validate_spec(tomllib.loads(spec.to_toml())) == spec


def test_a_signature_may_be_written_as_a_def() -> None:
    assert parse_signature("def parse_duration(text: str) -> int:").params.text == SIGNATURE


@pytest.mark.parametrize(
    ("signature", "message"),
    [
        (
            "parse_duration(text) -> int",
            "signature `parse_duration(text) -> int`: parameter 'text' has no type hint "
            "(like text: str)",
        ),
        (
            "parse_duration(text: str)",
            "signature `parse_duration(text: str)` has no return type (add one, like -> int)",
        ),
        (
            "parse_duration(text: str -> int",
            "signature `parse_duration(text: str -> int` is not a function signature like "
            "parse_duration(text: str) -> int (invalid syntax)",
        ),
        (
            "parse_duration(text: str, *parts) -> int",
            "signature `parse_duration(text: str, *parts) -> int`: parameter 'parts' has no "
            "type hint (like parts: str)",
        ),
    ],
)
def test_a_bad_signature_says_what_is_missing(signature: str, message: str) -> None:
    assert problem(signature=signature) == (message, "signature")


def test_a_missing_field_is_named() -> None:
    assert problem(signature=None) == ("missing field 'signature'", "signature")


def test_an_unknown_field_lists_the_known_ones() -> None:
    assert problem(title="x") == (
        "unknown field 'title' (known: name, module, tests, signature, description, "
        "examples, constraints)",
        "title",
    )


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"name": "parse duration"},
            "name 'parse duration' must be letters, digits and _ (it names the examples' "
            "test file)",
        ),
        (
            {"module": "/abs/durations.py"},
            "module '/abs/durations.py' must be a path inside the project, like pkg/mod.py",
        ),
        (
            {"module": "../durations.py"},
            "module ../durations.py must stay inside the project (no .., .git, .fixloop)",
        ),
        ({"module": "durations.txt"}, "module durations.txt must be a Python file ending in .py"),
        (
            {"module": "tests/test_x.py"},
            "module tests/test_x.py is a test file; name the module to create",
        ),
        (
            {"module": "my-durations.py"},
            "module my-durations.py: every part of the path must be a Python name",
        ),
        (
            {"tests": "tests/durations.py"},
            "tests tests/durations.py is not a file pytest collects; name it test_*.py",
        ),
        ({"description": "  \n"}, "description is empty: say what the function does"),
        ({"constraints": ["fine", " "]}, "constraint 2 is empty"),
        ({"constraints": "one"}, "field 'constraints': Input should be a valid list"),
    ],
)
def test_a_bad_field_is_one_line_naming_it(changes: dict[str, Any], message: str) -> None:
    field = next(iter(changes))
    assert problem(**changes) == (message, field)


def test_the_three_files_must_differ() -> None:
    assert problem(name="x", tests="tests/test_x_examples.py") == (
        "module, tests and the examples' file tests/test_x_examples.py must be three "
        "different files",
        "tests",
    )


def test_no_examples_says_how_to_write_one() -> None:
    assert problem(examples=[]) == (
        "examples: none given; add at least one, like "
        '{call = "parse_duration(\'5m\')", expected = "300"}',
        "examples",
    )


@pytest.mark.parametrize(
    ("examples", "message"),
    [
        (
            ["parse_duration('5m')"],
            'example 1: must be a table like {call = "f(1)", expected = "2"}',
        ),
        (
            example("parse_duration('5m'", expected="300"),
            "example 1: call `parse_duration('5m'` does not parse: '(' was never closed",
        ),
        (
            example("300", expected="300"),
            "example 1: call `300` is not a call of the function, like f('5m')",
        ),
        (
            example("parse_durations('5m')", expected="300"),
            "example 1: `parse_durations('5m')` calls parse_durations, but the signature is "
            f"{SIGNATURE}",
        ),
        (
            example("parse_duration('5m', 60)", expected="300"),
            f"example 1: `parse_duration('5m', 60)` does not fit {SIGNATURE}: the function takes "
            "1 positional argument but 2 were given",
        ),
        (
            example("parse_duration(txt='5m')", expected="300"),
            f"example 1: `parse_duration(txt='5m')` does not fit {SIGNATURE}: the function has "
            "no parameter 'txt' that can be passed by keyword",
        ),
        (
            example("parse_duration()", expected="0"),
            f"example 1: `parse_duration()` does not fit {SIGNATURE}: the function is missing "
            "the required argument 'text'",
        ),
        (
            example("parse_duration(DEFAULT)", expected="300"),
            "example 1: call `parse_duration(DEFAULT)` uses DEFAULT; examples may use literals "
            "and Python builtins only",
        ),
        (
            example("parse_duration('5m')", expected="FIVE_MINUTES"),
            "example 1: expected `FIVE_MINUTES` uses FIVE_MINUTES; examples may use literals "
            "and Python builtins only",
        ),
        (
            example("parse_duration('5m')", expected="3 00"),
            "example 1: expected `3 00` does not parse: invalid syntax",
        ),
        (
            example("parse_duration('5m')", expected="300", raises="ValueError"),
            "example 1: give either expected or raises, not both",
        ),
        (
            example("parse_duration('5m')"),
            "example 1: give expected (a value) or raises (an exception name)",
        ),
        (
            example("parse_duration('5m')", raises="value error"),
            "example 1: raises `value error` is not an exception name like ValueError",
        ),
        (
            example("parse_duration('5m')", raises="int"),
            "example 1: raises `int` is not an exception class",
        ),
        (
            [{"call": "parse_duration('5m')", "expect": "300"}],
            "example 1: unknown field 'expect' (known: call, expected, raises)",
        ),
        ([{"expected": "300"}], "example 1: missing field 'call'"),
        (
            [
                {"call": "parse_duration('5m')", "expected": "300"},
                {"call": "parse_duration( '5m' )", "expected": "301"},
            ],
            "example 2: the same call as example 1",
        ),
    ],
)
def test_a_bad_example_is_one_line_naming_it(examples: list[Any], message: str) -> None:
    assert problem(examples=examples) == (message, "examples")


def test_builtins_and_exceptions_of_the_module_are_allowed() -> None:
    spec = validate_spec(
        spec_data(
            examples=[
                {"call": "parse_duration(str(5) + 'm')", "expected": "int('300')"},
                {"call": "parse_duration('5 fortnights')", "raises": "DurationError"},
            ]
        )
    )
    assert [e.line() for e in spec.examples] == [
        "parse_duration(str(5) + 'm') == int('300')",
        "parse_duration('5 fortnights') raises DurationError",
    ]


def test_a_file_that_is_not_toml_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "spec.toml"
    path.write_text('name = "x"\nmodule = \n', encoding="utf-8")
    with pytest.raises(SpecError) as refused:
        load_spec(path)
    assert str(refused.value).startswith(f"spec {path}: not valid TOML: ")
    assert "\n" not in str(refused.value)


def test_a_missing_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as refused:
        load_spec(tmp_path / "nope.toml")
    assert str(refused.value) == f"spec {tmp_path / 'nope.toml'}: no such file"


def test_files_that_exist_already_are_refused(tmp_path: Path) -> None:
    spec = load_spec(EXAMPLE_SPEC)
    check_new_files(spec, tmp_path)  # none exists: fine
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_durations.py").write_text("", encoding="utf-8")
    with pytest.raises(SpecError) as refused:
        check_new_files(spec, tmp_path)
    assert str(refused.value) == (
        f"spec parse_duration: tests/test_durations.py already exists in {tmp_path}; spec mode "
        "creates it (delete or rename it, or change the spec's tests)"
    )


@pytest.mark.parametrize(
    ("module", "import_name"),
    [
        ("durations.py", "durations"),
        ("timeparse/durations.py", "timeparse.durations"),
        ("src/timeparse/durations.py", "timeparse.durations"),
        ("timeparse/__init__.py", "timeparse"),
    ],
)
def test_the_module_path_gives_its_import_name(module: str, import_name: str) -> None:
    assert validate_spec(spec_data(module=module)).import_name == import_name


@pytest.mark.parametrize(
    ("line", "fields"),
    [
        ("parse_duration('5m') == 300", {"call": "parse_duration('5m')", "expected": "300"}),
        (
            "parse_duration('') raises ValueError",
            {"call": "parse_duration('')", "raises": "ValueError"},
        ),
        ("parse_duration('a == b')", {"call": "parse_duration('a == b')"}),
    ],
)
def test_a_form_line_becomes_an_example(line: str, fields: dict[str, str]) -> None:
    assert parse_example_line(line) == fields


def test_the_prompt_text_holds_the_whole_spec() -> None:
    spec: Spec = load_spec(EXAMPLE_SPEC)
    text = spec.text()
    assert text.startswith(f"Write durations.py with this function:\n\ndef {SIGNATURE}")
    assert "- parse_duration('5m') == 300" in text
    assert "- parse_duration('') raises ValueError" in text
    assert "3. the parts add up: '1m30s' is 90" in text
