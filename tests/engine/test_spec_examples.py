"""The spec's examples as tests: the same spec always gives the same file, the file is what
a project's ruff accepts, and it really tells a right implementation from a wrong one."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from engine.spec.definition import load_spec, validate_spec
from engine.spec.examples import example_number, example_tests

REPO = Path(__file__).resolve().parents[2]
EXAMPLE_SPEC = REPO / "examples" / "specs" / "parse_duration.toml"
GOLDEN = REPO / "tests" / "fixtures" / "spec" / "test_parse_duration_examples.py.golden"
RIGHT = """import re

_PART = re.compile(r"(\\d+)([hms])")
_SECONDS = {"h": 3600, "m": 60, "s": 1}


def parse_duration(text: str) -> int:
    if not text or _PART.sub("", text):
        raise ValueError(f"not a duration: {text!r}")
    return sum(int(n) * _SECONDS[unit] for n, unit in _PART.findall(text))
"""
WRONG = RIGHT.replace("int(n) * _SECONDS[unit]", "int(n)")  # ignores the units


def test_the_example_spec_gives_the_golden_file() -> None:
    assert example_tests(load_spec(EXAMPLE_SPEC)) == GOLDEN.read_text(encoding="utf-8")


def test_the_same_spec_always_gives_the_same_text() -> None:
    assert example_tests(load_spec(EXAMPLE_SPEC)) == example_tests(load_spec(EXAMPLE_SPEC))


def test_each_example_has_an_id_that_names_it() -> None:
    text = example_tests(load_spec(EXAMPLE_SPEC))
    assert "id=\"example 2: parse_duration('5m') == 300\"" in text
    assert "id=\"example 5: parse_duration('') raises ValueError\"" in text
    nodeid = "tests/x.py::test_example_returns[example 12: f('a') == 1]"
    assert example_number(nodeid) == 12
    assert example_number("tests/test_durations.py::test_constraint_1") is None


def test_floats_are_compared_approximately_and_module_exceptions_imported() -> None:
    spec = validate_spec(
        {
            **load_spec(EXAMPLE_SPEC).model_dump(exclude={"examples", "signature"}),
            "signature": "ratio(a: int, b: int) -> float",
            "examples": [
                {"call": "ratio(1, 3)", "expected": "0.333333333333"},
                {"call": "ratio(-1, 4)", "expected": "-0.25"},
                {"call": "ratio(1, 0)", "raises": "RatioError"},
                {"call": "ratio('a', 1)", "raises": "TypeError"},
            ],
        }
    )
    text = example_tests(spec)
    assert "pytest.approx(0.333333333333)," in text
    assert "pytest.approx(-0.25)," in text
    assert "from durations import RatioError, ratio\n" in text
    assert "        TypeError,\n" in text  # a builtin: used, never imported


def copy_with(tmp_path: Path, module: str) -> Path:
    """A project holding the module and the generated tests, as spec mode leaves it."""
    root = tmp_path / "project"
    (root / "tests").mkdir(parents=True)
    (root / "durations.py").write_text(module, encoding="utf-8")
    text = example_tests(load_spec(EXAMPLE_SPEC))
    (root / "tests" / "test_parse_duration_examples.py").write_text(text, encoding="utf-8")
    return root


def run(root: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *argv],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_generated_file_passes_ruff_check_and_format(tmp_path: Path) -> None:
    if shutil.which("ruff", path=str(Path(sys.executable).parent)) is None:
        pytest.fail("ruff is part of the dev extra; it is missing from this environment")
    root = copy_with(tmp_path, RIGHT)
    checked = run(root, "ruff", "check", "--isolated", "--select", "E,F,W,I,B,UP", ".")
    assert checked.returncode == 0, checked.stdout
    formatted = run(root, "ruff", "format", "--isolated", "--check", "--diff", ".")
    assert formatted.returncode == 0, formatted.stdout + formatted.stderr


def test_a_right_implementation_passes_every_example(tmp_path: Path) -> None:
    done = run(copy_with(tmp_path, RIGHT), "pytest", "-q", "-p", "no:cacheprovider")
    assert done.returncode == 0, done.stdout
    assert "5 passed" in done.stdout


def test_a_wrong_implementation_fails_the_examples_it_gets_wrong(tmp_path: Path) -> None:
    done = run(copy_with(tmp_path, WRONG), "pytest", "-q", "-p", "no:cacheprovider", "-rf")
    assert done.returncode == 1, done.stdout
    assert "3 failed, 2 passed" in done.stdout
    assert "[example 2: parse_duration('5m') == 300]" in done.stdout
