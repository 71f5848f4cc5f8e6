"""The diff view of the reviews: a whole diff, highlighted, scrolled by keyboard (arrows, PgUp,
PgDn, Home, End), its hunks stepped through with `]`/`[` (the border says which hunk is on
top: `hunk 2/3`); `enter` asks its screen to show it alone (full screen) or back."""

from __future__ import annotations

from collections.abc import Sequence
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
        Binding("enter", "full_screen", "diff"),
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

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.shown = ReadableDiff(lines=(), hunks=())
        self.texts: tuple[str, ...] = ()  # the diffs shown, as given

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
        self.query_one(".diff-lines", Static).update(shown.content)
        self.scroll_home(animate=False, immediate=True)
        self._moved()

    # -- hunks --------------------------------------------------------------------------------

    @property
    def hunk(self) -> int:
        """The index of the hunk at the top of the view (0 before the first one too); -1 when
        there is none."""
        hunks = self.shown.hunks
        if not hunks:
            return -1
        top = round(self.scroll_y)
        return max((i for i, line in enumerate(hunks) if line <= top), default=0)

    def action_hunk(self, step: int) -> None:
        """The next (1) or previous (-1) hunk to the top of the view."""
        hunks = self.shown.hunks
        if not hunks:
            return
        top = round(self.scroll_y)
        if step > 0:
            later = [line for line in hunks if line > top]
            target = later[0] if later else hunks[-1]
        else:
            earlier = [line for line in hunks if line < top]
            target = earlier[-1] if earlier else hunks[0]
        self.scroll_to(y=target, animate=False, immediate=True)
        self._moved()

    def _moved(self) -> None:
        hunks = len(self.shown.hunks)
        if not hunks:
            self.border_subtitle = ""
            return
        at_end = self.scroll_y >= self.max_scroll_y
        # At the end of the diff the last hunk is the one being read, even if it is short.
        index = hunks - 1 if at_end and self.max_scroll_y > 0 else self.hunk
        self.border_subtitle = f"hunk {index + 1}/{hunks} · ] [ hunks"

    def action_full_screen(self) -> None:
        self.post_message(self.FullScreen(self))


def _said(text: str, style: str) -> ReadableDiff:
    return ReadableDiff(lines=(Content.styled(text, style),), hunks=())
