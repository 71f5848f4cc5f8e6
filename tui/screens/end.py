"""The end-of-run modal: how the run ended and why, what it cost, and what to do with its
branch — accept `a` (squash onto your branch), keep `k` (the branch stays), discard `d`
(the branch is deleted). `r` opens the run's report. `escape` closes the modal and leaves the
branch as it is."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, cast

from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Static
from textual.widgets.button import ButtonVariant

from engine.run.finish import Finish, Finished
from tui.widgets.history import status_colour


@dataclass(frozen=True)
class RunOutcome:
    """What the end modal shows; from the RunFinished event (or a start-up failure)."""

    status: str
    reason: str
    iterations: int = 0
    branch: str = ""
    tokens: int = 0
    cost_usd: float = 0.0
    duration_s: float = 0.0
    report: str = ""
    decidable: bool = True  # there is a branch to accept, keep or discard


class EndScreen(ModalScreen[None]):
    """Posts `EndScreen.Decided`; the app does the git work and calls `show_finished`."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "decide('accept')", "accept"),
        Binding("k", "decide('keep')", "keep branch"),
        Binding("d", "decide('discard')", "discard"),
        Binding("r", "open_report", "report"),
        Binding("escape", "close", "close"),
        # The modal stays up after a decision (it shows what was done): q still quits.
        Binding("q", "app.quit", "quit"),
    ]

    class Decided(Message):
        def __init__(self, choice: Finish) -> None:
            super().__init__()
            self.choice = choice

    def __init__(self, outcome: RunOutcome, finished: Finished | None = None) -> None:
        super().__init__()
        self.outcome = outcome
        self.finished = finished
        self.busy = False

    def compose(self) -> ComposeResult:
        outcome = self.outcome
        colour = status_colour(outcome.status)
        with Vertical(id="dialog", classes=f"dialog end {colour}") as dialog:
            ended = outcome.decidable
            dialog.border_title = "the run has ended" if ended else "the run could not start"
            yield Static(self._summary(), id="summary")
            yield Static(self._result(), id="result")
            with Horizontal(classes="buttons"):
                if ended:
                    yield _button("accept [a]", "accept", "success")
                    yield _button("keep branch [k]", "keep", "primary")
                    yield _button("discard [d]", "discard", "error")
                if outcome.report:
                    yield Button(
                        Content("report [r]"),
                        id="report",
                        compact=True,
                        action="screen.open_report",
                    )
                yield Button(
                    Content("close [esc]"), id="close", compact=True, action="screen.close"
                )

    def on_mount(self) -> None:
        self._update_buttons()

    def _summary(self) -> Content:
        o = self.outcome
        colour = status_colour(o.status)
        style = f"bold $text-{colour}" if colour != "foreground" else "bold"
        lines = [
            Content.assemble(("status: ", "bold"), (o.status.replace("_", " "), style)),
            Content.assemble(("reason: ", "bold"), o.reason),
        ]
        if o.decidable:
            counts = f"{o.iterations} iteration{'s' if o.iterations != 1 else ''}"
            spent = f"{o.tokens:,} tokens · ${o.cost_usd:.4f} · {o.duration_s:.1f}s"
            lines.append(Content.assemble(("spent: ", "bold"), f"{counts} · {spent}"))
            lines.append(Content.assemble(("branch: ", "bold"), o.branch))
        if o.report:
            lines.append(Content.assemble(("report: ", "bold"), o.report))
        if o.decidable and o.status != "ok":
            lines.append(
                Content.styled(
                    "the run did not end ok: accepting brings in changes the verifier did not pass",
                    "$text-warning",
                )
            )
        return Content("\n").join(lines)

    def _result(self) -> Content:
        if self.busy:
            return Content.styled("working…", "$text-accent")
        finished = self.finished
        if finished is None:
            return Content("")
        if finished.done:
            return Content.styled(finished.detail, "bold $text-success")
        return Content.assemble(("accept refused: ", "bold $text-error"), finished.detail)

    def _update_buttons(self) -> None:
        self.query_one("#close", Button).focus()
        if not self.outcome.decidable:
            return
        settled = self.finished is not None and self.finished.done
        for name in ("accept", "keep", "discard"):
            self.query_one(f"#{name}", Button).disabled = self.busy or settled
        if not (self.busy or settled):
            self.query_one("#accept" if self.outcome.status == "ok" else "#keep", Button).focus()

    def show_finished(self, finished: Finished | None) -> None:
        """What the app's worker did (None: it is working on it)."""
        self.busy = finished is None
        self.finished = finished
        self.query_one("#result", Static).update(self._result())
        self._update_buttons()

    def palette_commands(self) -> Iterable[SystemCommand]:
        """The end-of-run choices, in the command palette too."""
        for choice, help_text in (
            ("accept", "squash the run onto your branch"),
            ("keep", "keep branch fixloop/<run>"),
            ("discard", "delete the run's branch"),
        ):
            yield SystemCommand(
                f"End of run: {choice} ({choice[0]})",
                help_text,
                functools.partial(self.action_decide, choice),
            )
        if self.outcome.report:
            yield SystemCommand(
                "End of run: open the report (r)", self.outcome.report, self.action_open_report
            )

    def action_decide(self, choice: str) -> None:
        if self.busy or not self.outcome.decidable:
            return
        if self.finished is not None and self.finished.done:
            return
        if choice in ("accept", "keep", "discard"):
            self.show_finished(None)
            self.post_message(self.Decided(cast(Finish, choice)))

    def action_open_report(self) -> None:
        if self.outcome.report:
            from tui.screens.report import ReportScreen  # Markdown: loaded when first needed

            self.app.push_screen(ReportScreen(Path(self.outcome.report)))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "open_report":
            return bool(self.outcome.report)
        return True

    def action_close(self) -> None:
        self.dismiss(None)


def _button(label: str, choice: Finish, variant: ButtonVariant) -> Button:
    return Button(
        Content(label),
        id=choice,
        variant=variant,
        compact=True,
        action=f"screen.decide('{choice}')",
    )
