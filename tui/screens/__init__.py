"""The app's screens: the main screen (four panes), the task screen, and the modals
(proposal review, editor, suspicious pass, end of run)."""
