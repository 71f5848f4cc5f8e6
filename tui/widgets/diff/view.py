"""The diff view of the reviews: a whole diff, highlighted, scrolled by keyboard (arrows, PgUp,
PgDn, Home, End), its hunks stepped through with `]`/`[` (the border says which hunk is on
top: `hunk 2/3`); `enter` asks its screen to show it alone (full screen) or back. Where its
screen lets the person keep some hunks and drop the rest, each hunk's header says which."""

from __future__ import annotations

from collections.abc import Sequence, Set
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.widgets import Static

from tui.widgets.diff.render import ReadableDiff, readable_diff

NO_CHANGE = "this changes nothing"


class DiffView(VerticalScroll, can_focus=True):
    """One diff (or several, one after the other under their labels), never wrapped: a long
    line scrolls sideways, so every character stays where the diff has it."""

    DEFAULT_CSS = """
    DiffView > Static { width: auto; min-width: 100%; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        # Said by the border (the screen's footer has its own key for it, or none to spare).
        Binding("enter", "full_screen", "diff", show=False),
        Binding("right_square_bracket", "hunk(1)", "hunk", key_display="]", show=False),
        Binding("left_square_bracket", "hunk(-1)", "hunk", key_display="[", show=False),
    ]

    class FullScreen(Message):
        """The person asked to see this diff alone (or, when it is, back in its screen)."""

        def __init__(self, view: DiffView) -> None:
            super().__init__()
            self.view = view

        @property
        def control(self) -> DiffView:
            return self.view

    def __init__(
        self, *, id: str | None = None, classes: str | None = None, full_key: str = "d"
    ) -> None:
        """`full_key`: the key the border names for full screen (the screen's own)."""
        super().__init__(id=id, classes=classes)
        self.full_key = full_key
        self.shown = ReadableDiff(lines=(), hunks=())
        self.texts: tuple[str, ...] = ()  # the diffs shown, as given
        # The hunks dropped (their indexes), while the screen offers the choice; None: it does not
        self.dropped: frozenset[int] | None = None

    def compose(self) -> ComposeResult:
        yield Static(Content(""), classes="diff-lines")

    def on_mount(self) -> None:
        self.watch(self, "scroll_y", self._moved, init=False)

    # -- what it shows ------------------------------------------------------------------------

    @property
    def text(self) -> str:
        """The diff shown (several: one after the other), as it was given."""
        return "".join(self.texts)

    def show(self, diff: str, *, empty: str = NO_CHANGE) -> None:
        """`diff`, from its first line; `empty` (muted) when it changes nothing."""
        self.show_parts([("", diff)], empty=empty)

    def show_parts(self, parts: Sequence[tuple[str, str]], *, empty: str = NO_CHANGE) -> None:
        """Each diff under its label (a bold line; none for an empty label), one after the
        other; hunks are counted across all of them."""
        texts = tuple(diff for _, diff in parts)
        if texts == self.texts and self.shown.lines:
            return  # the same diffs stay where the person scrolled them
        shown = ReadableDiff(lines=(), hunks=())
        for label, diff in parts:
            part = readable_diff(diff) if diff.strip() else _said(empty, "$text-muted")
            if label:
                part = part.after(_said(label, "bold reverse"))
            shown = part.after(shown)
        self.texts = texts
        self._put(shown)

    def show_message(self, message: Content) -> None:
        """A line instead of a diff (why there is none)."""
        self.texts = ()
        self._put(ReadableDiff(lines=(message,), hunks=()))

    def _put(self, shown: ReadableDiff) -> None:
        self.shown = shown
        self._paint()
        self.scroll_home(animate=False, immediate=True)
        self._moved()

    def mark_hunks(self, dropped: Set[int] | None) -> None:
        """Mark each hunk kept or dropped (`dropped`: the indexes of the dropped ones), where
        the person is reading; None: no marks (the screen offers no such choice)."""
        self.dropped = None if dropped is None else frozenset(dropped)
        self._paint()
        self._moved()

    def _paint(self) -> None:
        shown = self.shown
        content = shown.content if self.dropped is None else shown.marked(self.dropped)
        self.query_one(".diff-lines", Static).update(content)

    # -- hunks --------------------------------------------------------------------------------

    @property
    def hunk(self) -> int:
        """The index of the hunk being read: the last one whose header is at or above the top
        of the view (the first before it), the last one once the view is at its end; -1 when
        there is none."""
        hunks = self.shown.hunks
        if not hunks:
            return -1
        if self.max_scroll_y > 0 and self.scroll_y >= self.max_scroll_y:
            return len(hunks) - 1
        top = round(self.scroll_y)
        return max((i for i, line in enumerate(hunks) if line <= top), default=0)

    def action_hunk(self, step: int) -> None:
        """The next hunk's header (1) to the top of the view; the start of this hunk, or of the
        one before when at its start already (-1)."""
        hunks = self.shown.hunks
        if not hunks:
            return
        index = self.hunk
        if step < 0 and round(self.scroll_y) > hunks[index]:
            index += 1  # back to this hunk's own start first
        index = min(max(index + step, 0), len(hunks) - 1)
        self.scroll_to(y=hunks[index], animate=False, immediate=True)
        self._moved()

    def _moved(self) -> None:
        hunks = len(self.shown.hunks)
        if not hunks:
            self.border_subtitle = ""
            return
        where = f"hunk {self.hunk + 1}/{hunks}"
        if self.dropped is not None:
            state = "dropped" if self.hunk in self.dropped else "kept"
            where = f"{where} {state} · space keep/drop"
        self.border_subtitle = f"{where} · ] [ hunks · {self.full_key} full"

    def action_full_screen(self) -> None:
        self.post_message(self.FullScreen(self))


def _said(text: str, style: str) -> ReadableDiff:
    return ReadableDiff(lines=(Content.styled(text, style),), hunks=())
