"""`fixloop-tui [PATH] [flags]` and `watch`: the app started from the command line (settings as
for headless), and the line it leaves on stderr when it closes."""

from __future__ import annotations

import argparse
import contextlib
import sys

from tui.app import FixloopApp
from tui.arguments import app_settings_from_args
from tui.screens.quit import resume_command


def run_app(args: argparse.Namespace, *, watch: bool = False) -> int:
    """The app over the project and settings `args` name; its exit code."""
    prepared = app_settings_from_args(args)
    if isinstance(prepared, int):
        return prepared
    project, settings, refused = prepared
    app = FixloopApp(project, settings, task=settings.task, watch=watch, config_refused=refused)
    app.run()
    line = ""
    if app.stopped:
        resume = resume_command(app.stopped, str(project))
        line = f"fixloop: stopped — resume with: {resume}"
    elif app.outcome is not None:
        line = f"fixloop: {app.outcome.status_text} — {app.outcome.reason}"
        if app.finished is not None:
            line += f"; {app.finished.detail}"
        elif app.outcome.decidable:
            line += f"; the result stays on branch {app.outcome.branch}"
    if line:
        with contextlib.suppress(OSError):  # the terminal went away (the app hung up)
            print(line, file=sys.stderr, flush=True)
    return app.exit_status
