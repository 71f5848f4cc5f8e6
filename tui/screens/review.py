"""The review modal (step mode): one proposal, the last check's test counts and its diff; approve
`a`, reject with a note `n` (or approve with it), edit `e` (committed as `edited by you`), let
pinned-test edits through `t`, put the modal aside to see the run `v`, abort `x` (asks first).
Keys from `tui/keymap.py`. The diff scrolls (arrows, PgUp/PgDn, Home/End), steps by hunk
(`]`/`[`) and takes the screen (`d`). As `git add -p` does, `space` drops the hunk being read
(or keeps it again) and `A` keeps them all: approving then commits only the kept hunks, as
`edited by you`, and the model hears which were dropped."""

from __future__ import annotations

from collections.abc import Iterable, Set
from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult, SystemCommand
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Static, TextArea
from textual.widgets.button import ButtonVariant

from tui.interactive_gate import ProposalReviewRequest
from tui.keymap import REVIEW, bindings_for
from tui.screens.confirm import abort_question
from tui.screens.diff_keys import DIFF_ACTIONS, DiffKeys
from tui.screens.editor import EditorFile, EditorScreen
from tui.screens.hunk_choice import EVERY_HUNK_DROPPED, HunkChoice
from tui.screens.main import PendingDiff
from tui.widgets.diff import DiffView

# The engine's models are imported where a decision is made: the app imports this screen
# before its first frame, which needs none of them.
if TYPE_CHECKING:
    from engine.edits.hunks import PartialEdit
    from engine.edits.proposal import EditFormat, Proposal
    from engine.run.gate import Review
    from engine.run.preview import ProposalPreview

EDITED_BY_YOU = "edited by you"
REJECTED_BY_YOU = "rejected by you"
# Only while the note box is open (they stay out of the footer otherwise).
NOTE_ACTIONS = frozenset({"reject", "approve_with_note", "close_note"})
HUNK_ACTIONS = frozenset({"toggle_hunk", "keep_all_hunks"})


