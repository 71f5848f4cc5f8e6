"""The strategy: one value for the repair levers, chosen by preset and changed key by key, from
every settings source in their order; the levers' old names still change it."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.errors import ConfigError
from engine.project.settings import Settings, load_settings
from engine.project.strategy import PRESETS, Strategy
from engine.run.outcome import RunConfig

ENV: dict[str, str] = {}


def project(tmp_path: Path, config: str = "") -> Path:
    (tmp_path / "pyproject.toml").write_text(f"[tool.fixloop]\n{config}\n")
    return tmp_path


def settings(
    tmp_path: Path, flags: dict[str, object], *, config: str = "", user: str = ""
) -> Strategy:
    user_config = tmp_path / "user.toml"
    user_config.write_text(user)
    return load_settings(
        project(tmp_path, config), flags, environ=ENV, user_config=user_config
    ).strategy


def test_a_preset_by_name_from_the_flags(tmp_path: Path) -> None:
    assert settings(tmp_path, {"strategy": "naive"}) == PRESETS["naive"]


def test_a_projects_lever_changes_the_users_preset(tmp_path: Path) -> None:
    chosen = settings(
        tmp_path,
        {},
        user='strategy = "levers-off"',
        config="[tool.fixloop.strategy]\nkeep_asking = true",
    )
    assert chosen == PRESETS["levers-off"].model_copy(update={"keep_asking": True})


def test_a_later_sources_preset_starts_over(tmp_path: Path) -> None:
    chosen = settings(tmp_path, {"strategy": "default"}, config="code_noop = false")
    assert chosen == PRESETS["default"]


def test_a_lever_by_its_old_name_still_changes_the_strategy(tmp_path: Path) -> None:
    chosen = settings(tmp_path, {"code_noop": False}, config='strategy = "naive"')
    assert chosen == PRESETS["naive"].model_copy(update={"code_noop": False})
    assert RunConfig(model="m", code_noop=False).strategy.code_noop is False


def test_an_unknown_preset_or_key_is_one_line_naming_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"unknown strategy 'fast' \(known: default"):
        settings(tmp_path, {}, config='strategy = "fast"')
    with pytest.raises(ConfigError, match="unknown strategy key 'codenoop'"):
        settings(tmp_path, {}, config="strategy = { codenoop = false }")
    with pytest.raises(ConfigError, match=r"strategy\.keep_asking"):
        settings(tmp_path, {}, config='strategy = { keep_asking = "often" }')


def test_the_strategy_is_frozen_and_the_default_is_the_default_preset() -> None:
    assert Settings().strategy == PRESETS["default"] == Strategy()
    with pytest.raises(ValueError, match="feedback"):
        Strategy(feedback="loud")  # type: ignore[arg-type]
