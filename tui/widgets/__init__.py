"""The main screen's panes, one folder each (header, code, feedback, history, diff), and the
run view they all render."""
