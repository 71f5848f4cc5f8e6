"""docs/configuration.md is the settings model and the `run` flags as they are: a setting added,
renamed or given a new default without regenerating the page fails here."""

from __future__ import annotations

from pathlib import Path

from engine.project.settings import Settings
from engine.project.strategy import PRESETS, Strategy
from engine.project.trust import RESTRICTED
from tui.configuration_doc import render

PAGE = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def test_the_page_is_the_rendering_of_the_settings_and_flags() -> None:
    assert PAGE.read_text(encoding="utf-8") == render(), (
        "docs/configuration.md is stale: python -m tui.configuration_doc > docs/configuration.md"
    )


def test_every_setting_has_a_row_and_every_restricted_one_says_so() -> None:
    settings = render().partition("## Strategy")[0]
    rows = {line.split("|")[1].strip(" `"): line for line in settings.splitlines() if "| `" in line}
    assert set(rows) == set(Settings.model_fields)
    assert all("**restricted**" in rows[name] for name in RESTRICTED)
    assert not any("**restricted**" in rows[name] for name in set(rows) - set(RESTRICTED))


def test_every_strategy_key_has_a_row_with_each_presets_value() -> None:
    strategy = render().partition("## Strategy")[2]
    rows = [line for line in strategy.splitlines() if line.startswith("| `")]
    assert [row.split("|")[1].strip(" `") for row in rows] == list(Strategy.model_fields)
    assert all(len(row.split("|")) == len(PRESETS) + 4 for row in rows)
