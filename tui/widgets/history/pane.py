"""The history pane: a table of the run's iterations (status, tests, error class, tokens,
cost, time), and beneath it the latest changes of course (an answer asked again, the candidate
chosen, a restart or an escalation), one line each. Highlighting a row posts
`HistoryPane.Selected`; the screen moves every pane."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import DataTable, Static

from engine.text.durations import said_duration
from tui.widgets.run_view import IterationView, RunView

COLUMNS = (
    ("#", "n"),
    ("status", "status"),
    ("tests", "tests"),
    ("error", "error"),
    ("tokens", "tokens"),
    ("cost", "cost"),
    ("time", "time"),
)
# Added with the first note the person gives; last, so a long note never pushes the numbers
# out of sight.
NOTE_COLUMN = ("your note", "note")
# Which theme colour says what a status means.
STATUS_COLOURS = {
    "ok": "success",
    "accepted": "success",
    "failing": "error",
    "suspicious_pass": "warning",
    "format_error": "warning",
    "reference_error": "warning",
    "spec": "accent",
    "no_change": "warning",
    "env_failure": "accent",
    "error": "error",
    "aborted": "error",
    "stopped": "error",
    "rejected": "warning",
}
NOTE_WIDTH = 30  # how much of the person's note the table shows (the feedback pane has it all)
LEVER_LINES = 3  # the latest changes of course shown (each iteration's are in the feedback pane)


def status_colour(status: str) -> str:
    """The theme variable for a status (`success`, `error` ...); `foreground` for the rest."""
    return STATUS_COLOURS.get(status, "foreground")


def tests_cell(it: IterationView) -> str:
    if not it.tests:
        return ""
    passed, failed = it.tests.get("passed", 0), it.tests.get("failed", 0)
    errors = it.tests.get("errors", 0)
    return f"{passed}✓ {failed + errors}✗"


def note_cell(it: IterationView) -> str:
    """The first line of what the person told the model with their decision."""
    if not it.comment:
        return ""
    first = it.comment.splitlines()[0].strip()
    return f"“{first[: NOTE_WIDTH - 1]}…”" if len(first) > NOTE_WIDTH else f"“{first}”"


def time_cell(it: IterationView) -> str:
    return said_duration(it.duration_s) if it.duration_s else ""


class HistoryPane(Vertical):
    """The iterations as rows, keyed by their number; iteration 0 is the first verification."""

    DEFAULT_CSS = """
    HistoryPane > DataTable { height: 1fr; scrollbar-size: 1 1; }
    HistoryPane > #levers {
        height: auto; max-height: 3; padding: 0 1; text-wrap: nowrap; text-overflow: ellipsis;
    }
    HistoryPane > #levers.empty { display: none; }
    """

    class Selected(Message):
        """The person moved the cursor to iteration `n`."""

        def __init__(self, n: int) -> None:
            super().__init__()
            self.n = n

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.border_title = "history"
        self._view = RunView()
        self._current: int | None = None  # the iteration the screen shows

    def compose(self) -> ComposeResult:
        table: DataTable[str | Text] = DataTable(cursor_type="row", zebra_stripes=True)
        for label, key in COLUMNS:
            table.add_column(label, key=key)
        yield table
        yield Static(id="levers", classes="empty")

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self.show(self._view))

    @property
    def table(self) -> DataTable[str | Text]:
        return self.query_one(DataTable)

    def show(self, view: RunView) -> None:
        """Add new iterations and update the rest, keeping the cursor where it is."""
        self._view = view
        table = self.table
        noted = any(it.comment for it in view.iterations.values())
        if noted and NOTE_COLUMN[1] not in table.columns:
            table.add_column(NOTE_COLUMN[0], key=NOTE_COLUMN[1], default="")
        columns = [*COLUMNS, NOTE_COLUMN] if NOTE_COLUMN[1] in table.columns else COLUMNS
        for n, it in sorted(view.iterations.items()):
            cells = self._cells(it)[: len(columns)]
            key = str(n)
            if key in table.rows:
                for (_, column), value in zip(columns, cells, strict=True):
                    table.update_cell(key, column, value, update_width=True)
            else:
                table.add_row(*cells, key=key)
        self.border_subtitle = f"{view.current_n}/{view.max_iterations}" if view.run_id else ""
        self._show_levers(view)

    def _show_levers(self, view: RunView) -> None:
        said = [
            Content.assemble((f"{it.n} · ", "$text-muted"), line)
            for _, it in sorted(view.iterations.items())
            for line in it.levers
        ]
        # The person's notes still waiting for the next prompt, theirs from the moment typed.
        said += [Content.assemble(("next · ", "$text-muted"), f"you: {t}") for t in view.waiting]
        said = said[-LEVER_LINES:]
        levers = self.query_one("#levers", Static)
        levers.set_class(not said, "empty")
        levers.update(Content("\n").join(said))

    def select(self, n: int) -> None:
        """Move the cursor to iteration n (the screen's choice, not the person's)."""
        self._current = n
        if str(n) not in self.table.rows:
            return
        index = self.table.get_row_index(str(n))
        if self.table.cursor_row != index:
            self.table.move_cursor(row=index)

    @on(DataTable.RowHighlighted)
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        if event.cursor_row != self.table.cursor_row or event.row_key.value is None:
            return  # stale: the cursor has moved on since
        n = int(event.row_key.value)
        if n != self._current:  # the person moved the cursor
            self._current = n
            self.post_message(self.Selected(n))

    def _cells(self, it: IterationView) -> list[str | Text]:
        colours = getattr(self.app, "theme_variables", {})
        colour = colours.get(status_colour(it.status), "")
        label = "held back" if it.only_held_back else it.status.replace("_", " ")
        status = label + ("…" if it.in_progress else "")
        return [
            "start" if it.n == 0 else str(it.n),
            Text(status, style=f"bold {colour}" if colour else "bold"),
            tests_cell(it),
            it.error_class if it.error_class not in ("", "none") else "",
            f"{it.tokens:,}" if it.tokens else "",
            f"${it.cost_usd:.4f}" if it.n else "",
            time_cell(it),
            note_cell(it),
        ]
