"""The code pane: the files under repair at the selected iteration, highlighted."""

from tui.widgets.code.pane import CodePane, warm_up

__all__ = ["CodePane", "warm_up"]
