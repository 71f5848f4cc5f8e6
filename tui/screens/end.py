"""The end-of-run modal: how the run ended and why, what it cost, the whole change an accept
would squash onto your branch (scrollable), and what to do with the branch — accept `a`
(squash it), keep `k` (the branch stays), discard `x` (asks first, then deletes it). `r`
opens the run's report; `escape` closes the modal and leaves the branch as it is. The diff
scrolls (arrows, PgUp/PgDn, Home/End), steps by hunk (`]`/`[`) and takes the screen (`d`, or
`enter` on it), `escape` back. Keys from `tui/keymap.py`."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, cast

from textual.app import ComposeResult, SystemCommand
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Static
from textual.widgets.button import ButtonVariant

from engine.text.durations import said_duration
from tui.keymap import END, bindings_for
from tui.screens.confirm import ConfirmScreen
from tui.screens.diff_keys import DIFF_ACTIONS, DiffKeys
from tui.widgets.diff import DiffView
from tui.widgets.history import status_colour

if TYPE_CHECKING:  # types only: the app imports this screen before its first frame
    from engine.run.finish import Finish, Finished

CHOICES: tuple[Finish, ...] = ("accept", "keep", "discard")


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
    started: bool = True  # False: the run could not start, nothing ran
    # An ok that rests on a suspicious pass the person accepted: that pass's reasons.
    accepted_suspicious: tuple[str, ...] = ()
    diff: str | None = None  # what accept squashes (baseline..tip); None: not read yet
    diff_error: str = ""  # why it could not be read

    @property
    def status_text(self) -> str:
        if self.status == "ok" and self.accepted_suspicious:
            return "ok (suspicious pass accepted by you)"
        return self.status.replace("_", " ")

    @property
    def shown_reason(self) -> str:
        """The reason, without the doubted pass's reasons when the modal lists them below it
        (the engine's reason ends with them: said once is enough at 80x24)."""
        listed = "; ".join(self.accepted_suspicious)
        if listed and self.reason.endswith(f": {listed}"):
            return f"{self.reason.removesuffix(f': {listed}')}: why it was doubted, below"
        return self.reason

    @property
    def colour(self) -> str:
        return "warning" if self.accepted_suspicious else status_colour(self.status)


FINISH_KEYS = {"accept": "a", "keep": "k", "discard": "x"}  # as tui/keymap.py binds them


class EndScreen(DiffKeys, ModalScreen[None]):
    """Posts `EndScreen.Decided`; the app does the git work and calls `show_finished`."""

    DIFF_ID = "squash"

    # The modal stays up after a decision (it shows what was done): q still quits. Discard is
    # `x`, as abort is (it throws the run's work away, and asks first).
    BINDINGS: ClassVar[list[BindingType]] = [*bindings_for(END)]

    class Decided(Message):
        """`run_id`: the run decided on; "" for the app's own run."""

        def __init__(self, choice: Finish, run_id: str = "") -> None:
            super().__init__()
            self.choice = choice
            self.run_id = run_id

    def __init__(
        self, outcome: RunOutcome, finished: Finished | None = None, *, run_id: str = ""
    ) -> None:
        super().__init__()
        self.outcome = outcome
        self.finished = finished
        # A past run's (opened from replay, `f`); "" the app's own run. Its choice is carried
        # out only while the run is undecided, as the shell's accept/keep/discard.
        self.run_id = run_id
        self.busy = False
        self.late_choice = ""  # a choice pressed after the decision was made

    def compose(self) -> ComposeResult:
        outcome = self.outcome
        classes = f"dialog end {outcome.colour}" + (" with-diff" if outcome.decidable else "")
        with Vertical(id="dialog", classes=classes) as dialog:
            ended = outcome.started
            dialog.border_title = "the run has ended" if ended else "the run could not start"
            yield Static(self._summary(), id="summary")
            if outcome.accepted_suspicious:
                yield Static(self._suspicious(), id="suspicious")
            if outcome.decidable:
                pane = DiffView(id="squash", classes="diff")
                pane.border_title = "what accept squashes onto your branch"
                yield pane
            yield Static(self._result(), id="result")
            with Horizontal(classes="buttons"):
                if outcome.decidable:
                    yield _button("accept [a]", "accept", "success")
                    yield _button("keep [k]", "keep", "primary")
                    yield _button("discard [x]", "discard", "error")
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
        yield Footer()

    def on_mount(self) -> None:
        self._show_diff()
        self._update_buttons()

    def diff_focus_back(self) -> None:
        self._update_buttons()

    # -- what it shows --------------------------------------------------------------------------

    def _summary(self) -> Content:
        o = self.outcome
        style = f"bold $text-{o.colour}" if o.colour != "foreground" else "bold"
        lines = [
            Content.assemble(("status: ", "bold"), (o.status_text, style)),
            Content.assemble(("reason: ", "bold"), o.shown_reason),
        ]
        if o.started:
            counts = f"{o.iterations} iteration{'s' if o.iterations != 1 else ''}"
            spent = f"{o.tokens:,} tokens · ${o.cost_usd:.4f} · {said_duration(o.duration_s)}"
            lines.append(Content.assemble(("spent: ", "bold"), f"{counts} · {spent}"))
        if o.decidable:
            lines.append(Content.assemble(("branch: ", "bold"), o.branch))
        elif o.started:
            lines.append(Content.styled("nothing changed: no branch was kept", "$text-muted"))
        if o.report:
            lines.append(Content.assemble(("report: ", "bold"), o.report))
        if o.decidable and o.status != "ok":
            lines.append(
                Content.styled(
                    "not ok: accepting brings in changes the verifier did not pass",
                    "$text-warning",
                )
            )
        return Content("\n").join(lines)

    def _suspicious(self) -> Content:
        heading = "you accepted a pass the verifier doubted, because:"
        lines = [Content.styled(heading, "bold $text-warning")]
        lines += [Content(f"  • {reason}") for reason in self.outcome.accepted_suspicious]
        return Content("\n").join(lines)

    def _show_diff(self) -> None:
        o = self.outcome
        if not o.decidable:
            return
        view = self.active_diff()
        if o.diff_error:
            error = ("the change could not be read: ", "$text-error")
            view.show_message(Content.assemble(error, o.diff_error))
        elif o.diff is None:
            view.show_message(Content.styled("reading the run's change…", "$text-muted"))
        else:
            view.show(o.diff, empty="the run's branch changes no file")

    def _result(self) -> Content:
        if self.busy:
            return Content.styled("working…", "$text-accent")
        finished = self.finished
        if finished is None:
            return Content("")
        if finished.done:
            late = f"{self.late_choice} no longer applies" if self.late_choice else ""
            note = f" · {late or 'nothing more to decide'}"
            return Content.assemble((finished.detail, "bold $text-success"), (note, "$text-muted"))
        # From replay a keep or a discard can be refused too: the run was decided meanwhile.
        refused = f"{finished.choice} refused: "
        return Content.assemble((refused, "bold $text-error"), finished.detail)

    def _settled(self) -> bool:
        return self.finished is not None and self.finished.done

    def _update_buttons(self) -> None:
        result = self.query_one("#result", Static)
        result.set_class(not self.busy and self.finished is None, "empty")
        self.query_one("#close", Button).focus()
        if self.outcome.decidable:
            for name in CHOICES:
                self.query_one(f"#{name}", Button).disabled = self.busy or self._settled()
            if not (self.busy or self._settled()):
                ok = self.outcome.status == "ok"
                self.query_one("#accept" if ok else "#keep", Button).focus()
        self.refresh_bindings()

    # -- what the app tells it ------------------------------------------------------------------

    def show_finished(self, finished: Finished | None) -> None:
        """What the app's worker did (None: it is working on it)."""
        self.busy = finished is None
        self.finished = finished
        self.query_one("#result", Static).update(self._result())
        self._update_buttons()

    def show_outcome(self, outcome: RunOutcome) -> None:
        """The same run's outcome with more read (the squash diff, once the app has it)."""
        self.outcome = outcome
        self._show_diff()

    def palette_commands(self) -> Iterable[SystemCommand]:
        """The end-of-run choices, in the command palette too."""
        for choice, help_text in (
            ("accept", "squash the run onto your branch"),
            ("keep", "keep branch fixloop/<run>"),
            ("discard", "delete the run's branch (asks first)"),
        ):
            yield SystemCommand(
                f"End of run: {choice} ({FINISH_KEYS[choice]})",
                help_text,
                functools.partial(self.action_decide, choice),
            )
        if self.outcome.report:
            yield SystemCommand(
                "End of run: open the report (r)", self.outcome.report, self.action_open_report
            )

    # -- keys -----------------------------------------------------------------------------------

    def action_decide(self, choice: str) -> None:
        if self._settled():
            # Not silently dead: the modal says why the key does nothing now.
            self.late_choice = choice
            self.query_one("#result", Static).update(self._result())
            return
        if choice not in CHOICES or not self._can_decide():
            return
        if choice == "discard":
            question = (
                f"delete branch {self.outcome.branch} and everything the run did? "
                "this cannot be undone."
            )
            confirm = ConfirmScreen("discard the run?", question, yes="discard", no="keep it")
            self.app.push_screen(confirm, self._discard_confirmed)
            return
        self._decide(cast("Finish", choice))

    def _discard_confirmed(self, yes: bool | None) -> None:
        if yes and self._can_decide():
            self._decide("discard")

    def _decide(self, choice: Finish) -> None:
        self.show_finished(None)
        self.post_message(self.Decided(choice, self.run_id))

    def _can_decide(self) -> bool:
        return self.outcome.decidable and not self.busy and not self._settled()

    def action_open_report(self) -> None:
        if self.outcome.report:
            from tui.screens.report import ReportScreen  # Markdown: loaded when first needed

            self.app.push_screen(ReportScreen(Path(self.outcome.report)))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "open_report":
            return bool(self.outcome.report)
        if action in DIFF_ACTIONS:
            return self.outcome.decidable and self.diff_action_allowed(action)
        if action == "decide":
            return self.outcome.decidable
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
