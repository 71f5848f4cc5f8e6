"""The quit dialog (`q` while a run goes on): stop `p` keeps the run resumable, abort `x` ends
it for good, escape goes back to the run. Dismissed with "stop", "abort" or None."""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from typing import ClassVar, Literal

from textual.app import ComposeResult, SystemCommand
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Static
from textual.widgets.button import ButtonVariant

from tui.keymap import QUIT, bindings_for

QuitChoice = Literal["stop", "abort"]


def resume_command(run_id: str, project: str) -> str:
    """The command that continues a stopped run."""
    return shlex.join(["fixloop-tui", "resume", run_id, project])


class QuitScreen(ModalScreen[QuitChoice | None]):
    """Asks what quitting does to the run under way; `run_id` empty: nothing to keep yet."""

    # q twice quits the way that loses nothing (or aborts a run that has nothing to keep).
    BINDINGS: ClassVar[list[BindingType]] = [*bindings_for(QUIT)]

    def __init__(self, run_id: str, project: str) -> None:
        super().__init__()
        self.run_id = run_id
        self.project = project

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="dialog quit") as dialog:
            dialog.border_title = "quit: the run is under way"
            yield Static(self._choices(), id="choices")
            with Horizontal(classes="buttons"):
                if self.run_id:
                    yield _button("stop [p]", "choose('stop')", "stop", "primary")
                yield _button("abort [x]", "choose('abort')", "abort", "error")
                yield _button("cancel [esc]", "cancel", "cancel", "default")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.query_one("#stop" if self.run_id else "#cancel", Button).focus()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "choose" and parameters == ("stop",):
            return bool(self.run_id)
        return True

    def _choices(self) -> Content:
        lines = []
        if self.run_id:
            lines += [
                Content.assemble(
                    ("stop: ", "bold $text-primary"), "keep the run and resume it later:"
                ),
                Content.styled(f"  {resume_command(self.run_id, self.project)}", "$text-accent"),
            ]
        else:
            lines.append(
                Content.styled("nothing to keep yet: the run is still starting", "$text-muted")
            )
        lines += [
            Content.assemble(("abort: ", "bold $text-error"), "end the run for good"),
            Content.assemble(("cancel: ", "bold"), "back to the run"),
        ]
        return Content("\n").join(lines)

    def palette_commands(self) -> Iterable[SystemCommand]:
        if self.run_id:
            yield SystemCommand(
                "Quit: stop (p)", "keep the run resumable", lambda: self.action_choose("stop")
            )
        yield SystemCommand(
            "Quit: abort (x)", "end the run for good", lambda: self.action_choose("abort")
        )
        yield SystemCommand("Quit: cancel (esc)", "back to the run", self.action_cancel)

    def action_choose(self, choice: QuitChoice) -> None:
        if choice == "stop" and not self.run_id:
            return
        self.dismiss(choice)

    def action_quit_again(self) -> None:
        self.dismiss("stop" if self.run_id else "abort")

    def action_cancel(self) -> None:
        self.dismiss(None)


def _button(label: str, action: str, name: str, variant: ButtonVariant) -> Button:
    return Button(Content(label), id=name, variant=variant, compact=True, action=f"screen.{action}")
