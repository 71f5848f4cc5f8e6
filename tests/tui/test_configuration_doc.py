"""docs/configuration.md is the settings model and the `run` flags as they are: a setting added,
renamed or given a new default without regenerating the page fails here."""

from __future__ import annotations

from pathlib import Path

from engine.project.settings import Settings
from engine.project.trust import RESTRICTED
from tui.configuration_doc import render

PAGE = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def test_the_page_is_the_rendering_of_the_settings_and_flags() -> None:
    assert PAGE.read_text(encoding="utf-8") == render(), (
        "docs/configuration.md is stale: python -m tui.configuration_doc > docs/configuration.md"
    )


def test_every_setting_has_a_row_and_every_restricted_one_says_so() -> None:
    rows = {line.split("|")[1].strip(" `"): line for line in render().splitlines() if "| `" in line}
    assert set(rows) == set(Settings.model_fields)
    assert all("**restricted**" in rows[name] for name in RESTRICTED)
    assert not any("**restricted**" in rows[name] for name in set(rows) - set(RESTRICTED))
