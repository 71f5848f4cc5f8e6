"""Run settings from every source, with this precedence (ARCHITECTURE.md, "Settings and
files on disk"): flags > environment (`FIXLOOP_*`) > `[tool.fixloop]` in the project's
pyproject.toml > `~/.config/fixloop/config.toml` > the defaults written on `Settings`.

Each source is checked on its own, so an unknown key or a bad value is one line
naming the key and the file it came from.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from engine.errors import ConfigError, StrategyError, UntrustedSettings
from engine.project.detect import detected_layer
from engine.project.strategy import (
    DEFAULT_STRATEGY,
    LEVERS,
    Strategy,
    fold_levers,
    resolve_strategy,
)
from engine.project.trust import RepoTrust, TrustStore, digest_of, refusal, restricted_in

# The most answers an iteration may ask for (`candidates`).
MAX_CANDIDATES = 8


class Settings(BaseModel):
    """Everything a run can be configured with, and its defaults: fixloop's only ones (with
    DEFAULT_TEST_CMD below). A source sets some fields; None means "none configured"."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _levers_in_the_strategy(cls, values: Any) -> Any:
        return fold_levers(values)  # a run record written before strategies

    @field_validator("strategy", mode="before")
    @classmethod
    def _named_or_table(cls, value: Any) -> Any:
        if isinstance(value, str):
            return resolve_strategy({"preset": value})
        if isinstance(value, Mapping):
            return resolve_strategy(value)
        return value

    task: str | None = None
    spec: Path | None = None  # spec mode: a spec TOML file (engine/spec/definition.py)
    # Files every prompt shows: the person's `--file`, or the project's config. Files of the
    # project only (no link out, nothing under .git, none too large), checked before a run
    # starts (engine/run/talk.py, `checked_files`). A repository cannot name what leaves the
    # machine beyond its own files; more are added only by the person, in the app.
    files: list[str] | None = None
    test_cmd: str | None = None  # None: DEFAULT_TEST_CMD
    lint_cmd: str | None = None
    type_cmd: str | None = None
    format_cmd: str | None = None
    # JUnit XML files the test command writes (a glob in the project, e.g.
    # "build/test-results/test/*.xml"): read as its report, for runners fixloop cannot read.
    test_report: str | None = None
    # A formatter that writes (`ruff format .`, `gofmt -w .`): run before the checks, its
    # changes committed on their own (engine/verify/fix.py). None: no fix pass.
    fix_cmd: str | None = None
    model: str | None = None
    model_path: Path | None = None
    api_base: str | None = None
    edit_format: Literal["json", "whole"] | None = None
    # Answers asked for per iteration, verified side by side, the best kept; None: per model
    # (engine/run/start.py says which and why).
    candidates: int | None = Field(default=None, ge=1, le=MAX_CANDIDATES)
    # How the loop repairs (engine/project/strategy.py): a preset's name, or a table of its
    # keys (`preset` and any lever to change in it).
    strategy: Strategy = DEFAULT_STRATEGY
    escalate_model: str | None = None  # takes over after a stall and for the last iteration
    max_iters: int = Field(default=4, ge=1, le=100)
    no_progress: int = Field(default=2, ge=1)
    exec_timeout: float = Field(default=300.0, gt=0)
    # One pytest test's limit (0: none): a hang costs this, not the stage's timeout, and the
    # rest of the suite still reports. Never more than half the stage's (`per_test_limit`).
    test_timeout: float = Field(default=20.0, ge=0)
    # After a failed verification its failing tests run first, alone, and the whole command
    # only once they pass: a red iteration costs the failing tests, not the suite. A green
    # verdict always comes from the whole command (engine/verify/focus.py).
    failing_first: bool = True
    max_cost: float | None = Field(default=None, ge=0)
    max_tokens: int | None = Field(default=None, ge=1)
    wall_clock: float | None = Field(default=None, gt=0)
    sandbox: Literal["auto", "gvisor", "docker", "unsafe-local"] = "auto"
    docker_url: str | None = None
    allow_runc: bool = False
    image: str | None = None
    python: Path | None = None
    approve: Literal["step", "auto"] = "step"
    accept_suspicious: bool = False
    allow_test_edits: bool = False
    theme: str | None = None


