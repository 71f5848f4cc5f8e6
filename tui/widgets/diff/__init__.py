"""The diff pane: one iteration's patch, coloured by the theme."""

from tui.widgets.diff.pane import DiffPane
from tui.widgets.diff.render import added_lines, diff_content

__all__ = ["DiffPane", "added_lines", "diff_content"]
