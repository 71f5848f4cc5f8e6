"""Verifier stages: the configured commands, how each is run, and which of them lie.

A stage command runs without a shell unless it uses shell syntax. A command that
turns a failure into success (`|| true`, `; exit 0`, `set +e`, a pipe into
`tee` ...) is named by `swallows_failure`, so a pass it reports is never trusted.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from engine.errors import StageConfigError
from engine.project.settings import DEFAULT_TEST_CMD, Settings
from engine.verify.results import StageKind
from engine.verify.toolchains import Runner, runner_of

# Cheapest first: a formatting complaint costs milliseconds, a test run seconds.
ORDER = (StageKind.FORMAT, StageKind.LINT, StageKind.TYPES, StageKind.OTHER, StageKind.TESTS)
SHELL_OPERATORS = frozenset({"|", "||", "&", "&&", ";", ";;", "<", ">", ">>", "(", ")", "<<", ">&"})


class Stage(BaseModel):
    """One configured verifier command."""

    model_config = ConfigDict(frozen=True)

    name: str
    kind: StageKind
    cmd: str
    report: str | None = None  # JUnit XML files it writes, a glob in the workspace

    def argv(self) -> list[str]:
        """The argv to execute: the command's own words, or `sh -c` when it needs a shell."""
        if needs_shell(self.cmd):
            return ["sh", "-c", self.cmd]
        try:
            words = shlex.split(self.cmd)
        except ValueError as exc:
            raise StageConfigError(
                f"stage {self.name!r}: cannot parse {self.cmd!r}: {exc}"
            ) from exc
        if not words:
            raise StageConfigError(f"stage {self.name!r} has an empty command")
        return words

    @property
    def runner(self) -> Runner | None:
        """The test runner it starts, when its structured report can be read."""
        return runner_of(self.cmd)

    @property
    def runs_pytest(self) -> bool:
        return self.runner == "pytest"


def needs_shell(cmd: str) -> bool:
    """Does `cmd` use shell syntax (operators, expansions, redirections, globs)?"""
    if re.search(r"\$|`|(^|\s)(export|set|cd|source|\.)\s", cmd):
        return True
    try:
        lexer = shlex.shlex(cmd, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        tokens = list(lexer)
    except ValueError:
        return True
    if any(token in SHELL_OPERATORS for token in tokens):
        return True
    unquoted = re.sub(r"'[^']*'|\"[^\"]*\"", "", cmd)
    return bool(re.search(r"[*?\[]|^~|\s~", unquoted))


# (pattern, what it does). Matched against the command with quoted strings removed.
SWALLOWERS: tuple[tuple[str, str], ...] = (
    (r"\|\|\s*(true|:|/bin/true|/usr/bin/true)\b", "`|| true` turns any failure into success"),
    (r"\|\|\s*:", "`|| :` turns any failure into success"),
    (r"\|\|\s*exit\s+0\b", "`|| exit 0` turns any failure into success"),
    (r"\|\|\s*echo\b", "`|| echo` turns any failure into success"),
    (r"\|\|\s*printf\b", "`|| printf` turns any failure into success"),
    (r"(;|&&|\n|^)\s*exit\s+0\s*(;|$)", "`exit 0` ends the command successfully whatever happened"),
    (r"(;|\n)\s*(true|:)\s*$", "a trailing `true` makes the command's status success"),
    (r"\bset\s+\+e\b", "`set +e` keeps going after a failing command"),
    (r"(^|[\s;&|])--exit-zero\b", "`--exit-zero` reports success whatever was found"),
    (r"(^|[\s;&|])-p\s+no:(terminal|runner|python)\b", "disables a core pytest plugin"),
)


def swallows_failure(cmd: str) -> str | None:
    """Why `cmd` can exit 0 after its verifier failed, or None when it cannot."""
    unquoted = re.sub(r"'[^']*'|\"[^\"]*\"", "''", cmd)
    for pattern, why in SWALLOWERS:
        if re.search(pattern, unquoted):
            return why
    if _pipes_away_status(unquoted):
        return "a pipe: the command's status is the last program's, not the verifier's"
    return None


def _pipes_away_status(cmd: str) -> bool:
    if "pipefail" in cmd:
        return False
    return re.search(r"(?<!\|)\|(?!\|)", cmd) is not None


def kind_of(cmd: str, default: StageKind) -> StageKind:
    """What a command checks, from the tool it runs; `default` when unknown."""
    words = {Path(word).name for word in re.split(r"[\s;&|()]+", cmd)}
    if runner_of(cmd) is not None:
        return StageKind.TESTS
    if ("ruff" in words and "format" in words) or words & {"gofmt", "prettier"}:
        return StageKind.FORMAT
    if words & {"ruff", "flake8", "pylint", "eslint", "golangci-lint", "staticcheck"} or (
        "go" in words and "vet" in words
    ):
        return StageKind.LINT
    if words & {"mypy", "pyright", "tsc"}:
        return StageKind.TYPES
    return default


def fix_stage(settings: Settings) -> Stage | None:
    """The fix pass's command (`fix_cmd`), run before the stages with its changes kept
    (engine/verify/fix.py); None when none is configured. Checked like a stage's."""
    cmd = settings.fix_cmd
    if cmd is None:
        return None
    if not cmd.strip():
        raise StageConfigError("fix_cmd must be a non-empty command")
    stage = Stage(name="fix", kind=kind_of(cmd, StageKind.FORMAT), cmd=cmd.strip())
    stage.argv()
    return stage


def configured_stages(settings: Settings) -> list[Stage]:
    """The stages `settings` name (format, lint, types, tests; pytest when no test command is
    configured), sorted cheapest first. A command that cannot be parsed fails here."""
    commands = {
        StageKind.FORMAT: ("format_cmd", settings.format_cmd),
        StageKind.LINT: ("lint_cmd", settings.lint_cmd),
        StageKind.TYPES: ("type_cmd", settings.type_cmd),
        StageKind.TESTS: ("test_cmd", settings.test_cmd or DEFAULT_TEST_CMD),
    }
    stages = []
    for kind, (setting, cmd) in commands.items():
        if cmd is None:
            continue
        if not cmd.strip():
            raise StageConfigError(f"{setting} must be a non-empty command")
        report = settings.test_report if kind is StageKind.TESTS else None
        stage = Stage(name=kind.value, kind=kind_of(cmd, kind), cmd=cmd.strip(), report=report)
        stage.argv()  # a command that cannot be parsed fails now, not in the sandbox
        stages.append(stage)
    fix_stage(settings)  # a fix command that cannot be parsed fails now too
    return sorted(stages, key=lambda stage: ORDER.index(stage.kind))
