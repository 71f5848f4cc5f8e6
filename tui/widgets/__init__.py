"""The main screen's panes, one folder each (header, code, feedback, history, diff), the run
view they all render, and the task screen's line about a model that cannot be called."""
