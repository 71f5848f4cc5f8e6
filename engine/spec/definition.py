"""Spec mode's input: a structured spec — the function's signature with type hints,
what it does, examples and constraints — read from TOML and checked field by field.

Every problem is one line naming the field or the example, so a person can fix the spec
without guessing. Examples may use literals and Python builtins only: fixloop turns them into
tests itself (`engine.spec.examples`), and they must mean the same thing everywhere.
"""

from __future__ import annotations

import ast
import builtins
import json
import re
import tomllib
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from engine.errors import SpecError
from engine.project.paths import FIXLOOP_DIR
from engine.project.pins import is_test_file
from engine.spec.references import Params, misfit

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_RAISES_LINE = re.compile(r"^(?P<call>.+?)\s+raises\s+(?P<error>\S+)\s*$")
_BUILTINS = frozenset(dir(builtins))
FIELDS = ("name", "module", "tests", "signature", "description", "examples", "constraints")
EXAMPLE_FIELDS = ("call", "expected", "raises")


class FunctionSignature(BaseModel):
    """A parsed `signature`: the function's name and what its calls must fit."""

    model_config = ConfigDict(frozen=True)

    name: str
    params: Params

    @property
    def text(self) -> str:
        return self.params.text


def parse_signature(text: str) -> FunctionSignature:
    """`parse_duration(text: str) -> int` (a leading `def` and a trailing `:` are fine)."""
    shown = " ".join(text.split())
    source = shown.removeprefix("def ").removesuffix(":").strip()
    try:
        tree = ast.parse(f"def {source}:\n    pass\n")
    except SyntaxError as exc:
        raise ValueError(
            f"signature `{shown}` is not a function signature like "
            f"parse_duration(text: str) -> int ({exc.msg})"
        ) from None
    [node] = tree.body
    assert isinstance(node, ast.FunctionDef)
    args = node.args
    for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
        if arg is not None and arg.annotation is None:
            raise ValueError(
                f"signature `{shown}`: parameter {arg.arg!r} has no type hint (like {arg.arg}: str)"
            )
    if node.returns is None:
        raise ValueError(f"signature `{shown}` has no return type (add one, like -> int)")
    return FunctionSignature(name=node.name, params=Params.of(node.name, node))


