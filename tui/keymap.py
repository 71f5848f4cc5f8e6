"""Every key of the app, in one table: which key does what in which view, and what the key
means everywhere. Each screen's BINDINGS are built from it (`bindings_for`), `docs/keys.md` is
rendered from it (`keys_markdown`), and tests hold the screens to it.

The rules the table keeps (tests/tui/test_keymap.py checks them):
- a key means one thing in every view (`MEANINGS`: one sentence per key);
- a key that says yes (approve, accept, pick) is never one that ends the run or throws work
  away: a key either ends something in every view or in none (`Key.ends`);
- every `ends` key asks first (the confirm screen, whose default button is the harmless one);
- `escape` goes back or closes: it never quits and never drops typed text.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding

# The views, as the table names them (a screen's `bindings_for(VIEW)`).
APP = "app"  # the app's own keys: every view that does not take the key itself
MAIN = "main"  # the live run's four panes
TASK = "task"
REVIEW = "review"
CANDIDATES = "candidates"
SUSPICIOUS = "suspicious"
END = "end"
QUIT = "quit"
CONFIRM = "confirm"
OUTAGE = "outage"
REPLAY = "replay"
RUNS = "runs"
REPORT = "report"
EDITOR = "editor"
SPEC = "spec"
WATCH = "watch"
NOTE = "note"  # the running screen's one-line note for the next prompt
FILES = "files"  # the fuzzy picker of files shown to the model
VIEWS = (
    APP,
    MAIN,
    TASK,
    REVIEW,
    CANDIDATES,
    SUSPICIOUS,
    END,
    QUIT,
    CONFIRM,
    OUTAGE,
    REPLAY,
    RUNS,
    REPORT,
    EDITOR,
    SPEC,
    WATCH,
    NOTE,
    FILES,
)
DIFFS = (REVIEW, CANDIDATES, SUSPICIOUS, END)  # the views with a diff to read
NOTES = (REVIEW, CANDIDATES, SUSPICIOUS)  # the views with a note box for the model


@dataclass(frozen=True)
class Key:
    """One key in some views: Textual's key name, the action it runs there, the footer's label,
    whether it ends the run or throws work away (it then asks first)."""

    key: str
    action: str
    label: str
    views: tuple[str, ...]
    ends: bool = False
    show: bool = True  # in the footer
    priority: bool = False  # before the focused widget (a text area, a table, a button)
    display: str | None = None  # how the footer and docs/keys.md write the key

    @property
    def shown_key(self) -> str:
        return self.display or KEY_NAMES.get(self.key, self.key)


KEY_NAMES = {
    "escape": "esc",
    "right_square_bracket": "]",
    "left_square_bracket": "[",
    "pagedown": "PgDn",
    "pageup": "PgUp",
    "home": "Home",
    "end": "End",
    "down": "↓",
    "up": "↑",
}

# What each key means, in every view where it is bound.
MEANINGS: dict[str, str] = {
    "a": "yes to what is shown: approve, pick, accept, retry",
    "enter": "the focused row or button (the candidates' table: pick the selected one)",
    "ctrl+g": "yes, with the note you typed",
    "ctrl+s": "send what you typed: in a review, no to what is shown, ask again with the note",
    "n": "write a note to the model",
    "e": "edit what is shown",
    "x": "end the run or throw its work away (asks first)",
    "q": "quit the app (asks while a run goes on)",
    "ctrl+q": "quit the app where letters are typed (asks before dropping typed text)",
    "escape": "back, or close this view: never quits, never drops typed text",
    "y": "yes to the question asked",
    "p": "pause: hold the run, it stays resumable",
    "m": "switch step/auto mode of the live run",
    "s": "the end of the run: accept, keep or discard",
    "r": "read the record: the runs, a report",
    "v": "switch between the review and the run's panes",
    "d": "the diff alone on the screen, or back",
    "right_square_bracket": "next: hunk of the diff, iteration of a replay",
    "left_square_bracket": "previous: hunk of the diff, iteration of a replay",
    "pagedown": "scroll down a page",
    "pageup": "scroll up a page",
    "home": "to the top",
    "end": "to the end",
    "down": "down: the next row, or scroll",
    "up": "up: the previous row, or scroll",
    "digit": "select the candidate of that number",
    "t": "let this proposal change pinned tests (or hold them back again)",
    "c": "compare the selected candidate's diff with the next one's",
    "k": "keep the run's branch as it is",
    "o": "switch the feedback pane: packet or model output",
    "l": "follow the live iteration",
    "f": "the next file under repair",
    "ctrl+f": "the next file under repair (where letters are typed)",
    "ctrl+n": "a new module from a spec",
    "ctrl+o": "open the file in $EDITOR",
    "ctrl+r": "verify now",
    "plus": "add a file of the project to what the model is shown",
    "minus": "drop a file you added from what the model is shown",
    "space": "keep or drop the hunk being read (as git add -p does)",
    "A": "keep every hunk again",
}

DIGITS = tuple(str(k) for k in range(10))

KEYS: tuple[Key, ...] = (
    # -- yes, no, and a note ---------------------------------------------------------------------
    Key("a", "approve", "approve", (REVIEW,)),
    Key("a", "pick", "pick", (CANDIDATES,)),
    Key("a", "accept", "accept", (SUSPICIOUS,)),
    Key("a", "decide('accept')", "accept", (END,)),
    Key("a", "retry", "retry now", (OUTAGE,)),
    Key("enter", "pick_row", "pick", (CANDIDATES,), show=False, priority=True),
    Key("enter", "open", "open read-only", (RUNS,), priority=True),
    Key("n", "open_note", "note", NOTES),
    # While a run goes on: a note for the next prompt (engine/run/talk.py).
    Key("n", "note", "note", (MAIN,)),
    Key("ctrl+s", "reject", "reject: ask again", (REVIEW,), priority=True, display="^s"),
    Key("ctrl+s", "reject_all", "none: ask again", (CANDIDATES,), priority=True, display="^s"),
    Key("ctrl+s", "reject", "reject: go on", (SUSPICIOUS,), priority=True, display="^s"),
    Key("ctrl+s", "start", "start the run", (TASK, WATCH), priority=True, display="^s"),
    Key("ctrl+s", "submit", "use this spec", (SPEC,), priority=True, display="^s"),
    Key("ctrl+s", "save", "use these files", (EDITOR,), priority=True, display="^s"),
    Key("ctrl+g", "approve_with_note", "approve + note", (REVIEW,), priority=True, display="^g"),
    Key("ctrl+g", "pick_with_note", "pick + note", (CANDIDATES,), priority=True, display="^g"),
    Key("e", "edit", "edit", (REVIEW, CANDIDATES)),
    Key("e", "change", "change endpoint", (OUTAGE,)),
    Key("t", "allow_tests", "tests", (REVIEW,)),
    Key("c", "compare", "compare", (CANDIDATES,)),
    *(
        Key(k, f"select_number({k})", "select", (CANDIDATES,), show=False, display="0-9")
        for k in DIGITS
    ),
    Key("down", "move(1)", "select", (CANDIDATES,), display="↑↓"),
    Key("up", "move(-1)", "select", (CANDIDATES,), show=False, display="↑↓"),
    Key("k", "decide('keep')", "keep", (END,)),
    Key("y", "answer(True)", "yes", (CONFIRM,)),
    # -- what ends or throws away: each asks first -----------------------------------------------
    Key("x", "abort_run", "abort", (APP,), ends=True),
    Key("x", "abort", "abort", (REVIEW, CANDIDATES), ends=True),
    Key("x", "choose('abort')", "abort", (QUIT,), ends=True),
    Key("x", "decide('discard')", "discard", (END,), ends=True),
    Key("p", "toggle_pause", "pause", (APP,)),
    Key("p", "choose('stop')", "stop, resume later", (QUIT,)),
    # -- the run's panes -------------------------------------------------------------------------
    Key("m", "toggle_mode", "mode", (APP,)),
    Key("s", "show_summary", "end of run", (APP,)),
    Key("r", "open_runs", "runs", (APP,)),
    Key("r", "open_report", "report", (END,)),
    Key("v", "show_review", "review", (APP,)),
    Key("v", "hide", "run", (REVIEW,)),
    Key("f", "next_file", "next file", (MAIN, REPLAY), show=False),
    # A file added to or dropped from every later prompt: out of the footer, which is full at
    # 80 columns; the note box names them.
    Key("plus", "add_file", "add file", (MAIN,), show=False, display="+"),
    Key("minus", "drop_file", "drop file", (MAIN,), show=False, display="-"),
    # Replay of a run that ended undecided: the end of the run, as `s` shows it live.
    Key("s", "finish", "finish", (REPLAY,)),
    Key("o", "toggle_output", "output", (MAIN, REPLAY)),
    # Short labels (here, `prev` and replay's `close`): with a review put aside (`v review`) and
    # an older iteration selected the live run's footer holds nine keys in 80 columns, and
    # replay's holds its own keys and the app's.
    Key("l", "follow", "live", (MAIN,)),
    Key("l", "follow", "last", (REPLAY,)),
    Key("left_square_bracket", "step(-1)", "prev", (REPLAY,)),
    Key("right_square_bracket", "step(1)", "next", (REPLAY,)),
    Key("ctrl+n", "new_from_spec", "spec", (TASK, WATCH), display="^n"),
    Key("ctrl+f", "next_file", "next file", (EDITOR,), priority=True, display="^f"),
    Key("ctrl+o", "outside", "$EDITOR", (EDITOR,), priority=True, display="^o"),
    Key("ctrl+r", "verify", "verify now", (WATCH,), priority=True, display="^r"),
    # -- the diff of every review ----------------------------------------------------------------
    Key("pagedown", "diff_scroll('page_down')", "scroll", DIFFS, priority=True),
    Key("pageup", "diff_scroll('page_up')", "page up", DIFFS, show=False, priority=True),
    Key("home", "diff_scroll('home')", "top", DIFFS, show=False, priority=True),
    Key("end", "diff_scroll('end')", "end", DIFFS, show=False, priority=True),
    Key("right_square_bracket", "diff_hunk(1)", "hunk", DIFFS, priority=True),
    Key("left_square_bracket", "diff_hunk(-1)", "hunk", DIFFS, show=False, priority=True),
    Key("d", "diff_full", "diff", DIFFS, priority=True),
    # Priority: a focused button would take space as a press (approve, at first), the
    # candidates' table as a row's selection.
    Key("space", "toggle_hunk", "keep/drop hunk", (REVIEW, CANDIDATES), show=False, priority=True),
    Key("A", "keep_all_hunks", "keep all hunks", (REVIEW, CANDIDATES), show=False, priority=True),
    # The report's own: its Markdown takes no focus, so the scroll keys are the screen's.
    Key("pagedown", "scroll('page_down')", "page", (REPORT,)),
    Key("pageup", "scroll('page_up')", "page up", (REPORT,), show=False),
    Key("home", "scroll('home')", "top", (REPORT,)),
    Key("end", "scroll('end')", "end", (REPORT,), show=False),
    Key("down", "scroll('down')", "scroll", (REPORT,), show=False),
    Key("up", "scroll('up')", "scroll", (REPORT,), show=False),
    Key("down", "diff_scroll('down')", "scroll", (REVIEW, SUSPICIOUS, END), show=False),
    Key("up", "diff_scroll('up')", "scroll", (REVIEW, SUSPICIOUS, END), show=False),
    # -- back, close, quit -----------------------------------------------------------------------
    Key("escape", "diff_back", "back", DIFFS, show=False, priority=True),
    Key("escape", "close_note", "back", NOTES, priority=True),
    Key("escape", "close", "close", (END, RUNS, REPORT)),
    Key("escape", "close", "close", (REPLAY,)),
    Key("escape", "cancel", "back to the run", (QUIT,)),
    Key("escape", "answer(False)", "no", (CONFIRM,)),
    Key("escape", "leave", "leave it stopped", (OUTAGE,)),
    Key("escape", "keep_task", "back", (TASK, WATCH), priority=True),
    Key("escape", "cancel", "back", (SPEC, EDITOR, FILES), priority=True),
    Key("escape", "cancel", "keep nothing", (NOTE,), priority=True),
    Key("down", "move(1)", "next", (FILES,), show=False),
    Key("up", "move(-1)", "previous", (FILES,), show=False),
    Key("q", "quit", "quit", (APP,)),
    Key("q", "app.quit", "quit", (REVIEW, CANDIDATES, SUSPICIOUS, END, RUNS, REPORT, CONFIRM)),
    Key("q", "quit_again", "quit", (QUIT,), show=False),
    Key("ctrl+q", "quit_task", "quit", (TASK, WATCH), priority=True, display="^q"),
    Key("ctrl+q", "app.quit", "quit", (SPEC, EDITOR), priority=True, display="^q"),
)


def rows_for(view: str) -> list[Key]:
    """The table's rows for one view, in the table's order (the footer's order)."""
    return [row for row in KEYS if view in row.views]


def bindings_for(view: str) -> list[Binding]:
    """A screen's BINDINGS, from the table."""
    return [
        Binding(
            row.key,
            row.action,
            row.label,
            show=row.show,
            priority=row.priority,
            key_display=row.display,
        )
        for row in rows_for(view)
    ]


def meaning(key: str) -> str:
    return MEANINGS["digit" if key in DIGITS else key]


def keys_markdown() -> str:
    """docs/keys.md: the table as a person reads it, one line per key (a candidate's number
    once for all ten digits)."""
    lines = [
        "# Keys",
        "",
        "Generated from `tui/keymap.py` (`keys_markdown`); a test fails when this file differs.",
        "A key means one thing in every view; a key marked *asks first* ends the run or throws",
        "its work away, and only after you say yes (`y`; `enter` on the question says no).",
        "",
        "| key | means | where: what it does | asks first |",
        "| --- | --- | --- | --- |",
    ]
    seen: dict[str, list[Key]] = {}
    for row in KEYS:
        seen.setdefault(row.shown_key, []).append(row)
    for shown, rows in seen.items():
        doing: dict[str, list[str]] = {}
        for row in rows:
            doing.setdefault(row.label, [])
            for view in row.views:
                if view not in doing[row.label]:
                    doing[row.label].append(view)
        where = "; ".join(f"{', '.join(views)}: {label}" for label, views in doing.items())
        asks = "yes" if any(row.ends for row in rows) else ""
        cell = shown.replace("|", "\\|")
        lines.append(f"| `{cell}` | {meaning(rows[0].key)} | {where} | {asks} |")
    return "\n".join(lines) + "\n"
