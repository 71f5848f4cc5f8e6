"""The candidates modal (step mode, `--candidates N`): an iteration's verified candidates side by
side (verdict, tests, files, diff size; the ranking's best and the doubtful ones marked), why
any others were dropped, and the selected one's diff; select with the arrows or a candidate's
number (as in the trail), pick it `a` (or `enter`), edit it `e`, write a note `n` and pick with it
`ctrl+g` or reject them all and ask again with it `ctrl+s` (as the single review's reject), or
abort `x` (asks first). Keys from `tui/keymap.py`. As in the single review (`git add -p`),
`space` drops the selected candidate's hunk being read (or keeps it again) and `A` keeps them
all: picking it then commits only its kept hunks, as `edited by you`, and the model hears which
were dropped.
The diff scrolls (PgUp/PgDn, Home/End; the arrows once it has the focus), steps by hunk
(`]`/`[`) and takes the screen (`d`); `c` compares the selected candidate with the next, side by
side from 120 columns, else one after the other under their labels.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult, SystemCommand
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import DataTable, Footer, Static, TextArea

from engine.edits.diff import parse_diff
from tui.interactive_gate import CandidatesRequest
from tui.keymap import CANDIDATES, bindings_for
from tui.screens.confirm import abort_question
from tui.screens.diff_keys import DIFF_ACTIONS, DiffKeys
from tui.screens.editor import EditorFile, EditorScreen
from tui.screens.hunk_choice import EVERY_HUNK_DROPPED, HunkChoice
from tui.screens.review import (
    EDITED_BY_YOU,
    REJECTED_BY_YOU,
    dialog_button,
    edited_diff,
    edited_proposal,
    files_after,
)
from tui.widgets.diff import DiffView
from tui.widgets.history import status_colour

# The engine's models are imported where a decision is made: the app imports this screen
# before its first frame, which needs none of them.
if TYPE_CHECKING:
    from engine.edits.hunks import PartialEdit
    from engine.run.gate import CandidateView, Choice

CHOSEN_BY_YOU = "chosen by you"
FILES_WIDTH = 20  # what the files column may take of an 80-column table
COLUMNS = ("#", "verdict", "tests", "files", "diff", "")
GIT_HEADERS = ("diff --git ", "index ")
# Only while the note box is open (they stay out of the footer otherwise).
NOTE_ACTIONS = frozenset({"pick_with_note", "reject_all", "close_note"})
HUNK_ACTIONS = frozenset({"toggle_hunk", "keep_all_hunks"})
COMPARING = "-comparing"  # the screen's class while two candidates' diffs are compared
SIDE_BY_SIDE = 120  # the width from which they are compared side by side


def tests_cell(candidate: CandidateView) -> str:
    """`4✓ 1✗ of 5`: passed, failed (errors included) and collected."""
    t = candidate.tests
    if t is None:
        return "no report"
    return f"{t.passed}✓ {t.failed + t.errors}✗ of {t.collected}"


def files_cell(candidate: CandidateView) -> str:
    files = ", ".join(candidate.files) or "no file"
    return files if len(files) <= FILES_WIDTH else files[: FILES_WIDTH - 1] + "…"


def diff_size(diff: str) -> str:
    """`+3 -1`: the lines the diff adds and removes."""
    added = removed = 0
    for file in parse_diff(diff).files:
        for hunk in file.hunks:
            added += sum(line.kind == "added" for line in hunk.lines)
            removed += sum(line.kind == "removed" for line in hunk.lines)
    return f"+{added} -{removed}"


def marks(candidate: CandidateView, best: int, colours: dict[str, str]) -> Text:
    """`best` for the ranking's choice, `doubtful` for a pass with reasons to doubt it."""
    said = Text()
    if candidate.k == best:
        said.append("best", style=f"bold {colours.get('success', '')}".strip())
    if candidate.suspicious:
        said.append(" " if said else "")
        said.append("doubtful", style=f"bold {colours.get('warning', '')}".strip())
    return said


