"""The docker backend's settings: where they may come from, and where not."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.errors import ConfigError
from engine.project.settings import load_settings


def test_allow_runc_comes_from_the_environment(tmp_path: Path) -> None:
    settings = load_settings(
        tmp_path, {}, environ={"FIXLOOP_ALLOW_RUNC": "1"}, user_config=tmp_path / "none.toml"
    )
    assert settings.allow_runc is True


def test_runc_is_refused_unless_someone_allowed_it(tmp_path: Path) -> None:
    settings = load_settings(tmp_path, {}, environ={}, user_config=tmp_path / "none.toml")
    assert settings.allow_runc is False


def test_a_project_cannot_allow_runc_for_whoever_runs_it(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.fixloop]\nallow_runc = true\n")
    with pytest.raises(ConfigError, match=r"sets allow_runc .* a repository may not set this"):
        load_settings(tmp_path, {}, environ={}, user_config=tmp_path / "none.toml")


def test_the_users_own_config_may_allow_runc(tmp_path: Path) -> None:
    user_config = tmp_path / "config.toml"
    user_config.write_text("allow_runc = true\n")
    settings = load_settings(tmp_path, {}, environ={}, user_config=user_config)
    assert settings.allow_runc is True


def test_the_flag_names_the_engine_over_the_environment(tmp_path: Path) -> None:
    settings = load_settings(
        tmp_path,
        {"docker_url": "unix:///flag.sock"},
        environ={"FIXLOOP_DOCKER_URL": "unix:///env.sock"},
        user_config=tmp_path / "none.toml",
    )
    assert settings.docker_url == "unix:///flag.sock"
