"""The in-app editor over a proposal: one tab per file, holding the content the proposal
would leave. `ctrl+s` hands every file back (to be applied as the person's own edit),
`ctrl+n` shows the next file, `escape` goes back to the review unchanged."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static, TabbedContent, TabPane, TextArea


@dataclass(frozen=True)
class EditorFile:
    path: str
    text: str


class EditorScreen(ModalScreen[dict[str, str] | None]):
    """Dismissed with {path: new text}, or None when the person goes back."""

    # Priority: the code editor keeps tab for indenting and takes escape to move focus.
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "save", "use these files", priority=True),
        Binding("escape", "cancel", "back to review", priority=True),
        Binding("ctrl+n", "next_file", "next file", priority=True),
    ]

    def __init__(self, files: list[EditorFile]) -> None:
        super().__init__()
        self.files = files

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="dialog") as dialog:
            dialog.border_title = "edit the proposal"
            dialog.border_subtitle = "ctrl+s: apply as your edit · ctrl+n: next file · esc: back"
            if not self.files:
                yield Static("the proposal has no file you may edit", id="nothing")
                return
            with TabbedContent():
                for index, file in enumerate(self.files):
                    with TabPane(file.path, id=f"file-{index}"):
                        language = "python" if file.path.endswith(".py") else None
                        yield TextArea.code_editor(
                            file.text, language=language, id=f"editor-{index}"
                        )

    def on_mount(self) -> None:
        editors = self.query(TextArea)
        if editors:
            editors.first().focus()

    def action_next_file(self) -> None:
        if len(self.files) < 2:
            return
        tabs = self.query_one(TabbedContent)
        index = int((tabs.active or "file-0").removeprefix("file-"))
        tabs.active = f"file-{(index + 1) % len(self.files)}"
        self.query_one(f"#editor-{(index + 1) % len(self.files)}", TextArea).focus()

    def action_save(self) -> None:
        texts = {
            file.path: self.query_one(f"#editor-{index}", TextArea).text
            for index, file in enumerate(self.files)
        }
        self.dismiss(texts or None)

    def action_cancel(self) -> None:
        self.dismiss(None)