DEFAULTS = Settings()
DEFAULT_TEST_CMD = "python -m pytest -q"  # the test stage when no test_cmd is configured
FIELDS = tuple(Settings.model_fields)
BOOLEANS = tuple(key for key, field in Settings.model_fields.items() if field.annotation is bool)
LEVER_BOOLEANS = tuple(
    key for key, field in Strategy.model_fields.items() if field.annotation is bool
)


def user_config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "fixloop" / "config.toml"


def settings_layer(values: Mapping[str, Any], source: str) -> dict[str, Any]:
    """One source's settings, checked; the error names the key and the source. Its strategy
    stays as the source wrote it (`strategy_part`), for `load_settings` to lay over the
    others' key by key."""
    values = dict(values)
    strategy = strategy_part(values, source)
    for key in values:
        if key not in FIELDS:
            known = ", ".join(FIELDS)
            raise ConfigError(f"unknown setting {key!r} in {source} (known: {known})")
    try:
        layer = Settings.model_validate(values).model_dump(exclude_unset=True)
    except ValidationError as exc:
        error = exc.errors()[0]
        key = ".".join(str(part) for part in error["loc"]) or "?"
        raise ConfigError(f"bad value for {key!r} in {source}: {error['msg']}") from None
    if strategy:
        try:
            resolve_strategy(strategy)
        except StrategyError as exc:
            raise ConfigError(f"{exc}, in {source}") from None
        layer["strategy"] = strategy
    return layer


def strategy_part(values: dict[str, Any], source: str) -> dict[str, Any]:
    """Takes the strategy out of one source's values, as that source wrote it: `strategy` (a
    preset's name, or a table of `preset` and levers) and any lever set on its own, by its
    name (`code_noop = false`, `--no-code-noop`: how settings read before strategies)."""
    part: dict[str, Any] = {}
    raw = values.pop("strategy", None)
    if isinstance(raw, str):
        part["preset"] = raw
    elif isinstance(raw, Strategy):
        part.update({"preset": "default", **raw.model_dump()})
    elif isinstance(raw, Mapping):
        part.update(raw)
    elif raw is not None:
        raise ConfigError(
            f"bad value for 'strategy' in {source}: a preset's name or a table of its keys"
        )
    for key in LEVERS:
        if key in values:
            part[key] = values.pop(key)
    return part


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read it: {exc.strerror}") from None


