"""The history pane: one row per iteration; moving the cursor selects the iteration."""

from tui.widgets.history.pane import HistoryPane, status_colour

__all__ = ["HistoryPane", "status_colour"]