class ReviewScreen(HunkChoice, DiffKeys, ModalScreen["Review"]):
    """Dismissed with the person's Review; posts `ReviewScreen.Hide` to step aside."""

    DIFF_ID = "review-diff"

    # Short labels: the footer fits 80 columns with the diff's keys too. The note box's keys
    # have priority, so the text area does not take them.
    BINDINGS: ClassVar[list[BindingType]] = [*bindings_for(REVIEW)]

    class Hide(Message):
        """The person wants the run's panes for a moment; the review stays pending."""

        def __init__(self, review: ReviewScreen) -> None:
            super().__init__()
            self.review = review

    def __init__(self, request: ProposalReviewRequest) -> None:
        super().__init__()
        self.request = request
        self.allow_test_edits = False
        self.edited: dict[str, str] | None = None  # the person's version of the files
        self.dropped: set[int] = set()  # the proposal's hunks the person dropped (indexes)
        self.hunk_problem = ""  # why the kept hunks could not be taken, said in the notice
        self.noting = False  # the note box is open
        # Below 100 columns the buttons would not fit: `t` is then said by the notice and footer.
        self.HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-wide")]

    def compose(self) -> ComposeResult:
        request = self.request
        with Vertical(id="dialog", classes="dialog review") as dialog:
            dialog.border_title = f"iteration {request.n}/{request.max_n} · review the proposal"
            with VerticalScroll(id="review-summary"):  # a long explanation scrolls
                explanation = request.proposal.explanation or "(no explanation)"
                yield Static(
                    Content.assemble(("the model says: ", "bold"), explanation), id="explanation"
                )
            yield Static(self._notice(), id="notice")
            yield DiffView(id="review-diff", classes="diff")
            with Vertical(id="note-box") as box:
                box.border_title = "your note to the model"
                yield TextArea(id="note", soft_wrap=True, show_line_numbers=False)
            with Horizontal(id="decisions", classes="buttons"):
                yield dialog_button("approve [a]", "approve", "success")
                yield dialog_button("reject with a note [n]", "open_note", "warning")
                yield dialog_button("edit [e]", "edit", "primary")
                yield dialog_button("abort [x]", "abort", "error")
                if request.held_back:
                    yield dialog_button("allow test edits [t]", "allow_tests", "warning")
            with Horizontal(id="note-decisions", classes="buttons"):
                yield dialog_button("reject: ask again [^s]", "reject", "warning")
                yield dialog_button("approve + note [^g]", "approve_with_note", "success")
                yield dialog_button("back [esc]", "close_note", "default")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self._show_diff()
        self.query_one("#approve", Button).focus()

    def diff_focus_back(self) -> None:
        self.query_one("#approve", Button).focus()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The note box's keys while it is open; the review's own keys otherwise."""
        if action in NOTE_ACTIONS:
            return self.noting
        if action in DIFF_ACTIONS:
            return not self.noting and self.diff_action_allowed(action)
        if action == "allow_tests":
            return bool(self.request.held_back) and self.edited is None and not self.noting
        if action in HUNK_ACTIONS:  # enabled even with no hunks: space never presses a button
            return not self.noting
        return not self.noting

    # -- what the modal shows -------------------------------------------------------------------

    def diff_text(self) -> str:
        """The diff being reviewed: the model's proposal, or the person's edit of it."""
        if self.edited is None:
            return self.request.preview.diff
        return edited_diff(self.request.preview, self.edited)

    def note_text(self) -> str:
        return self.query_one("#note", TextArea).text.strip()

    def pending_diff(self) -> PendingDiff:
        """What the run's diff pane shows while this review is put aside (`v`): what approving
        would commit. With hunks dropped, only the kept ones (the dropped ones are absent, as
        are pinned test edits held back), and the pane's title says how many were kept."""
        from engine.errors import EditFormatError

        n, preview = self.request.n, self.request.preview
        if preview.error and self.edited is None:
            return PendingDiff(n, "", f"the proposal does not apply: {preview.error}")
        if not (self.dropped and self.hunks_choosable()):
            return PendingDiff(n, self.diff_text())
        total = self.hunk_total()
        kept = total - len(self.dropped)
        title = f"diff · what approving commits: {kept} of {total} hunks"
        if not kept:
            return PendingDiff(n, "", "every hunk dropped: approving commits nothing", title)
        try:
            texts = self.kept_part().texts
        except EditFormatError as error:
            return PendingDiff(n, "", f"the kept hunks do not apply: {error}", title)
        return PendingDiff(n, edited_diff(preview, texts), "the kept hunks change nothing", title)

    def _show_diff(self) -> None:
        preview, view = self.request.preview, self.active_diff()
        if preview.error and self.edited is None:
            view.show_message(Content.styled(preview.error, "$text-error"))
        else:
            view.show(self.diff_text())
            view.mark_hunks(self.dropped if self.hunks_choosable() else None)

    def hunks_choosable(self) -> bool:
        """Whether hunks can be kept or dropped: the model's proposal, applicable (the person's
        own edit is taken whole)."""
        return self.edited is None and not self.request.preview.error and self.hunk_total() > 0

    def hunk_total(self) -> int:
        from engine.edits.hunks import hunk_count

        return hunk_count(self.request.preview.diff)

    def _notice(self) -> Content:
        request = self.request
        last = request.last_check
        checked = [Content.styled(last.describe(), "$text-muted")] if last is not None else []
        if self.edited is not None:
            files = ", ".join(self.edited) or "no file"
            return Content("\n").join(
                [
                    Content.assemble(("files: ", "bold"), files),
                    *checked,
                    Content.styled(
                        "your edit: approving commits it as your own (e: edit again)",
                        "bold $text-accent",
                    ),
                ]
            )
        files = ", ".join(f.path for f in request.preview.files) or "no file"
        lines = [Content.assemble(("files: ", "bold"), files), *checked]
        if self.dropped:
            lines.append(self._hunks_notice())
        if self.hunk_problem:
            lines.append(Content.styled(self.hunk_problem, "bold $text-error"))
        if request.preview.error:
            lines.append(
                Content.styled(
                    "these edits do not apply to the current files: approving tells the model why",
                    "$text-warning",
                )
            )
        if request.held_back:
            held = ", ".join(request.held_back)
            if self.allow_test_edits:
                text = f"pinned tests {held} WILL be changed: a pass then needs your approval"
                lines.append(Content.styled(text, "bold $text-error"))
            else:
                text = f"pinned tests {held} will be held back (t: allow these edits)"
                lines.append(Content.styled(text, "$text-warning"))
        return Content("\n").join(lines)

    def _hunks_notice(self) -> Content:
        return self.hunks_kept_notice("approving", "rejects the proposal")

    def _refresh(self) -> None:
        self.query_one("#notice", Static).update(self._notice())
        self._show_diff()

    def palette_commands(self) -> Iterable[SystemCommand]:
        """The review's decisions, in the command palette too."""
        yield SystemCommand(
            "Review: approve (a)", "apply and verify the proposal", self.action_approve
        )
        yield SystemCommand(
            "Review: reject with a note (n)",
            "apply nothing; the model is asked again with your note",
            self.action_open_note,
        )
        yield SystemCommand("Review: edit (e)", "edit the proposal in the app", self.action_edit)
        yield SystemCommand(
            "Review: see the run (v)",
            "hide the review for a moment; v brings it back",
            self.action_hide,
        )
        yield SystemCommand(
            "Review: the diff full screen (d)", "d or esc: back", self.action_diff_full
        )
        if self.hunks_choosable():
            yield SystemCommand(
                "Review: keep or drop this hunk (space)",
                "approving commits only the kept hunks",
                self.action_toggle_hunk,
            )
            yield SystemCommand(
                "Review: keep every hunk (A)", "take the whole proposal", self.action_keep_all_hunks
            )
        yield SystemCommand("Review: abort (x)", "end the run here (asks first)", self.action_abort)
        if self.request.held_back:
            yield SystemCommand(
                "Review: allow test edits (t)",
                "let this proposal change pinned tests",
                self.action_allow_tests,
            )

    # -- actions ------------------------------------------------------------------------------

    def action_approve(self) -> None:
        self._decide(self._approval())

    def action_approve_with_note(self) -> None:
        self._decide(self._approval(self.note_text()))

    def _decide(self, review: Review | None) -> None:
        if review is not None:
            self.dismiss(review)

    def _part_approved(self, comment: str) -> Review | None:
        """Only the kept hunks, as the person's edit; every hunk dropped: a rejection."""
        from engine.run.gate import Review

        part = self.kept_hunks()
        if part is None:
            return None
        if part == EVERY_HUNK_DROPPED:
            return Review(decision="reject", comment=comment, note=REJECTED_BY_YOU, by="person")
        proposal = edited_proposal(part.texts, self.request.proposal.format)
        return Review(
            decision="edit",
            proposal=proposal,
            note=EDITED_BY_YOU,
            comment=comment,
            by="person",
            dropped=part.dropped,
        )

    def kept_part(self) -> PartialEdit:
        """The proposal's kept hunks applied to the files before it; pinned tests held back
        unless their edits are allowed, as in an edit (`e`)."""
        from engine.edits.hunks import PartialEdit, keep_hunks

        preview = self.request.preview
        before = {f.path: f.before for f in preview.files}
        after = {f.path: f.after for f in preview.files}
        part = keep_hunks(preview.diff, before, after, self.dropped)
        held = set(self.request.held_back) if not self.allow_test_edits else set()
        texts = {path: text for path, text in part.texts.items() if path not in held}
        return PartialEdit(texts=texts, dropped=part.dropped)

    @property
    def chosen_drops(self) -> set[int]:
        return self.dropped

    def set_drops(self, dropped: set[int]) -> None:
        self.dropped = dropped

    def _approval(self, comment: str = "") -> Review | None:
        from engine.run.gate import Review

        if self.edited is None and self.dropped and self.hunks_choosable():
            return self._part_approved(comment)
        if self.edited is None:
            return Review(
                decision="approve",
                allow_test_edits=self.allow_test_edits,
                comment=comment,
                by="person",
            )
        proposal = edited_proposal(self.edited, self.request.proposal.format)
        return Review(
            decision="edit", proposal=proposal, note=EDITED_BY_YOU, comment=comment, by="person"
        )

    def action_reject(self) -> None:
        from engine.run.gate import Review

        self.dismiss(
            Review(decision="reject", comment=self.note_text(), note=REJECTED_BY_YOU, by="person")
        )

    def action_open_note(self) -> None:
        self.show_diff_full(False)
        self._show_note(True)
        self.query_one("#note", TextArea).focus()

    def action_close_note(self) -> None:
        """Back to the review; the note is kept for the next `n`."""
        self._show_note(False)
        self.query_one("#approve", Button).focus()

    def _show_note(self, noting: bool) -> None:
        self.noting = noting
        self.set_class(noting, "-noting")
        self.refresh_bindings()

    def action_hide(self) -> None:
        self.post_message(self.Hide(self))

    def action_abort(self) -> None:
        """Asks first: the confirm's default answer keeps the review open."""
        self.app.push_screen(abort_question(" at this review"), self._abort_confirmed)

    def _abort_confirmed(self, yes: bool | None) -> None:
        from engine.run.gate import Review

        if yes:
            self.dismiss(Review(decision="abort", note="aborted by you at review", by="person"))

    def action_allow_tests(self) -> None:
        if not self.request.held_back or self.edited is not None:
            return
        self.allow_test_edits = not self.allow_test_edits
        label = "hold tests back [t]" if self.allow_test_edits else "allow test edits [t]"
        self.query_one("#allow_tests", Button).label = Content(label)
        self._refresh()

    def action_edit(self) -> None:
        self.app.push_screen(EditorScreen(self.editable_files()), self._edited)

    def editable_files(self) -> list[EditorFile]:
        """The files as the proposal (or its kept hunks, or the person's last edit) would
        leave them; pinned tests only when their edits are allowed."""
        if self.edited is not None:
            return [EditorFile(path=path, text=text) for path, text in self.edited.items()]
        if self.dropped and self.hunks_choosable():
            texts = self.kept_part().texts
            return [EditorFile(path=path, text=text) for path, text in texts.items()]
        held = set(self.request.held_back) if not self.allow_test_edits else set()
        return files_after(self.request.preview, skip=held)

    def _edited(self, texts: dict[str, str] | None) -> None:
        if texts is None:
            return  # the person went back without saving
        self.edited = texts
        self.dropped.clear()  # the person's version is taken whole
        self.hunk_problem = ""
        self._refresh()
        self.refresh_bindings()


