"""The main screen: header, the four panes (code, feedback, history, diff) and the footer.

Events go in through `apply` (attributes down); the history pane says which iteration the
person picked (messages up). What an iteration left on disk (packet, patch, answer, code at
its commit) is read in a thread worker and shown when it arrives.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Grid
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Footer
from textual.worker import get_current_worker

from tui.keymap import MAIN, bindings_for
from tui.widgets.code import CodePane
from tui.widgets.diff import DiffPane, added_lines
from tui.widgets.feedback import FeedbackPane
from tui.widgets.header import Activity, RunHeader, activity_of
from tui.widgets.history import HistoryPane
from tui.widgets.run_view import IterationView, RunView, starts_stream

# The engine's models (events, what an iteration left on disk) are imported where a run's data
# arrives: this screen is composed before the first frame, which needs none of them.
if TYPE_CHECKING:
    from engine.run.artifacts import IterationArtifacts
    from engine.run.events import AnswerStreamed, BaseEvent
    from engine.run.talk import Talk

# (n, rev, touched files, files the user named) -> what the iteration left behind
ArtifactLoader = Callable[[int, str | None, list[str], list[str]], "IterationArtifacts"]
RELOAD_DELAY_S = 0.1


def empty_diff_note(it: IterationView | None) -> str:
    if it is None:
        return "no iteration yet"
    if it.n == 0:
        return "no edit yet: this is the project before the first proposal"
    if it.status == "format_error":
        return "the answer could not be used: nothing was changed"
    if it.status == "no_change":  # nothing written: no file changed, or only docstrings
        return it.unchanged or "the proposal changed no file"
    if it.status == "rejected":
        return "rejected by you: nothing was applied"
    if it.in_progress:
        return "no commit yet"
    return "no change in this iteration"


@dataclass(frozen=True)
class PendingDiff:
    """The proposal of iteration `n` waiting for the person's review, and what to say when
    it changes nothing (or does not apply)."""

    n: int
    diff: str
    empty: str = "the proposal changes nothing"
    title: str = "diff · the proposal you review"


def candidate_labels(it: IterationView, answers: dict[int, str]) -> list[tuple[str, str]]:
    """Each candidate's answer with its label: which of how many, and what became of it."""
    total = max(len(answers), it.candidates)
    labelled = []
    for k, text in answers.items():
        fate = [it.candidate_fate[k]] if k in it.candidate_fate else []
        chosen = ["chosen"] if k == it.chosen else []
        labelled.append((" · ".join([f"candidate {k} of {total}", *chosen, *fate]), text))
    return labelled


