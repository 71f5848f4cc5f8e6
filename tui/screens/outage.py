"""The model outage dialog: the model could not be reached after its retries, so the run
stopped, resumable. Retry `a` goes on at once with the same server; change `e` shows the
server and model to ask instead (the person's own values, typed here: a repository never
sets them); escape leaves the run stopped, to resume later from the shell. Dismissed with an
`OutageChoice`, or None to leave it stopped."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Input, Label, Static

from tui.keymap import OUTAGE, bindings_for
from tui.screens.quit import resume_command


@dataclass(frozen=True)
class OutageChoice:
    """Resume now; `api_base`/`model` None: as the run had them."""

    api_base: str | None = None
    model: str | None = None


class OutageScreen(ModalScreen[OutageChoice | None]):
    """Says why the run stopped and offers to go on now, here or elsewhere."""

    BINDINGS: ClassVar[list[BindingType]] = [*bindings_for(OUTAGE)]

    def __init__(
        self, reason: str, run_id: str, project: str, api_base: str | None, model: str
    ) -> None:
        super().__init__()
        self.reason = reason
        self.run_id = run_id
        self.project = project
        self.api_base = api_base
        self.model = model

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="dialog outage") as dialog:
            dialog.border_title = "the model could not be reached"
            yield Static(self._said(), id="said")
            with Vertical(id="endpoint"):
                yield Label("server (api base; empty: the provider's own)")
                yield Input(self.api_base or "", id="api-base", compact=True)
                yield Label("model")
                yield Input(self.model, id="model", compact=True)
            with Horizontal(classes="buttons"):
                yield Button(Content("retry now [a]"), id="retry", variant="primary", compact=True)
                yield Button(Content("change endpoint [e]"), id="change", compact=True)
                yield Button(Content("leave stopped [esc]"), id="leave", compact=True)
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.query_one("#endpoint").display = False
        self.query_one("#retry", Button).focus()

    def _said(self) -> Content:
        return Content("\n").join(
            [
                Content(self.reason),
                Content.assemble(
                    ("The run is kept, stopped: ", "bold"),
                    "nothing is lost. Retry once the server is back, ask another server "
                    "or model, or resume it later:",
                ),
                Content.styled(f"  {resume_command(self.run_id, self.project)}", "$text-accent"),
            ]
        )

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # While the endpoint is typed, letters are text: only the buttons and enter decide.
        return not (action in ("retry", "change") and isinstance(self.focused, Input))

    def action_retry(self) -> None:
        self.dismiss(self._choice())

    def action_change(self) -> None:
        self.query_one("#endpoint").display = True
        self.query_one("#change").display = False
        retry = self.query_one("#retry", Button)
        retry.label = Content("retry with these [enter]")
        retry.styles.width = "auto"
        self.query_one("#api-base", Input).focus()

    def action_leave(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed, "#retry")
    def _retry_pressed(self) -> None:
        self.action_retry()

    @on(Button.Pressed, "#change")
    def _change_pressed(self) -> None:
        self.action_change()

    @on(Button.Pressed, "#leave")
    def _leave_pressed(self) -> None:
        self.action_leave()

    @on(Input.Submitted)
    def _submitted(self) -> None:
        self.action_retry()

    def _choice(self) -> OutageChoice:
        if not self.query_one("#endpoint").display:
            return OutageChoice()
        api_base = self.query_one("#api-base", Input).value.strip()
        model = self.query_one("#model", Input).value.strip()
        return OutageChoice(
            api_base=api_base if api_base != (self.api_base or "") else None,
            model=model if model and model != self.model else None,
        )