class Example(BaseModel):
    """One call and what it must give: a value (`expected`) or an exception (`raises`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    call: str
    expected: str | None = None
    raises: str | None = None

    @field_validator("call")
    @classmethod
    def _call_is_a_call(cls, value: str) -> str:
        node = _expression(value, "call")
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
            raise ValueError(f"call `{value}` is not a call of the function, like f('5m')")
        for part in [*node.args, *(k.value for k in node.keywords)]:
            _only_builtins(part, f"call `{value}`")
        return ast.unparse(node)

    @field_validator("expected")
    @classmethod
    def _expected_is_a_value(cls, value: str | None) -> str | None:
        if value is None:
            return None
        node = _expression(value, "expected")
        _only_builtins(node, f"expected `{value}`")
        return ast.unparse(node)

    @field_validator("raises")
    @classmethod
    def _raises_is_an_exception(cls, value: str | None) -> str | None:
        if value is None:
            return None
        name = value.strip()
        if not _IDENTIFIER.fullmatch(name):
            raise ValueError(f"raises `{value}` is not an exception name like ValueError")
        builtin = getattr(builtins, name, None)
        if name in _BUILTINS and not (
            isinstance(builtin, type) and issubclass(builtin, BaseException)
        ):
            raise ValueError(f"raises `{value}` is not an exception class")
        return name

    @model_validator(mode="after")
    def _one_outcome(self) -> Example:
        if self.expected is not None and self.raises is not None:
            raise ValueError("give either expected or raises, not both")
        if self.expected is None and self.raises is None:
            raise ValueError("give expected (a value) or raises (an exception name)")
        return self

    @property
    def function(self) -> str:
        node = ast.parse(self.call, mode="eval").body
        assert isinstance(node, ast.Call)
        assert isinstance(node.func, ast.Name)
        return node.func.id

    def line(self) -> str:
        """`parse_duration('5m') == 300` or `parse_duration('') raises ValueError`."""
        if self.raises is not None:
            return f"{self.call} raises {self.raises}"
        return f"{self.call} == {self.expected}"


class Spec(BaseModel):
    """What spec mode builds: a module with one function, and tests from the spec alone."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    module: str
    tests: str
    signature: str
    description: str
    examples: list[Example] = Field(min_length=1)
    constraints: list[str] = Field(default_factory=list)

    @field_validator("name")
    @classmethod
    def _name_is_an_identifier(cls, value: str) -> str:
        if not _IDENTIFIER.fullmatch(value):
            raise ValueError(
                f"name {value!r} must be letters, digits and _ (it names the examples' test file)"
            )
        return value

    @field_validator("module")
    @classmethod
    def _module_path(cls, value: str) -> str:
        path = _project_path(value, "module")
        if is_test_file(path):
            raise ValueError(f"module {value} is a test file; name the module to create")
        return path

    @field_validator("tests")
    @classmethod
    def _tests_path(cls, value: str) -> str:
        path = _project_path(value, "tests")
        name = PurePosixPath(path).name
        if not (name.startswith("test_") or name.endswith("_test.py")):
            raise ValueError(f"tests {value} is not a file pytest collects; name it test_*.py")
        return path

    @field_validator("signature")
    @classmethod
    def _signature_parses(cls, value: str) -> str:
        return parse_signature(value).text

    @field_validator("description")
    @classmethod
    def _description_is_given(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("description is empty: say what the function does")
        return value.strip()

    @field_validator("constraints")
    @classmethod
    def _constraints_are_given(cls, value: list[str]) -> list[str]:
        for number, constraint in enumerate(value, start=1):
            if not constraint.strip():
                raise ValueError(f"constraint {number} is empty")
        return [" ".join(c.split()) for c in value]

    @model_validator(mode="after")
    def _examples_fit_the_signature(self) -> Spec:
        function = self.function
        seen: dict[str, int] = {}
        for number, example in enumerate(self.examples, start=1):
            if example.function != function.name:
                raise ValueError(
                    f"example {number}: `{example.call}` calls {example.function}, but the "
                    f"signature is {function.text}"
                )
            call = ast.parse(example.call, mode="eval").body
            assert isinstance(call, ast.Call)
            why = misfit(function.params, call)
            if why is not None:
                raise ValueError(
                    f"example {number}: `{example.call}` does not fit {function.text}: "
                    f"the function {why}"
                )
            if example.call in seen:
                raise ValueError(f"example {number}: the same call as example {seen[example.call]}")
            seen[example.call] = number
        if self.module == self.tests or self.examples_file in (self.module, self.tests):
            raise ValueError(
                f"module, tests and the examples' file {self.examples_file} must be three "
                "different files"
            )
        return self

    # -- what the rest of fixloop reads ---------------------------------------------------

    @property
    def function(self) -> FunctionSignature:
        return parse_signature(self.signature)

    @property
    def import_name(self) -> str:
        """`pkg/durations.py` is imported as `pkg.durations` (a `src/` layout's prefix dropped)."""
        parts = list(PurePosixPath(self.module).with_suffix("").parts)
        if parts[0] == "src" and len(parts) > 1:
            parts = parts[1:]
        if parts[-1] == "__init__" and len(parts) > 1:
            parts = parts[:-1]
        return ".".join(parts)

    @property
    def examples_file(self) -> str:
        """The examples as tests, written by fixloop beside the model's tests."""
        return str(PurePosixPath(self.tests).parent / f"test_{self.name}_examples.py")

    @property
    def task(self) -> str:
        """One line for logs, reports and the accepted commit's subject."""
        return f"spec {self.name}: write {self.module} and its tests {self.tests}"

    def text(self) -> str:
        """The spec as the model reads it (no file is shown with it)."""
        parts = [
            f"Write {self.module} with this function:\n\ndef {self.signature}",
            f"What it does:\n{self.description}",
            "Examples:\n" + "\n".join(f"- {e.line()}" for e in self.examples),
        ]
        if self.constraints:
            numbered = (f"{n}. {c}" for n, c in enumerate(self.constraints, start=1))
            parts.append("Constraints:\n" + "\n".join(numbered))
        return "\n\n".join(parts)

    def to_toml(self) -> str:
        """The spec as a TOML file that loads back into the same spec."""
        lines = [f"{key} = {_toml_string(getattr(self, key))}" for key in FIELDS[:4]]
        lines.append(f"description = {_toml_string(self.description)}")
        lines.append("examples = [")
        for example in self.examples:
            fields = [
                f"{key} = {_toml_string(value)}"
                for key in EXAMPLE_FIELDS
                if (value := getattr(example, key)) is not None
            ]
            lines.append(f"    {{{', '.join(fields)}}},")
        lines.append("]")
        lines.append("constraints = [")
        lines += [f"    {_toml_string(c)}," for c in self.constraints]
        lines.append("]")
        return "\n".join(lines) + "\n"


# --- reading a spec ---------------------------------------------------------------------------


def load_spec(path: Path) -> Spec:
    """The spec in a TOML file; a `SpecError` (one line, naming the file) otherwise."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError(f"spec {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"spec {path}: cannot be read ({exc})") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"spec {path}: not valid TOML: {exc}") from None
    return validate_spec(data, f"spec {path}")


def validate_spec(data: dict[str, Any], source: str = "spec") -> Spec:
    """A spec from already-parsed values (a TOML table, a form's fields)."""
    try:
        return Spec.model_validate(data)
    except ValidationError as exc:
        message, field = _first_problem(exc)
        raise SpecError(f"{source}: {message}", field) from None


def check_new_files(spec: Spec, project: Path) -> None:
    """Spec mode creates its files: one that exists already is a `SpecError`."""
    for field, path in (
        ("module", spec.module),
        ("tests", spec.tests),
        ("name", spec.examples_file),
    ):
        if (project / path).exists():
            raise SpecError(
                f"spec {spec.name}: {path} already exists in {project}; spec mode creates it "
                f"(delete or rename it, or change the spec's {field})",
                field,
            )


def parse_example_line(line: str) -> dict[str, str]:
    """A form's example line as TOML's fields: `f('5m') == 300` or `f('') raises ValueError`."""
    text = line.strip()
    match = _RAISES_LINE.match(text)
    if match:
        return {"call": match["call"], "raises": match["error"]}
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError:
        node = None
    if (
        isinstance(node, ast.Compare)
        and len(node.ops) == 1
        and isinstance(node.ops[0], ast.Eq)
        and isinstance(node.left, ast.Call)
    ):
        return {"call": ast.unparse(node.left), "expected": ast.unparse(node.comparators[0])}
    return {"call": text}  # no outcome: validation says what is missing


def _first_problem(exc: ValidationError) -> tuple[str, str]:
    """(message, field) for the first error pydantic found, in the spec's own words."""
    error = exc.errors()[0]
    loc = [part for part in error["loc"]]
    kind = error["type"]
    message = str(error["msg"]).removeprefix("Value error, ")
    field = str(loc[0]) if loc else ""
    where = ""
    if field == "examples" and len(loc) >= 2 and isinstance(loc[1], int):
        where = f"example {loc[1] + 1}: "
        loc = loc[2:]
        known: tuple[str, ...] = EXAMPLE_FIELDS
    else:
        loc = loc[1:] if field == "examples" else loc
        known = FIELDS
    key = str(loc[0]) if loc else field
    if not field:  # the spec as a whole: the message names what it is about
        field = "examples" if message.startswith("example ") else "tests"
    if where and not loc and kind.endswith("_type"):
        return f'{where}must be a table like {{call = "f(1)", expected = "2"}}', field
    if kind == "missing":
        return f"{where}missing field {key!r}", field
    if kind == "extra_forbidden":
        return f"{where}unknown field {key!r} (known: {', '.join(known)})", field
    if kind == "too_short" and field == "examples":
        return (
            "examples: none given; add at least one, like "
            '{call = "parse_duration(\'5m\')", expected = "300"}',
            field,
        )
    if kind.endswith("_type"):
        return f"{where}field {key!r}: {message}", field
    return f"{where}{message}", field


def _expression(value: str, field: str) -> ast.expr:
    text = " ".join(value.split())
    try:
        return ast.parse(text, mode="eval").body
    except SyntaxError as exc:
        raise ValueError(f"{field} `{text}` does not parse: {exc.msg}") from None


def _only_builtins(node: ast.AST, what: str) -> None:
    for name in ast.walk(node):
        if isinstance(name, ast.Name) and name.id not in _BUILTINS:
            raise ValueError(
                f"{what} uses {name.id}; examples may use literals and Python builtins only"
            )


def _project_path(value: str, field: str) -> str:
    path = value.strip().replace("\\", "/")
    pure = PurePosixPath(path)
    if not path or pure.is_absolute() or re.match(r"^[A-Za-z]:", path):
        raise ValueError(f"{field} {value!r} must be a path inside the project, like pkg/mod.py")
    if ".." in pure.parts or pure.parts[0] in {".git", FIXLOOP_DIR}:
        raise ValueError(f"{field} {value} must stay inside the project (no .., .git, .fixloop)")
    if pure.suffix != ".py":
        raise ValueError(f"{field} {value} must be a Python file ending in .py")
    if not all(_IDENTIFIER.fullmatch(part) for part in pure.with_suffix("").parts):
        raise ValueError(f"{field} {value}: every part of the path must be a Python name")
    return str(pure)


def _toml_string(value: str) -> str:
    """A TOML basic string; JSON's escapes are TOML's."""
    return json.dumps(value, ensure_ascii=False)
