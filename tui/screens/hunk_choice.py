"""Keeping or dropping a proposal's hunks, as `git add -p` takes them, on a review screen:
`x` drops the hunk being read or keeps it again, `A` keeps them all, and the decision takes
only the kept hunks (every hunk dropped: nothing to take). A screen mixes in `HunkChoice` and
says which hunks it shows (`hunk_total`, `kept_part`, `hunks_choosable`) and where its dropped
set lives (`chosen_drops`, `set_drops`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from textual.content import Content

if TYPE_CHECKING:
    from engine.edits.hunks import PartialEdit
    from tui.widgets.diff import DiffView

EVERY_HUNK_DROPPED: Literal["every hunk dropped"] = "every hunk dropped"


class HunkChoice:
    """The hunk keys and the kept part, for a screen with a diff view (`DiffKeys`)."""

    hunk_problem: str  # why the kept hunks could not be taken, said in the notice

    # What the screen says: declared for the type checker only; each screen defines them.
    if TYPE_CHECKING:

        def hunks_choosable(self) -> bool: ...

        def hunk_total(self) -> int: ...

        def kept_part(self) -> PartialEdit: ...

        @property
        def chosen_drops(self) -> set[int]: ...

        def set_drops(self, dropped: set[int]) -> None: ...

        def _refresh(self) -> None: ...

        def active_diff(self) -> DiffView: ...

    def action_toggle_hunk(self) -> None:
        """The hunk being read dropped, or kept again."""
        if not self.hunks_choosable():
            return
        index = self.active_diff().hunk
        if index < 0:
            return
        self.set_drops(self.chosen_drops ^ {index})
        self.hunk_problem = ""
        self._refresh()

    def action_keep_all_hunks(self) -> None:
        if not self.hunks_choosable():
            return
        self.set_drops(set())
        self.hunk_problem = ""
        self._refresh()

    def hunks_kept_notice(self, decision: str, none_kept: str) -> Content:
        """`k of n hunks kept: DECISION commits only those`, or what it does with none kept."""
        total = self.hunk_total()
        kept = total - len(self.chosen_drops)
        if kept:
            text = f"{kept} of {total} hunks kept: {decision} commits only those (A: keep all)"
        else:
            text = f"0 of {total} hunks kept: {decision} {none_kept} (A: keep all)"
        return Content.styled(text, "bold $text-accent")

    def kept_hunks(self) -> PartialEdit | Literal["every hunk dropped"] | None:
        """The kept hunks to take; EVERY_HUNK_DROPPED; or None when they do not apply (the
        reason is said in the notice: a toast would cover the modal)."""
        from engine.errors import EditFormatError

        if len(self.chosen_drops) >= self.hunk_total():
            return EVERY_HUNK_DROPPED
        try:
            return self.kept_part()
        except EditFormatError as error:
            self.hunk_problem = f"the kept hunks do not apply: {error}"
            self._refresh()
            return None