def _parse(raw: bytes, path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None


def _toml(path: Path) -> dict[str, Any]:
    return _parse(_read(path), path)


def from_user_config(path: Path | None = None) -> dict[str, Any]:
    path = path or user_config_path()
    if not path.is_file():
        return {}
    return settings_layer(_toml(path), str(path))


def from_pyproject(
    project: Path, trust: RepoTrust | None = None, *, drop_untrusted: bool = False
) -> dict[str, Any]:
    """The settings in the project's `[tool.fixloop]`, checked; the only reader of that table.

    The repository wrote it, so it is hostile input: a restricted key (`trust.RESTRICTED`:
    what runs on the host, weakens the sandbox, routes credentials or earns a green) is refused
    unless `trust` (by default the user's trust store) allows this file as it is, byte for byte;
    paths it names (`spec`, `files`) must stay inside the project, whose files alone may reach
    the model. With `drop_untrusted` the refused keys are left out instead (the app, which
    shows the refusal on its task screen)."""
    path = project / "pyproject.toml"
    if not path.is_file():
        return {}
    raw = _read(path)
    table = _parse(raw, path).get("tool", {}).get("fixloop", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.fixloop] must be a table")
    restricted = restricted_in(table)
    trust = TrustStore() if trust is None else trust
    if restricted and not trust.allows(path, digest_of(raw)):
        if drop_untrusted:
            table = {key: value for key, value in table.items() if key not in restricted}
        else:
            raise UntrustedSettings(
                refusal(path, restricted, trust.how_to_trust(project)), keys=restricted
            )
    _inside_project(table, path)
    return settings_layer(table, f"{path} [tool.fixloop]")


def _inside_project(table: Mapping[str, Any], path: Path) -> None:
    """A repository's `spec` and `files` name files of the project: never an absolute path or
    one that climbs out with `..` (their content is shown to the model)."""
    named = [("spec", table["spec"])] if isinstance(table.get("spec"), str) else []
    files = table.get("files")
    if isinstance(files, list):
        named += [("files", item) for item in files if isinstance(item, str)]
    for key, value in named:
        if Path(value).is_absolute() or ".." in Path(value).parts:
            raise ConfigError(
                f"{path} [tool.fixloop]: {key} {value!r} must name a file inside the project"
            )


def from_environment(environ: Mapping[str, str]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for key in (*FIELDS, *LEVERS):  # a lever on its own too: FIXLOOP_CODE_NOOP=0
        raw = environ.get(f"FIXLOOP_{key.upper()}")
        if raw is None or raw == "":
            continue
        if key == "files":
            values[key] = [part for part in raw.split(os.pathsep) if part]
        elif key in BOOLEANS or key in LEVER_BOOLEANS:
            values[key] = raw.lower() in ("1", "true", "yes", "on")
        else:
            values[key] = raw
    return settings_layer(values, "the environment (FIXLOOP_*)")


def load_settings(
    project: Path,
    flags: Mapping[str, Any],
    *,
    environ: Mapping[str, str] | None = None,
    user_config: Path | None = None,
    trust: RepoTrust | None = None,
    drop_untrusted: bool = False,
) -> Settings:
    """Merge every source over the defaults; flags given as None are "not set". What the
    project's files imply (a Go or JS test command) sits over the user's own config, under
    the project's. The project's own config is read as `from_pyproject` says (UntrustedSettings
    for a restricted key nobody trusted)."""
    merged: dict[str, Any] = {}
    strategy: dict[str, Any] = {}
    set_flags = {key: value for key, value in flags.items() if value is not None}
    for layer in (
        from_user_config(user_config),
        detected_layer(project),
        from_pyproject(project, trust, drop_untrusted=drop_untrusted),
        from_environment(os.environ if environ is None else environ),
        settings_layer(set_flags, "the command line"),
    ):
        part = layer.pop("strategy", None)
        merged.update(layer)
        if part:  # a source's preset starts over; its levers change what the others chose
            strategy = {"preset": part["preset"]} if "preset" in part else strategy
            strategy.update({key: value for key, value in part.items() if key != "preset"})
    if strategy:
        merged["strategy"] = strategy
    return Settings.model_validate(merged)


class ProjectConfig(BaseModel):
    """A project's `[tool.fixloop]` as `fixloop-tui trust` shows it: the file, its digest and
    the restricted keys it sets with their values."""

    model_config = ConfigDict(frozen=True)

    path: Path
    sha256: str
    restricted: dict[str, Any]


def read_project_config(project: Path) -> ProjectConfig:
    """The project's config as it is now, checked as a run would check it (trusted); raises
    ConfigError when there is none or it cannot be used."""
    path = project / "pyproject.toml"
    if not path.is_file():
        raise ConfigError(f"{project} has no pyproject.toml: nothing to trust")
    raw = _read(path)
    table = _parse(raw, path).get("tool", {}).get("fixloop", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.fixloop] must be a table")
    _inside_project(table, path)
    settings_layer(table, f"{path} [tool.fixloop]")
    restricted = {key: table[key] for key in restricted_in(table)}
    return ProjectConfig(path=path, sha256=digest_of(raw), restricted=restricted)
