"""`fixloop-tui [PATH] [flags]`, `watch` and `resume`: the app started from the command line
(settings as for headless; a resumed run's from its sealed record), and the line it leaves on
stderr when it closes."""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

from engine.project.settings import Settings
from engine.run.exit_codes import EXIT_USAGE
from tui.app import FixloopApp
from tui.screens.outage import OutageChoice
from tui.screens.quit import resume_command


def run_app(project: Path, settings: Settings, refused: str | None, *, watch: bool = False) -> int:
    """The app over `project` with `settings` (tui/cli.py, `app_settings_from_args`;
    `refused`: the project config's untrusted settings, left out and said on the task
    screen); its exit code."""
    app = FixloopApp(project, settings, task=settings.task, watch=watch, config_refused=refused)
    app.run()
    return _closed(app, project)


def resume_app(args: argparse.Namespace) -> int:
    """`fixloop-tui resume RUN [PATH]`: the stopped run taken up again in the app, in the mode
    it ran in (step mode's reviews shown); a run that cannot be resumed is said in one line
    before the app opens."""
    from engine.errors import FileRefused, ResumeError
    from tui.trail import named_project, named_run

    project = named_project(args.path)
    run_id = named_run(project, args.run) if project else None
    if project is None or run_id is None:
        return EXIT_USAGE
    try:
        app = resumed_app(project, run_id, model=args.model, api_base=args.api_base)
        for path in args.files or ():  # `--file`: added as the app's + adds one
            app.talk.add(path)
    except (ResumeError, FileRefused) as exc:
        print(f"fixloop-tui: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    app.run()
    return _closed(app, project)


def resumed_app(
    project: Path, run_id: str, *, model: str | None = None, api_base: str | None = None
) -> FixloopApp:
    """The app over a stopped run, with the settings its sealed record keeps (the person's own,
    sealed with their key: a repository cannot forge them) and the mode its RunStarted names;
    `model`/`api_base` are the person's flags for what is asked from here on. ResumeError
    when the run cannot be resumed."""
    from engine.run.resume import resumable

    record, state = resumable(project, run_id)
    mode = "auto" if state.started.mode == "auto" else "step"
    settings = record.settings.model_copy(
        update={
            "approve": mode,
            "model": model or record.config.model,
            "api_base": api_base if api_base is not None else record.settings.api_base,
        }
    )
    return FixloopApp(
        project,
        settings,
        resume=run_id,
        resume_with=OutageChoice(api_base=api_base, model=model),
    )


def _closed(app: FixloopApp, project: Path) -> int:
    """The line the app leaves on stderr (how the run ended, or how to resume it); its exit
    code."""
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
