"""The runs screen: the project's past runs, newest first (the audit trail, listed), each
with how it ended and what became of its branch (accepted, kept, discarded, undecided).
`enter` opens the highlighted run read-only; `escape` closes the list."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import DataTable, Footer, Static

from engine.project.paths import runs_dir
from tui.keymap import RUNS, bindings_for
from tui.widgets.history import status_colour

# The run directory's typed records are read in the worker: the app imports this screen before
# its first frame, which needs none of them.
if TYPE_CHECKING:
    from engine.run.run_directory import RunSummary

TASK_WIDTH = 48


class RunsScreen(ModalScreen[str | None]):
    """Dismissed with the chosen run's id, or None."""

    BINDINGS: ClassVar[list[BindingType]] = [*bindings_for(RUNS)]

    class Listed(Message):
        def __init__(self, runs: list[RunSummary] | None, error: str = "") -> None:
            super().__init__()
            self.runs = runs
            self.error = error

    def __init__(self, project: Path, runs: list[RunSummary] | None = None) -> None:
        super().__init__()
        self.project = project
        self.given = runs  # already read (a snapshot); None: read them from the project
        self.runs: list[RunSummary] | None = None  # None: still being read

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="dialog runs") as dialog:
            dialog.border_title = "past runs"
            dialog.border_subtitle = "enter: open read-only · esc: close"
            yield Static(Content.styled("reading the runs…", "$text-muted"), id="runs-note")
            table: DataTable[str | Text] = DataTable(
                id="runs-table", cursor_type="row", zebra_stripes=True
            )
            for label in ("run", "started", "status", "branch", "iterations", "task"):
                table.add_column(label, key=label)
            yield table
        yield Footer(compact=True)  # its own keys, not those of the screen beneath

    def on_mount(self) -> None:
        self.query_one(DataTable).focus()
        if self.given is None:
            self._list()
        else:
            self.post_message(self.Listed(self.given))

    @work(thread=True, exclusive=True, group="runs", exit_on_error=False)
    def _list(self) -> None:
        from engine.run.run_directory import list_runs

        try:
            runs = list_runs(self.project)
        except OSError as exc:
            self.post_message(self.Listed(None, f"the runs could not be read: {exc}"))
            return
        self.post_message(self.Listed(runs))

    @on(Listed)
    def _listed(self, message: Listed) -> None:
        self.runs = message.runs
        note = self.query_one("#runs-note", Static)
        if message.runs is None:
            note.update(Content.styled(message.error, "$text-error"))
            return
        if not message.runs:
            note.update(
                Content.styled(f"no runs yet in {self.project}", "$text-muted"),
            )
            return
        count = len(message.runs)
        note.update(
            Content.styled(
                f"{count} run{'s' if count != 1 else ''} in {runs_dir(self.project)}",
                "$text-muted",
            )
        )
        table = self.query_one(DataTable)
        colours = getattr(self.app, "theme_variables", {})
        for run in message.runs:
            table.add_row(*_row(run, colours), key=run.id)

    @on(DataTable.RowSelected)
    def _selected(self, message: DataTable.RowSelected) -> None:
        if message.row_key.value is not None:
            self.dismiss(message.row_key.value)

    def action_open(self) -> None:
        table = self.query_one(DataTable)
        if not self.runs or table.row_count == 0:
            return
        self.dismiss(self.runs[table.cursor_row].id)

    def action_close(self) -> None:
        self.dismiss(None)


def _row(run: RunSummary, colours: dict[str, str]) -> tuple[str | Text, ...]:
    # An ok that rests on a suspicious pass the person accepted is not shown as a plain ok.
    tone = "warning" if run.accepted_suspicious else status_colour(run.status)
    colour = colours.get(tone, "")
    style = f"bold {colour}" if colour else "bold"
    task = run.task_line(TASK_WIDTH)
    return (
        run.id,
        run.started,
        Text(run.status_label, style=style),
        Text(run.outcome, style="" if run.finish else "dim"),
        Text(str(run.iterations), justify="right"),
        task,
    )
