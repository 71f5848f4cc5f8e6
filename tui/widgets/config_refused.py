"""The task screen's line for a project config whose security settings were refused (not
trusted): which keys, in which file, and the command that trusts it. Hidden when none was."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static


class ConfigRefused(Static):
    DEFAULT_CSS = """
    ConfigRefused {
        height: auto;
        padding: 0 1;
        margin: 0 0 1 0;
    }
    """

    def __init__(self, refusal: str) -> None:
        super().__init__(
            Content.assemble(
                ("not obeyed: ", "bold $text-warning"),
                refusal,
                ("\nthe run uses your own settings for these keys", "$text-primary"),
            ),
            id="config-refused",
        )
