"""Replay: a past run opened read-only in the four panes, from its audit trail (the run
directory's events and the commits on its branch). The history's cursor, or `[` and `]`,
steps through its iterations; `escape` closes it. Nothing here changes the run but `s` on an
undecided run (ended with a branch nobody accepted, kept or discarded): it opens the end
modal's choice, carried out as the shell's `fixloop-tui accept|keep|discard` is
(engine/run/finish.py, only while the run is undecided, under its finish lock)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual import on, work
from textual.binding import BindingType
from textual.message import Message

from engine.project.paths import run_path
from tui.keymap import REPLAY, bindings_for
from tui.screens.end import EndScreen, RunOutcome
from tui.screens.main import ArtifactLoader, MainScreen
from tui.widgets.run_view import RunView

# The trail's readers (events, git) are imported when a run is read: the app imports this module
# before its first frame, which needs none of them.
if TYPE_CHECKING:
    from engine.run.artifacts import IterationArtifacts

UNFINISHED = "the trail has no end: the run was cut off (`fixloop-tui resume`) or still runs"


def artifact_loader(project: Path, run_id: str) -> ArtifactLoader:
    """Reads what iteration n of the run left on disk and on its branch."""

    def load(n: int, rev: str | None, touched: list[str], named: list[str]) -> IterationArtifacts:
        from engine.run.artifacts import iteration_artifacts

        return iteration_artifacts(project, run_id, n, rev=rev, touched=touched, named=named)

    return load


def replayed_view(project: Path, run_id: str) -> RunView:
    """The run as its events.jsonl tells it; ValueError if there is no such run."""
    from engine.run.run_directory import read_events

    path = run_path(project, run_id) / "events.jsonl"
    events = read_events(path)
    if not events:
        raise ValueError(f"no run {run_id!r} in {project} (see `fixloop-tui runs`)")
    view = RunView()
    for event in events:
        view.apply(event)
    if not view.status:
        view.status, view.reason = "unfinished", UNFINISHED
    return view


class ReplayScreen(MainScreen):
    """A past run; dismissed with None."""

    BINDINGS: ClassVar[list[BindingType]] = [*bindings_for(REPLAY)]

    class Read(Message):
        def __init__(self, view: RunView | None, error: str = "", undecided: bool = False) -> None:
            super().__init__()
            self.view = view
            self.error = error
            self.undecided = undecided

    class SquashDiffRead(Message):
        def __init__(self, diff: str, error: str) -> None:
            super().__init__()
            self.diff = diff
            self.error = error

    def __init__(
        self,
        project: Path,
        run_id: str,
        *,
        view: RunView | None = None,
        loader: ArtifactLoader | None = None,
    ) -> None:
        super().__init__(project=str(project), mode="replay")
        self.project = project
        self.run_id = run_id
        self.given = view  # already read (a snapshot); None: read the run's trail
        self.follow = False
        self._loader = loader or artifact_loader(project, run_id)
        self.undecided = False  # ended with a branch nobody decided on: `s` finishes it
        self._end: EndScreen | None = None  # the finish modal, while it is open

    def on_mount(self) -> None:
        super().on_mount()
        if self.given is None:
            self._read()
        else:
            self.post_message(self.Read(self.given))

    @work(thread=True, exclusive=True, group="replay", exit_on_error=False)
    def _read(self) -> None:
        try:
            view = replayed_view(self.project, self.run_id)
        except (OSError, ValueError) as exc:
            self.post_message(self.Read(None, str(exc)))
            return
        self.post_message(self.Read(view, undecided=self._is_undecided()))

    def _is_undecided(self) -> bool:
        from engine.run.finish import undecided_runs

        try:
            return any(run.id == self.run_id for run in undecided_runs(self.project))
        except (OSError, ValueError):
            return False

    @on(Read)
    def _shown(self, message: Read) -> None:
        if message.view is None:
            self.app.notify(message.error, title="replay", severity="error")
            self.dismiss(None)
            return
        self.undecided = message.undecided
        self.show_run(message.view, self._loader)

    # -- finishing an undecided run ---------------------------------------------------------

    def action_finish(self) -> None:
        if not self.undecided or self._end is not None:
            return
        view = self.view
        report = run_path(self.project, self.run_id) / "report.md"
        outcome = RunOutcome(
            status=view.status,
            reason=view.reason,
            iterations=view.current_n,
            branch=view.branch,
            tokens=view.tokens,
            cost_usd=view.cost_usd,
            duration_s=view.duration_s,
            report=str(report) if report.is_file() else "",
        )
        self._end = EndScreen(outcome, run_id=self.run_id)
        self.app.push_screen(self._end, self._finish_closed)
        self._read_squash_diff()

    @work(thread=True, exclusive=True, group="replay-squash", exit_on_error=False)
    def _read_squash_diff(self) -> None:
        from engine.run.finish import squash_diff

        try:
            diff, error = squash_diff(self.project, self.run_id), ""
        except Exception as exc:  # shown in the modal's diff pane; the choices still work
            diff, error = "", str(exc) or type(exc).__name__
        self.post_message(self.SquashDiffRead(diff, error))

    @on(SquashDiffRead)
    def _squash_diff_read(self, message: SquashDiffRead) -> None:
        if self._end is not None:
            outcome = replace(self._end.outcome, diff=message.diff, diff_error=message.error)
            self._end.show_outcome(outcome)

    def _finish_closed(self, _: None) -> None:
        end, self._end = self._end, None
        if end is not None and end.finished is not None and end.finished.done:
            self.undecided = False
            self.refresh_bindings()

    def action_step(self, delta: int) -> None:
        numbers = sorted(self.view.iterations)
        if not numbers:
            return
        at = numbers.index(self.selected) if self.selected in numbers else 0
        self.select(numbers[max(0, min(at + delta, len(numbers) - 1))])

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "finish":
            return self.undecided
        if action in ("note", "add_file", "drop_file"):  # the live run's, never a past one's
            return False
        return super().check_action(action, parameters)

    def action_close(self) -> None:
        self.dismiss(None)
