"""The diff pane: the selected iteration's patch (what its commit changed)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.content import Content
from textual.widgets import Static

from tui.widgets.diff.render import diff_content


class DiffPane(VerticalScroll):
    """Shows one unified diff, or a line saying why there is none."""

    DEFAULT_CSS = """
    DiffPane > Static { width: auto; min-width: 100%; }
    DiffPane > Static.-message { width: 100%; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.border_title = "diff"
        self._shown: tuple[str, str] | None = None

    def compose(self) -> ComposeResult:
        yield Static(
            Content.styled("no iteration yet", "$text-muted"), id="diff-text", classes="-message"
        )

    @property
    def text(self) -> str:
        """The patch shown (empty when there is none)."""
        return self._shown[0] if self._shown else ""

    def show(self, diff: str, *, empty: str = "no change in this iteration") -> None:
        if self._shown == (diff, empty):
            return  # keep the scroll position while the same patch stays selected
        self._shown = (diff, empty)
        body = diff_content(diff) if diff.strip() else Content.styled(empty, "$text-muted")
        text = self.query_one("#diff-text", Static)
        # A diff's lines keep their width (the pane scrolls them); a message wraps in the pane,
        # else a narrow pane cuts it off with no way to read the rest.
        text.set_class(not diff.strip(), "-message")
        text.update(body)
        self.scroll_home(animate=False)