def files_after(preview: ProposalPreview, skip: Set[str] = frozenset()) -> list[EditorFile]:
    """The files as a proposal would leave them, to edit (but those in `skip`)."""
    return [
        EditorFile(path=f.path, text=(f.after if f.after is not None else f.before) or "")
        for f in preview.files
        if f.path not in skip
    ]


def edited_diff(preview: ProposalPreview, texts: dict[str, str]) -> str:
    """The diff of the person's edit, against the files before the proposal."""
    from engine.run.preview import file_diff

    before = {f.path: f.before for f in preview.files}
    return "".join(file_diff(path, before.get(path), text) for path, text in texts.items())


def edited_proposal(texts: dict[str, str], format: EditFormat) -> Proposal:
    """The person's edit as a proposal of whole files, committed as `edited by you`."""
    from engine.edits.proposal import Edit, Proposal

    edits = [Edit(path=path, content=text) for path, text in texts.items()]
    return Proposal(explanation=EDITED_BY_YOU, edits=edits, format=format)


def dialog_button(label: str, action: str, variant: ButtonVariant) -> Button:
    """A compact button that runs the screen's `action` (its key is in the label)."""
    return Button(
        Content(label),
        id=action,
        variant=variant,
        compact=True,
        action=f"screen.{action}",
    )
