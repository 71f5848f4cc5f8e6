"""The suspicious-pass modal: every command passed, but something makes the pass doubtful
(a test edited, a skip added, fewer tests). The reasons and the test diff; accept `a` (the run
ends ok, recorded) or reject `ctrl+s`, after a note to the model `n` if you like (the test
changes are reverted and the run goes on). The test diff scrolls (arrows, PgUp/PgDn, Home/End),
steps by hunk (`]`/`[`) and takes the screen (`d`). Keys from `tui/keymap.py`."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult, SystemCommand
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Static, TextArea

from tui.interactive_gate import PassReviewRequest
from tui.keymap import SUSPICIOUS, bindings_for
from tui.screens.diff_keys import DIFF_ACTIONS, DiffKeys
from tui.screens.review import dialog_button
from tui.widgets.diff import DiffView

# The engine's models are imported where a decision is made: the app imports this screen
# before its first frame, which needs none of them.
if TYPE_CHECKING:
    from engine.run.gate import PassReview  # noqa: F401 (in quotes below, as the screen's result)


class SuspiciousPassScreen(DiffKeys, ModalScreen["PassReview"]):
    """Dismissed with the person's PassReview."""

    DIFF_ID = "pass-diff"

    # The note box's keys: priority, so the text area does not take them.
    BINDINGS: ClassVar[list[BindingType]] = [*bindings_for(SUSPICIOUS)]

    def __init__(self, request: PassReviewRequest) -> None:
        super().__init__()
        self.request = request
        self.noting = False  # the note box is open

    def compose(self) -> ComposeResult:
        request = self.request
        with Vertical(id="dialog", classes="dialog warning") as dialog:
            dialog.border_title = f"iteration {request.n} · the tests pass, but…"
            reasons = [Content.styled("why this pass may not be honest:", "bold $text-warning")]
            reasons += [Content(f"  • {reason}") for reason in request.reasons]
            yield Static(Content("\n").join(reasons), id="reasons")
            yield DiffView(id="pass-diff", classes="diff")
            with Vertical(id="note-box") as box:
                box.border_title = "your note to the model (ctrl+s rejects with it, esc: back)"
                yield TextArea(id="note", soft_wrap=True, show_line_numbers=False)
            with Horizontal(classes="buttons"):
                yield dialog_button("accept [a]", "accept", "warning")
                yield dialog_button("reject [^s]", "reject", "primary")
                yield dialog_button("reject with a note [n]", "open_note", "default")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.active_diff().show(self.request.test_diff, empty="no test file changed")
        self.query_one("#reject", Button).focus()

    def diff_focus_back(self) -> None:
        self.query_one("#reject", Button).focus()

    def palette_commands(self) -> Iterable[SystemCommand]:
        """The decision on the pass, in the command palette too."""
        yield SystemCommand(
            "Suspicious pass: accept (a)", "end the run ok; recorded", self.action_accept
        )
        yield SystemCommand(
            "Suspicious pass: reject (ctrl+s)", "do not trust this pass", self.action_reject
        )

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """While the note box is open only its keys work (a, r and n are typed)."""
        if action == "close_note":
            return self.noting
        if action in DIFF_ACTIONS:
            return not self.noting and self.diff_action_allowed(action)
        if action in ("accept", "open_note"):
            return not self.noting
        return True

    def action_accept(self) -> None:
        from engine.run.gate import PassReview

        self.dismiss(PassReview(accept=True, note="accepted by you", by="person"))

    def action_reject(self) -> None:
        from engine.run.gate import PassReview

        comment = self.query_one("#note", TextArea).text.strip() if self.noting else ""
        self.dismiss(
            PassReview(
                accept=False,
                note="rejected by you",
                comment=comment,
                keep_repairing=True,
                by="person",
            )
        )

    def action_open_note(self) -> None:
        self.show_diff_full(False)
        self._show_note(True)
        self.query_one("#note", TextArea).focus()

    def action_close_note(self) -> None:
        self._show_note(False)
        self.query_one("#reject", Button).focus()

    def _show_note(self, noting: bool) -> None:
        self.noting = noting
        self.set_class(noting, "-noting")
        self.refresh_bindings()
