"""The diff pane (one iteration's patch) and the diff view of the reviews (a whole proposal,
highlighted, scrolled and stepped through by hunk), coloured by the theme."""

from tui.widgets.diff.pane import DiffPane
from tui.widgets.diff.render import added_lines, diff_content, readable_diff
from tui.widgets.diff.view import DiffView

__all__ = ["DiffPane", "DiffView", "added_lines", "diff_content", "readable_diff"]
