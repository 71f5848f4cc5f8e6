"""The run's report.md, rendered, over whatever is on screen; `escape` closes it. It scrolls by
keyboard whatever has the focus: up/down a line, PgUp/PgDn a page, Home/End to its ends."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Footer, Markdown

from tui.keymap import REPORT, bindings_for


class ReportScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [*bindings_for(REPORT)]

    class Read(Message):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    def __init__(self, path: Path, text: str | None = None) -> None:
        super().__init__()
        self.path = path
        self.given = text  # already read (a snapshot); None: read the file

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="dialog report") as dialog:
            dialog.border_title = "report"
            dialog.border_subtitle = f"{self.path} · esc: close"
            yield Markdown("*reading the report…*", id="report")
        yield Footer(compact=True)  # its own keys, not those of the screen beneath

    def on_mount(self) -> None:
        if self.given is None:
            self._read()
        else:
            self.post_message(self.Read(self.given))

    @work(thread=True, exclusive=True, group="report", exit_on_error=False)
    def _read(self) -> None:
        try:
            text = self.path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            text = f"**The report could not be read:** {exc.strerror or exc}"
        self.post_message(self.Read(text))

    @on(Read)
    async def _shown(self, message: Read) -> None:
        markdown = self.query_one(Markdown)
        await markdown.update(message.text)

    def action_scroll(self, where: str) -> None:
        report = self.query_one(Markdown)
        moves = {
            "down": report.scroll_down,
            "up": report.scroll_up,
            "page_down": report.scroll_page_down,
            "page_up": report.scroll_page_up,
            "end": report.scroll_end,
            "home": report.scroll_home,
        }
        if move := moves.get(where):
            move(animate=False)

    def action_close(self) -> None:
        self.dismiss(None)
