"""A yes-or-no question before anything that ends a run or throws work away (abort, discard,
quitting with typed text): `y` does it; `escape`, or `enter` on the default button, does not, so
a fast key sequence (`x` then `enter`) cannot fire it; `q` quits as everywhere."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Static

from tui.keymap import CONFIRM, bindings_for


class ConfirmScreen(ModalScreen[bool]):
    """Dismissed with True (yes) or False (no, or closed)."""

    BINDINGS: ClassVar[list[BindingType]] = [*bindings_for(CONFIRM)]

    def __init__(self, title: str, question: str, *, yes: str, no: str) -> None:
        super().__init__()
        self.title_text, self.question, self.yes, self.no = title, question, yes, no

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="dialog confirm warning") as dialog:
            dialog.border_title = self.title_text
            yield Static(Content(self.question), id="question")
            with Horizontal(classes="buttons"):
                yield Button(
                    Content(f"{self.yes} [y]"),
                    id="yes",
                    variant="error",
                    compact=True,
                    action="screen.answer(True)",
                )
                yield Button(
                    Content(f"{self.no} [esc]"),
                    id="no",
                    variant="primary",
                    compact=True,
                    action="screen.answer(False)",
                )
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()  # enter on the default does nothing harmful

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


def abort_question(where: str = "") -> ConfirmScreen:
    """Before the run is aborted (`x`, the palette): its branch is kept, the run cannot go on."""
    return ConfirmScreen(
        "abort the run?",
        f"end the run here{where}? its branch is kept, but the run cannot be resumed.",
        yes="abort",
        no="go on",
    )