class MainScreen(Screen[None]):
    """The run, live or finished; the selected iteration drives every pane."""

    # The footer fits 80 columns with every key it may show: `f` is said by the code pane's
    # title, `l` only shows while the panes do not follow the live iteration.
    BINDINGS: ClassVar[list[BindingType]] = [*bindings_for(MAIN)]

    class Loaded(Message):
        """What iteration n left on disk, read by the worker."""

        def __init__(self, n: int, artifacts: IterationArtifacts) -> None:
            super().__init__()
            self.n = n
            self.artifacts = artifacts

    def __init__(
        self,
        *,
        project: str = "",
        model: str = "",
        sandbox: str = "",
        mode: str = "step",
        loader: ArtifactLoader | None = None,
    ) -> None:
        super().__init__()
        self.view = RunView()
        self.mode = mode
        self.loader = loader
        self.selected: int | None = None
        self.follow = True
        self.note = ""  # what happens before the run's first event
        self.paused = ""  # while the person holds the loop: what that means right now
        self.aside = ""  # while the person looks at the run with a decision hidden
        self.pending: PendingDiff | None = None  # the proposal of a review put aside
        self.ready = False  # the panes are mounted
        self._header_args = {"project": project, "model": model, "sandbox": sandbox}
        self._artifacts: dict[int, IterationArtifacts] = {}
        self._reload: Timer | None = None

    def compose(self) -> ComposeResult:
        yield RunHeader(**self._header_args)
        with Grid(id="panes"):
            yield CodePane(id="code")
            yield FeedbackPane(id="feedback")
            yield HistoryPane(id="history")
            yield DiffPane(id="diff")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        # The panes inside the grid mount a moment after the screen: render once they are in.
        self.call_after_refresh(self._ready)

    def _ready(self) -> None:
        self.ready = True
        self.query_one(HistoryPane).table.focus()
        self.query_one(HistoryPane).show(self.view)
        if self.selected is not None:
            self.select(self.selected)
        elif self.view.latest is not None:
            self.select(self.view.latest)
        self.refresh_header()

    # -- attributes down ------------------------------------------------------------------

    def apply(self, event: BaseEvent) -> None:
        """Fold in one engine event and bring the panes up to date."""
        from engine.run.events import PacketReady, RunStarted

        self.view.apply(event)
        if isinstance(event, RunStarted):
            self.follow, self.selected = True, None
        if not self.ready:
            return
        self.query_one(HistoryPane).show(self.view)
        feedback = self.query_one(FeedbackPane)
        following = self.follow and getattr(event, "n", None) == self.view.latest
        if starts_stream(event, self.view.iterations.get(getattr(event, "n", -1))):
            if following:
                feedback.begin_stream()
                feedback.open_tab("model")
        elif isinstance(event, PacketReady) and following:
            feedback.open_tab("packet")
        latest = self.view.latest
        if self.follow and latest is not None and latest != self.selected:
            self.select(latest)
        else:
            self.render_selected()
            self.schedule_reload()
        self.refresh_header()

    def stream(self, piece: AnswerStreamed) -> None:
        """A piece of one of the answers being written: its count in the header and the
        model tab's rows, its text in the model tab when it is the answer shown there."""
        shown = self.view.stream(piece)
        if self.ready and self.selected == piece.n:
            feedback = self.query_one(FeedbackPane)
            if shown and self.follow:
                feedback.stream(piece.text)
            feedback.show_streams(self.view.iterations.get(piece.n))
        self.refresh_header()

    def set_paused(self, note: str) -> None:
        self.paused = note
        self.refresh_header()

    def set_mode(self, mode: str) -> None:
        self.mode = mode
        self.refresh_header()

    def load_view(self, view: RunView, artifacts: dict[int, IterationArtifacts]) -> None:
        """Show a run from fixed data (a finished run, a snapshot): no worker, no disk."""
        from engine.run.artifacts import IterationArtifacts

        self.view = view
        self._artifacts = dict(artifacts)
        self.loader = lambda n, *_: artifacts.get(n, IterationArtifacts())
        self.selected = view.latest
        if self.ready:
            self.query_one(HistoryPane).show(view)
            self.select(view.latest or 0)
            self.refresh_header()

    def show_run(self, view: RunView, loader: ArtifactLoader) -> None:
        """Show a whole run read from its trail; the panes load each iteration from disk."""
        self.view, self.loader, self._artifacts = view, loader, {}
        self.follow = False
        self.refresh_bindings()
        first = min(view.iterations, default=None)
        self.selected = first
        if self.ready:
            self.query_one(HistoryPane).show(view)
            if first is not None:
                self.select(first)
            self.refresh_header()

    def select(self, n: int) -> None:
        """Move every pane to iteration n."""
        self.selected = n
        if not self.ready:
            return
        self.query_one(HistoryPane).select(n)
        self.render_selected()
        self.schedule_reload(now=True)

    def refresh_header(self) -> None:
        if not self.ready:
            return
        activity = activity_of(self.view)
        if not self.view.run_id and self.note:
            activity = Activity(self.note, busy=True)
        elif self.aside and self.view.live:
            activity = Activity(self.aside)
        elif self.paused and self.view.live:
            activity = Activity(self.paused)
        self.query_one(RunHeader).show(self.view, self.mode, activity)

    def render_selected(self) -> None:
        from engine.run.artifacts import IterationArtifacts

        n = self.selected
        it = self.view.iterations.get(n) if n is not None else None
        artifacts = self._artifacts.get(n, IterationArtifacts()) if n is not None else None
        artifacts = artifacts or IterationArtifacts()
        feedback = self.query_one(FeedbackPane)
        feedback.show(it, artifacts.packet_text)
        feedback.show_streams(it)
        live_answer = it is not None and it.status == "asking" and n == self.view.latest
        if it is not None and not live_answer:
            answers = candidate_labels(it, artifacts.candidates)
            # With candidates, the streamed text is only the first's: their answers from disk.
            streamed = "" if answers else it.model_text
            feedback.show_response(artifacts.response or streamed, answers)
        self.query_one(CodePane).show(artifacts.files, added_lines(artifacts.diff))
        diff, empty, title = artifacts.diff, empty_diff_note(it), "diff"
        pending = self.pending
        if pending is not None and pending.n == n:  # nothing of it is committed yet
            diff, empty, title = pending.diff, pending.empty, pending.title
        pane = self.query_one(DiffPane)
        pane.border_title = title
        pane.show(diff, empty=empty)

    def show_pending(self, pending: PendingDiff | None) -> None:
        """While a review is put aside, its iteration's diff pane shows the proposal waiting
        for the decision (nothing is committed before it); None: the review is back."""
        self.pending = pending
        if self.ready:
            self.render_selected()

    # -- messages up ------------------------------------------------------------------------

    @on(HistoryPane.Selected)
    def _picked(self, message: HistoryPane.Selected) -> None:
        self.follow = message.n == self.view.latest
        self.refresh_bindings()
        self.select(message.n)

    # -- actions ----------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """`l` only when there is a live iteration to go back to."""
        if action == "follow":
            return not self.follow
        if action in ("note", "add_file"):
            return self._talk() is not None
        if action == "drop_file":
            talk = self._talk()
            return talk is not None and bool(talk.shown())
        return True

    def _talk(self) -> Talk | None:
        """The run's ear while a run goes on in this app; None otherwise (a replay)."""
        talk = getattr(self.app, "talk", None)
        return talk if getattr(self.app, "running", False) else None

    def action_note(self) -> None:
        from tui.screens.note import NoteScreen

        def sent(text: str | None) -> None:
            talk = self._talk()
            if text is None or talk is None or not talk.note(text):
                return
            self.view.waiting.append(text.strip())  # the history says it until a prompt has it
            if self.ready:
                self.query_one(HistoryPane).show(self.view)

        self.app.push_screen(NoteScreen(), sent)

    def action_add_file(self) -> None:
        from engine.errors import FileRefused
        from tui.screens.files import FilesScreen

        def picked(name: str | None) -> None:
            talk = self._talk()
            if name is None or talk is None:
                return
            try:
                talk.add(name)
            except FileRefused as exc:
                self.notify(str(exc), title="not added", severity="error")
                return
            self.refresh_bindings()
            self.notify(f"{name}: shown in every prompt from the next", title="file added")

        project = Path(getattr(self.app, "project", "."))
        self.app.push_screen(FilesScreen("add a file to the prompts", project=project), picked)

    def action_drop_file(self) -> None:
        from tui.screens.files import FilesScreen

        talk = self._talk()
        if talk is None:
            return

        def picked(name: str | None) -> None:
            if name is not None and talk.drop(name):
                self.refresh_bindings()
                self.notify(f"{name}: no longer added to the prompts", title="file dropped")

        project = Path(getattr(self.app, "project", "."))
        self.app.push_screen(
            FilesScreen("drop an added file", talk.shown(), project=project), picked
        )

    def action_next_file(self) -> None:
        self.query_one(CodePane).next_file()

    def action_toggle_output(self) -> None:
        feedback = self.query_one(FeedbackPane)
        feedback.open_tab("model" if feedback.tab == "packet" else "packet")

    def action_follow(self) -> None:
        self.follow = True
        self.refresh_bindings()
        if self.view.latest is not None:
            self.select(self.view.latest)

    # -- loading what an iteration left on disk -----------------------------------------

    def schedule_reload(self, now: bool = False) -> None:
        if self.loader is None or self.selected is None:
            return
        if now:
            if self._reload is not None:
                self._reload.stop()
                self._reload = None
            self._start_load()
        elif self._reload is None:
            self._reload = self.set_timer(RELOAD_DELAY_S, self._start_load)

    def _start_load(self) -> None:
        self._reload = None
        n = self.selected
        if self.loader is None or n is None:
            return
        it = self.view.iterations.get(n)
        touched = list(it.files) if it else []
        self._load(n, self.view.rev_at(n), touched, list(self.view.named_files))

    @work(thread=True, exclusive=True, group="artifacts", exit_on_error=False)
    def _load(self, n: int, rev: str | None, touched: list[str], named: list[str]) -> None:
        loader = self.loader
        if loader is None:
            return
        artifacts = loader(n, rev, touched, named)
        if not get_current_worker().is_cancelled:
            self.post_message(self.Loaded(n, artifacts))  # thread-safe; never waits for the UI

    @on(Loaded)
    def _loaded(self, message: Loaded) -> None:
        self._artifacts[message.n] = message.artifacts
        if self.ready and message.n == self.selected:
            self.render_selected()
