"""Fixtures shared by the engine's tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def git_as_tester(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Commits as a test identity, with no global or system git config, no repo above tmp_path."""
    config = tmp_path / "gitconfig"
    config.write_text("[user]\n\tname = Test\n\temail = test@example.invalid\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
