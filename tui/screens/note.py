"""The one-line note box (`n` on the running screen): what the person types goes into the
run's next prompt, whatever the loop is doing now. Enter sends it, escape closes it keeping
nothing. Dismissed with the text, or None."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Footer, Input, Static

from tui.keymap import NOTE, bindings_for


class NoteScreen(ModalScreen[str | None]):
    """A note for the model's next prompt."""

    DEFAULT_CSS = """
    NoteScreen > .dialog.note { height: auto; max-width: 90; }
    NoteScreen #note-said { margin: 0; color: $text-muted; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [*bindings_for(NOTE)]

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog note") as dialog:
            dialog.border_title = "a note for the next prompt"
            yield Static(
                "enter sends it; the prompt under way stays as it is. "
                "On the run, + adds a file to the prompts and - drops one.",
                id="note-said",
            )
            yield Input(placeholder="what the model should know", id="note-text")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    @on(Input.Submitted)
    def _send(self, event: Input.Submitted) -> None:
        self.dismiss(event.value if event.value.strip() else None)

    def action_cancel(self) -> None:
        self.dismiss(None)
