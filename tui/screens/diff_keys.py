"""The keys every review shares for its diff view, wherever the focus is: PgUp/PgDn/Home/End
scroll it, `]`/`[` step through its hunks, `d` (`enter` on the diff) shows it alone, `d` or
`escape` brings the review back. A screen mixes in `DiffKeys`, names its diff view
(`active_diff`); its keys are the `DIFFS` rows of `tui/keymap.py` (priority: a table or a
button that has the focus does not take them)."""

from __future__ import annotations

from typing import ClassVar

from textual.widget import Widget

from tui.widgets.diff import DiffView

FULL = "-diff-full"  # the screen's class while its diff is shown alone
DIFF_ACTIONS = frozenset({"diff_scroll", "diff_hunk", "diff_full", "diff_back"})


class DiffKeys:
    """The actions of the diff keys, for a screen (`self` is one) with a diff view."""

    # Below 30 rows the dialog takes the whole screen (`-short`): no row is left to margins,
    # and nothing of the screen beneath shows at its sides.
    VERTICAL_BREAKPOINTS: ClassVar[list[tuple[int, str]] | None] = [(0, "-short"), (30, "-tall")]

    DIFF_ID: ClassVar[str] = ""  # the screen's one diff view; a screen with several overrides

    def active_diff(self) -> DiffView:
        """The diff view the keys move."""
        return self._diff_screen.query_one(f"#{self.DIFF_ID}", DiffView)

    @property
    def diff_full(self) -> bool:
        return self._diff_screen.has_class(FULL)

    @property
    def _diff_screen(self) -> Widget:
        assert isinstance(self, Widget)
        return self

    def diff_action_allowed(self, action: str) -> bool | None:
        """For the screen's `check_action`: `escape` leaves full screen only while in it."""
        if action == "diff_back":
            return self.diff_full
        return True

    def action_diff_scroll(self, how: str) -> None:
        view = self.active_diff()
        if how == "page_down":
            view.scroll_page_down(animate=False)
        elif how == "page_up":
            view.scroll_page_up(animate=False)
        elif how == "home":
            view.scroll_home(animate=False)
        elif how == "end":
            view.scroll_end(animate=False)
        elif how == "down":
            view.scroll_down(animate=False)
        elif how == "up":
            view.scroll_up(animate=False)

    def action_diff_hunk(self, step: int) -> None:
        self.active_diff().action_hunk(step)

    def action_diff_full(self) -> None:
        self.show_diff_full(not self.diff_full)

    def action_diff_back(self) -> None:
        self.show_diff_full(False)

    def on_diff_view_full_screen(self, message: DiffView.FullScreen) -> None:
        message.stop()
        self.show_diff_full(not self.diff_full)

    def show_diff_full(self, full: bool) -> None:
        """The diff alone (the review's other parts hidden, the focus on the diff), or back."""
        screen = self._diff_screen
        screen.set_class(full, FULL)
        if full:
            self.active_diff().focus()
        else:
            self.diff_focus_back()
        screen.refresh_bindings()

    def diff_focus_back(self) -> None:
        """Where the focus goes when the review comes back (its first decision, by default)."""
        self._diff_screen.screen.focus_next()
