"""What the app remembers between sessions (only the theme so far), in
`$XDG_STATE_HOME/fixloop/ui.json` (default `~/.local/state/fixloop/ui.json`).

State, not configuration: the user's config.toml is never rewritten. A choice made with
`--theme`, `FIXLOOP_THEME` or a config file wins over what is remembered.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

log = logging.getLogger(__name__)


def state_path() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "fixloop" / "ui.json"


def _read() -> dict[str, object]:
    try:
        data = json.loads(state_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def remembered_theme() -> str | None:
    theme = _read().get("theme")
    return theme if isinstance(theme, str) and theme else None


def remember_theme(name: str) -> None:
    """Keep the person's theme for next time; a failure to write only costs the memory."""
    known = _read()
    if known.get("theme") == name:
        return
    path = state_path()
    data = {**known, "theme": name}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".partial")
        partial.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        partial.replace(path)
    except OSError as exc:
        log.warning("could not remember the theme in %s: %s", path, exc)
