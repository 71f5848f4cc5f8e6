"""Stage commands: run without a shell unless needed; commands that swallow failure are named."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.errors import ConfigError, StageConfigError
from engine.project.settings import Settings, load_settings
from engine.verify.execute import stage_argv
from engine.verify.results import StageKind
from engine.verify.stages import Stage, configured_stages, needs_shell, swallows_failure


@pytest.mark.parametrize(
    "cmd",
    [
        "pytest -q || true",
        "pytest -q || :",
        "pytest -q || exit 0",
        "pytest; exit 0",
        "set +e; pytest",
        "pytest || echo failed",
        "pytest | tee log.txt",
        "ruff check --exit-zero .",
        "pytest -q; true",
    ],
)
def test_commands_that_swallow_failure_are_detected(cmd: str) -> None:
    assert swallows_failure(cmd) is not None


@pytest.mark.parametrize(
    "cmd",
    [
        "python -m pytest -q",
        "pytest -q && ruff check .",
        "set -o pipefail; pytest | tee log.txt",
        "pytest -k 'true or false'",
        "ruff check .",
    ],
)
def test_honest_commands_are_not_flagged(cmd: str) -> None:
    assert swallows_failure(cmd) is None


def test_a_plain_command_runs_without_a_shell() -> None:
    stage = Stage(name="tests", kind=StageKind.TESTS, cmd="python -m pytest -q -k 'a and b'")
    assert stage.argv() == ["python", "-m", "pytest", "-q", "-k", "a and b"]


@pytest.mark.parametrize("cmd", ["pytest && ruff check .", "pytest > out.txt", "cd sub; pytest"])
def test_shell_syntax_runs_under_sh(cmd: str) -> None:
    assert needs_shell(cmd)
    assert Stage(name="x", kind=StageKind.OTHER, cmd=cmd).argv() == ["sh", "-c", cmd]


def test_unbalanced_quotes_are_left_to_the_shell_to_report() -> None:
    stage = Stage(name="tests", kind=StageKind.TESTS, cmd="pytest -k 'oops")
    assert stage.argv() == ["sh", "-c", "pytest -k 'oops"]


def test_ruff_and_mypy_are_switched_to_json() -> None:
    ruff = Stage(name="lint", kind=StageKind.LINT, cmd="ruff check .")
    mypy = Stage(name="types", kind=StageKind.TYPES, cmd="python -m mypy pkg")
    assert stage_argv(ruff) == ["ruff", "check", ".", "--output-format", "json"]
    assert stage_argv(mypy) == ["python", "-m", "mypy", "pkg", "-O", "json"]


def test_an_explicit_ruff_output_format_is_kept() -> None:
    ruff = Stage(name="lint", kind=StageKind.LINT, cmd="ruff check --output-format=json .")
    assert stage_argv(ruff) == ["ruff", "check", "--output-format=json", "."]


def test_stages_are_ordered_cheapest_first() -> None:
    stages = configured_stages(
        Settings(test_cmd="pytest -q", lint_cmd="ruff check .", type_cmd="mypy .")
    )
    assert [s.kind for s in stages] == [StageKind.LINT, StageKind.TYPES, StageKind.TESTS]


def project_settings(project: Path, **flags: str) -> Settings:
    return load_settings(project, flags, environ={}, user_config=project / "none.toml")


def test_stages_come_from_tool_fixloop_when_no_flag_is_given(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.fixloop]\ntest_cmd = "pytest -x"\nlint_cmd = "ruff check src"\n'
    )
    stages = configured_stages(project_settings(tmp_path))
    assert [s.cmd for s in stages] == ["ruff check src", "pytest -x"]


def test_a_flag_wins_over_tool_fixloop(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.fixloop]\ntest_cmd = "pytest -x"\n')
    stages = configured_stages(project_settings(tmp_path, test_cmd="pytest -q tests"))
    assert [s.cmd for s in stages] == ["pytest -q tests"]


def test_a_broken_pyproject_is_a_one_line_error(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.fixloop\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        project_settings(tmp_path)


def test_a_blank_command_is_a_configuration_error() -> None:
    with pytest.raises(StageConfigError, match="lint_cmd must be a non-empty command"):
        configured_stages(Settings(lint_cmd="  "))


def test_pytest_is_the_default_test_stage() -> None:
    assert [s.cmd for s in configured_stages(Settings())] == ["python -m pytest -q"]
