"""The end of a run, a part of FixloopApp: its outcome and exit code, the end modal with the
change an accept would squash, and the person's accept, keep or discard.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from textual import on, work
from textual.app import App
from textual.message import Message

from engine.project.paths import run_path
from engine.run.exit_codes import EXIT_INFRA, RUN_EXIT_CODES
from tui.screens.end import EndScreen, RunOutcome
from tui.screens.main import MainScreen

# What ends a run (its event, git's accept, keep or discard) is imported when one ends, not with
# the app: its first frame needs none of it.
if TYPE_CHECKING:
    from engine.run.events import RunFinished
    from engine.run.finish import Finish, Finished


class RunEnding(App[int]):
    """FixloopApp's end of a run. An App subclass (not a plain mixin) so that Textual finds
    the `@on` handlers below."""

    # Set by FixloopApp.__init__.
    project: Path
    main: MainScreen
    outcome: RunOutcome | None
    finished: Finished | None  # what the accept, keep or discard did, once it is done
    exit_status: int
    _quitting: bool

    if TYPE_CHECKING:  # FixloopApp's

        def post_from_thread(self, message: Message) -> bool: ...

    class Settled(Message):
        """Accept, keep or discard is done (or the accept was refused); `run_id`: a past
        run's, finished from replay ("" the app's own run)."""

        def __init__(self, finished: Finished, run_id: str = "") -> None:
            super().__init__()
            self.finished = finished
            self.run_id = run_id

    class SquashDiffRead(Message):
        """The change an accept would squash onto the person's branch (or why it is unread)."""

        def __init__(self, diff: str, error: str) -> None:
            super().__init__()
            self.diff = diff
            self.error = error

    def _run_finished(self, event: RunFinished) -> None:
        from engine.run.guards import RunStatus

        report = run_path(self.project, event.run_id) / "report.md"
        self.outcome = RunOutcome(
            status=event.status,
            reason=event.reason,
            iterations=event.iterations,
            branch=event.branch,
            tokens=event.tokens,
            cost_usd=event.cost_usd,
            duration_s=event.duration_s,
            report=str(report) if report.is_file() else "",
            decidable=bool(event.branch),
            accepted_suspicious=tuple(event.accepted_suspicious),
        )
        if self.outcome.decidable:
            self._read_squash_diff(event.run_id)
        try:
            self.exit_status = RUN_EXIT_CODES[RunStatus(event.status)]
        except ValueError:
            self.exit_status = EXIT_INFRA
        self.refresh_bindings()
        if not self._quitting:
            self.push_screen(EndScreen(self.outcome))

    @work(thread=True, exclusive=True, group="squash-diff", exit_on_error=False)
    def _read_squash_diff(self, run_id: str) -> None:
        """The change an accept would squash, read off the UI thread for the end modal."""
        from engine.run.finish import squash_diff

        try:
            diff, error = squash_diff(self.project, run_id), ""
        except Exception as exc:  # shown in the modal's diff pane; the choices still work
            diff, error = "", str(exc) or type(exc).__name__
        self.post_from_thread(self.SquashDiffRead(diff, error))

    @on(SquashDiffRead)
    def _squash_diff_read(self, message: SquashDiffRead) -> None:
        if self.outcome is None:
            return
        self.outcome = replace(self.outcome, diff=message.diff, diff_error=message.error)
        for screen in self.screen_stack:
            if isinstance(screen, EndScreen):
                screen.show_outcome(self.outcome)

    @on(EndScreen.Decided)
    def _decided(self, message: EndScreen.Decided) -> None:
        if message.run_id:  # a past run, from replay
            self._finish(message.run_id, message.choice, past=True)
            return
        view = self.main.view
        if view.run_id:
            self._finish(view.run_id, message.choice)

    @work(thread=True, exclusive=True, group="finish", exit_on_error=False)
    def _finish(self, run_id: str, choice: Finish, past: bool = False) -> None:
        """A past run (`past`) is finished as the shell finishes it: only while undecided,
        checked under its finish lock."""
        from engine.run.finish import Finished, finish_run

        try:
            finished = finish_run(self.project, run_id, choice, only_undecided=past)
        except Exception as exc:  # refused (FinishRefused) or the git work failed: say so
            finished = Finished(choice=choice, done=False, detail=str(exc))
        self.post_from_thread(self.Settled(finished, run_id if past else ""))

    @on(Settled)
    def _settled(self, message: Settled) -> None:
        if message.finished.done and not message.run_id:
            self.finished = message.finished
        shown = False
        for screen in self.screen_stack:
            if isinstance(screen, EndScreen) and screen.run_id == message.run_id:
                screen.show_finished(message.finished)
                shown = True
        # The end modal says it in its own result line: a toast there would cover the modal's
        # border and buttons. Only a decision nobody sees (the modal closed meanwhile) is a toast.
        if not shown:
            self.notify(
                message.finished.detail,
                severity="information" if message.finished.done else "error",
            )

    def action_show_summary(self) -> None:
        if self.outcome is not None and not isinstance(self.screen, EndScreen):
            self.push_screen(EndScreen(self.outcome, self.finished))
