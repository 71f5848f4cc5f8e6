"""The header: what runs where (project, model, sandbox, mode) and the budget so far."""

from tui.widgets.header.header import Activity, RunHeader, activity_of

__all__ = ["Activity", "RunHeader", "activity_of"]
