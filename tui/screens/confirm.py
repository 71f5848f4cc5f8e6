"""A yes-or-no question before something that cannot be undone (discarding a run's branch):
`y` does it, `n` or `escape` does not; `q` quits as everywhere."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Static


class ConfirmScreen(ModalScreen[bool]):
    """Dismissed with True (yes) or False (no, or closed)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "yes"),
        Binding("n", "answer(False)", "no"),
        Binding("escape", "answer(False)", "no"),
        Binding("q", "app.quit", "quit"),
    ]

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
                    Content(f"{self.no} [n]"),
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