def without_git_headers(diff: str) -> str:
    """The diff without git's `diff --git` and `index` lines: the modal is short on rows."""
    kept = (line for line in diff.splitlines(keepends=True) if not line.startswith(GIT_HEADERS))
    return "".join(kept)


class CandidatesScreen(HunkChoice, DiffKeys, ModalScreen["Choice"]):
    """Dismissed with the person's Choice."""

    # A candidate's number (as in the trail: iterations/NN/candidates/K/) selects it; `enter`
    # has priority, as the table's own would only highlight the row; the note box's keys too,
    # so the text area does not take them.
    BINDINGS: ClassVar[list[BindingType]] = [*bindings_for(CANDIDATES)]

    def __init__(self, request: CandidatesRequest, dropped: Sequence[str] = ()) -> None:
        """`dropped`: a line for each of the iteration's other candidates, why it was not
        verified (`candidate 2 dropped: unusable: ...`)."""
        super().__init__()
        self.request = request
        self.dropped = list(dropped)
        self.selected = self._index_of(request.best.k)
        self.edited: dict[int, dict[str, str]] = {}  # the person's version, by candidate
        # The hunks the person dropped (indexes into its diff), by candidate.
        self.hunks_dropped: dict[int, set[int]] = {}
        self.hunk_problem = ""  # why the kept hunks could not be taken, said in the notice
        self.noting = False  # the note box is open
        self.HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (SIDE_BY_SIDE, "-wide")]

    def compose(self) -> ComposeResult:
        request = self.request
        with Vertical(id="dialog", classes="dialog candidates") as dialog:
            many = len(request.candidates)
            asked = f" of {many + len(self.dropped)}" if self.dropped else ""
            dialog.border_title = (
                f"iteration {request.n}/{request.max_n} · {many}{asked} candidates verified:"
                " pick one"
            )
            numbers = [c.k for c in request.candidates]
            keys = f"{min(numbers)}-{max(numbers)}" if len(numbers) > 1 else str(numbers[0])
            dialog.border_subtitle = f"↑↓ or {keys}: select"
            table: DataTable[str | Text] = DataTable(
                id="candidates-table", cursor_type="row", zebra_stripes=True
            )
            yield table
            with VerticalScroll(id="candidate-summary"):
                yield Static(id="notice")
            yield DiffView(id="candidate-diff", classes="diff")
            with Horizontal(id="compare"):
                yield DiffView(id="compare-both", classes="compared")
                yield DiffView(id="compare-left", classes="compared")
                yield DiffView(id="compare-right", classes="compared")
            with Vertical(id="note-box") as box:
                box.border_title = "your note to the model, sent with your choice"
                yield TextArea(id="note", soft_wrap=True, show_line_numbers=False)
            with Horizontal(id="decisions", classes="buttons"):
                yield dialog_button("pick [a]", "pick", "success")
                yield dialog_button("edit [e]", "edit", "primary")
                yield dialog_button("note [n]", "open_note", "default")
                yield dialog_button("abort [x]", "abort", "error")
            with Horizontal(id="note-decisions", classes="buttons"):
                yield dialog_button("none: ask again [^s]", "reject_all", "warning")
                yield dialog_button("pick + note [^g]", "pick_with_note", "success")
                yield dialog_button("back [esc]", "close_note", "default")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        table = self.table
        for label in COLUMNS:
            table.add_column(label, key=label or "marks")
        colours = self.app.theme_variables
        for candidate in self.request.candidates:
            colour = colours.get(status_colour(candidate.verdict), "")
            table.add_row(
                str(candidate.k),
                Text(candidate.verdict.replace("_", " "), style=f"bold {colour}".strip()),
                tests_cell(candidate),
                files_cell(candidate),
                diff_size(candidate.diff),
                marks(candidate, self.request.best.k, colours),
                key=str(candidate.k),
            )
        table.move_cursor(row=self.selected)
        table.focus()
        self._refresh()

    @property
    def table(self) -> DataTable[str | Text]:
        return self.query_one("#candidates-table", DataTable)

    @property
    def candidate(self) -> CandidateView:
        """The selected candidate."""
        return self.request.candidates[self.selected]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The note box's keys while it is open; the choice's own keys otherwise."""
        if action in NOTE_ACTIONS:
            return self.noting
        if self.noting:
            return False
        if action == "pick_row":  # enter on a diff shows it full screen
            return not isinstance(self.focused, DiffView)
        if action == "compare":
            return len(self.request.candidates) > 1
        if action in DIFF_ACTIONS:
            return self.diff_action_allowed(action)
        if action in HUNK_ACTIONS:  # enabled with no hunks too: space never selects a row
            return not self.has_class(COMPARING)
        return True

    # -- what the modal shows -------------------------------------------------------------------

    def diff_text(self) -> str:
        """The selected candidate's diff, or the person's edit of it."""
        return self._diff_of(self.candidate)

    def _diff_of(self, candidate: CandidateView) -> str:
        texts = self.edited.get(candidate.k)
        if texts is None:
            return candidate.diff
        return edited_diff(self.request.previews[candidate.k], texts)

    @property
    def compared(self) -> tuple[CandidateView, CandidateView]:
        """What `c` compares: the selected candidate and the next (the first after the last)."""
        candidates = self.request.candidates
        return self.candidate, candidates[(self.selected + 1) % len(candidates)]

    def note_text(self) -> str:
        return self.query_one("#note", TextArea).text.strip()

    def _notice(self) -> Content:
        candidate = self.candidate
        explanation = candidate.explanation or "(no explanation)"
        lines = [Content.assemble((f"candidate {candidate.k}: ", "bold"), explanation)]
        if candidate.summary and candidate.tests is None:  # else the table says it
            lines.append(Content.styled(candidate.summary, "$text-muted"))
        if candidate.suspicious:
            doubts = "; ".join(candidate.suspicious)
            lines.append(Content.styled(f"doubtful: {doubts}", "$text-warning"))
        if candidate.k in self.edited:
            lines.append(
                Content.styled(
                    "your edit: picking commits it as your own (e: edit again)",
                    "bold $text-accent",
                )
            )
        if self.dropped_hunks and self.hunks_choosable():
            lines.append(self.hunks_kept_notice("picking", "asks again"))
        if self.hunk_problem:
            lines.append(Content.styled(self.hunk_problem, "bold $text-error"))
        note = self.note_text()
        if note and not self.noting:
            lines.append(Content.assemble(("your note: ", "bold"), note.splitlines()[0]))
        lines.extend(Content.styled(line, "$text-muted") for line in self.dropped)
        return Content("\n").join(lines)

    def _refresh(self) -> None:
        self.query_one("#notice", Static).update(self._notice())
        view = self.query_one("#candidate-diff", DiffView)
        view.show(without_git_headers(self.diff_text()))
        view.mark_hunks(self.dropped_hunks if self.hunks_choosable() else None)
        if self.has_class(COMPARING):
            self._show_compared()

    def _show_compared(self) -> None:
        parts = [
            (_label(candidate), without_git_headers(self._diff_of(candidate)))
            for candidate in self.compared
        ]
        self.query_one("#compare-both", DiffView).show_parts(parts)
        for view_id, (label, diff) in zip(("#compare-left", "#compare-right"), parts, strict=True):
            view = self.query_one(view_id, DiffView)
            view.border_title = label
            view.show(diff)

    # -- the diff views -------------------------------------------------------------------------

    def active_diff(self) -> DiffView:
        if not self.has_class(COMPARING):
            return self.query_one("#candidate-diff", DiffView)
        if self.has_class("-narrow"):
            return self.query_one("#compare-both", DiffView)
        focused = self.focused
        if isinstance(focused, DiffView) and focused.has_class("compared"):
            return focused
        return self.query_one("#compare-left", DiffView)

    def diff_focus_back(self) -> None:
        self.table.focus()

    def show_diff_full(self, full: bool) -> None:
        if not full:
            self.remove_class(COMPARING)
        super().show_diff_full(full)

    def action_compare(self) -> None:
        """The selected candidate's diff and the next one's, alone on the screen (or back)."""
        if self.has_class(COMPARING):
            self.show_diff_full(False)
            return
        self.add_class(COMPARING)
        self._show_compared()
        self.show_diff_full(True)

    def palette_commands(self) -> Iterable[SystemCommand]:
        """The choice's decisions, in the command palette too."""
        yield SystemCommand("Candidates: pick the selected one (a)", "commit it", self.action_pick)
        yield SystemCommand(
            "Candidates: edit the selected one (e)", "edit it in the app", self.action_edit
        )
        yield SystemCommand(
            "Candidates: a note to the model (n)",
            "then pick with it (ctrl+g) or ask again with it (ctrl+s)",
            self.action_open_note,
        )
        yield SystemCommand(
            "Candidates: none of these, ask again with my note (n, then ctrl+s)",
            "commit nothing; the model is asked again",
            self.action_open_note,
        )
        yield SystemCommand(
            "Candidates: the diff full screen (d)", "d or esc: back", self.action_diff_full
        )
        if len(self.request.candidates) > 1:
            yield SystemCommand(
                "Candidates: compare the selected one with the next (c)",
                "c or esc: back",
                self.action_compare,
            )
        yield SystemCommand(
            "Candidates: abort (x)", "end the run here (asks first)", self.action_abort
        )

    # -- selecting ------------------------------------------------------------------------------

    def _index_of(self, k: int) -> int:
        ks = [c.k for c in self.request.candidates]
        return ks.index(k) if k in ks else 0

    def action_move(self, step: int) -> None:
        self.action_select(self.selected + step)

    def action_select(self, index: int) -> None:
        if 0 <= index < len(self.request.candidates):
            self.table.move_cursor(row=index)  # the highlight moves `selected`

    def action_select_number(self, k: int) -> None:
        if any(c.k == k for c in self.request.candidates):
            self.action_select(self._index_of(k))

    @on(DataTable.RowHighlighted)
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        if event.cursor_row != self.selected:
            self.selected = event.cursor_row
            self.hunk_problem = ""
            self._refresh()

    # -- its hunks, as `git add -p` takes them ------------------------------------------------

    @property
    def dropped_hunks(self) -> set[int]:
        """The selected candidate's hunks the person dropped."""
        return self.hunks_dropped.get(self.candidate.k, set())

    def hunks_choosable(self) -> bool:
        """Whether the selected candidate's hunks can be kept or dropped: its diff as the model
        made it (the person's own edit is taken whole), with files to apply the kept ones to."""
        k = self.candidate.k
        preview = self.request.previews.get(k)
        usable = preview is not None and not preview.error
        return k not in self.edited and usable and self.hunk_total() > 0

    def hunk_total(self) -> int:
        from engine.edits.hunks import hunk_count

        return hunk_count(self.candidate.diff)

    def kept_part(self) -> PartialEdit:
        """The selected candidate's kept hunks applied to the files before it (its diff, the
        one shown, is the one the hunks are counted in)."""
        from engine.edits.hunks import keep_hunks

        preview = self.request.previews[self.candidate.k]
        before = {f.path: f.before for f in preview.files}
        after = {f.path: f.after for f in preview.files}
        return keep_hunks(self.candidate.diff, before, after, self.dropped_hunks)

    @property
    def chosen_drops(self) -> set[int]:
        return self.dropped_hunks

    def set_drops(self, dropped: set[int]) -> None:
        if dropped:
            self.hunks_dropped[self.candidate.k] = dropped
        else:
            self.hunks_dropped.pop(self.candidate.k, None)

    # -- decisions ------------------------------------------------------------------------------

    def action_pick(self) -> None:
        self._decide(self._choice())

    def action_pick_row(self) -> None:
        """`enter` on the table (or a button): the selected candidate."""
        self.action_pick()

    def action_pick_with_note(self) -> None:
        self._decide(self._choice())

    def _decide(self, choice: Choice | None) -> None:
        if choice is not None:
            self.dismiss(choice)

    def action_reject_all(self) -> None:
        """None of these: nothing is committed and the model is asked again with the note, as
        after the single review's reject."""
        from engine.run.gate import Choice

        self.dismiss(
            Choice(decision="reject", why=REJECTED_BY_YOU, comment=self.note_text(), by="person")
        )

    def _choice(self) -> Choice | None:
        """The selected candidate as it is, or as the person edited it, or its kept hunks (as
        the person's edit; every hunk dropped: none is applied, the model is asked again);
        with the note."""
        from engine.run.gate import Choice

        candidate, comment = self.candidate, self.note_text()
        if self.dropped_hunks and self.hunks_choosable():
            return self._part_chosen(comment)
        texts = self.edited.get(candidate.k)
        if texts is None:
            return Choice(
                decision="pick", k=candidate.k, why=CHOSEN_BY_YOU, comment=comment, by="person"
            )
        proposal = edited_proposal(texts, candidate.proposal.format)
        return Choice(
            decision="edit",
            k=candidate.k,
            proposal=proposal,
            why=EDITED_BY_YOU,
            comment=comment,
            by="person",
        )

    def _part_chosen(self, comment: str) -> Choice | None:
        from engine.run.gate import Choice

        candidate = self.candidate
        part = self.kept_hunks()
        if part is None:
            return None
        if part == EVERY_HUNK_DROPPED:
            return Choice(decision="reject", why=REJECTED_BY_YOU, comment=comment, by="person")
        return Choice(
            decision="edit",
            k=candidate.k,
            proposal=edited_proposal(part.texts, candidate.proposal.format),
            why=EDITED_BY_YOU,
            comment=comment,
            by="person",
            dropped=part.dropped,
        )

    def action_abort(self) -> None:
        """Asks first: the confirm's default answer keeps the choice open."""
        self.app.push_screen(abort_question(" at the candidates"), self._abort_confirmed)

    def _abort_confirmed(self, yes: bool | None) -> None:
        from engine.run.gate import Choice

        if yes:
            why = "aborted by you at the candidates"
            self.dismiss(Choice(decision="abort", why=why, by="person"))

    def action_open_note(self) -> None:
        self.show_diff_full(False)
        self._show_note(True)
        self.query_one("#note", TextArea).focus()

    def action_close_note(self) -> None:
        """Back to the candidates; the note is kept and goes with the choice."""
        self._show_note(False)
        self.table.focus()
        self._refresh()

    def _show_note(self, noting: bool) -> None:
        self.noting = noting
        self.set_class(noting, "-noting")
        self.refresh_bindings()

    def action_edit(self) -> None:
        files = self.editable_files()
        if not files:
            self.notify("this candidate's files could not be read", severity="warning")
            return
        self.app.push_screen(EditorScreen(files), self._edited)

    def editable_files(self) -> list[EditorFile]:
        """The files as the selected candidate (or its kept hunks, or the person's last edit
        of it) leaves them."""
        from engine.errors import EditFormatError

        texts = self.edited.get(self.candidate.k)
        if texts is None and self.dropped_hunks and self.hunks_choosable():
            try:
                texts = self.kept_part().texts
            except EditFormatError:
                texts = None  # the whole candidate, then
        if texts is not None:
            return [EditorFile(path=path, text=text) for path, text in texts.items()]
        preview = self.request.previews.get(self.candidate.k)
        if preview is None or preview.error:
            return []
        return files_after(preview)

    def _edited(self, texts: dict[str, str] | None) -> None:
        if texts is None:
            return  # the person went back without saving
        self.edited[self.candidate.k] = texts
        self.hunks_dropped.pop(self.candidate.k, None)  # the person's version is taken whole
        self.hunk_problem = ""
        self._refresh()


def _label(candidate: CandidateView) -> str:
    """A compared diff's label: the candidate's number and verdict."""
    return f"candidate {candidate.k} · {candidate.verdict.replace('_', ' ')}"
