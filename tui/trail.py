"""`fixloop-tui runs`, `report` and `replay`: a project's past runs, read back from their
audit trail (ARCHITECTURE.md, "Events and the audit trail")."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from engine.run.exit_codes import EXIT_USAGE
from engine.text.durations import said_duration


def run_and_path(run: str, path: str | Path | None) -> tuple[str, Path]:
    """`[RUN] [PATH]` as typed: a lone argument that is a directory is the PATH."""
    if path is not None:
        return run, Path(path)
    if run and Path(run).is_dir():
        return "", Path(run)
    return run, Path.cwd()


def named_project(path: Path) -> Path | None:
    """The project directory, resolved; None, said why, when it is none."""
    if not path.is_dir():
        print(f"fixloop-tui: error: {path} is not a directory", file=sys.stderr)
        return None
    return path.resolve()


def named_run(project: Path, given: str) -> str | None:
    """The id of the run `given` names (a unique prefix will do: `resolve_run`); None, said in
    one line, when it names none or several."""
    from engine.errors import RunNotNamed
    from engine.run.run_directory import resolve_run

    try:
        return resolve_run(project, given)
    except RunNotNamed as exc:
        print(f"fixloop-tui: error: {exc}", file=sys.stderr)
        return None


def report_command(args: argparse.Namespace) -> int:
    """A run's report.md; for a run that ended without one (ok), the same report read back
    from its trail."""
    from engine.project.paths import run_path

    project = named_project(args.path)
    run_id = named_run(project, args.run) if project else None
    if project is None or run_id is None:
        return EXIT_USAGE
    run_dir = run_path(project, run_id)
    report = run_dir / "report.md"
    if report.is_file():
        sys.stdout.write(report.read_text(encoding="utf-8"))
        return 0
    from engine.run.run_directory import summarize

    if summarize(run_dir).status in ("stopped", "unfinished"):
        print(no_report(run_dir, args.path), file=sys.stderr)
        return 1
    from engine.errors import UnsealedRecord
    from engine.run.report import report_from_trail

    try:
        sys.stdout.write(report_from_trail(project, run_id))
    except UnsealedRecord as exc:
        print(f"fixloop-tui: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return 0


def no_report(run_dir: Path, project: Path) -> str:
    """Why a run has no report.md (every ending but ok writes one), and what to do."""
    from engine.run.run_directory import summarize
    from tui.screens.quit import resume_command

    run = summarize(run_dir)
    resume = resume_command(run.id, str(project))
    if run.status == "stopped":
        why = run.stopped_because or "stopped"
        return f"run {run.id} is stopped ({why}), no report until it ends; continue it: {resume}"
    return f"run {run.id} has no ending (still running, or its process died): {resume}"


def runs_command(args: argparse.Namespace) -> int:
    from engine.run.run_directory import list_runs

    if not args.path.is_dir():
        print(f"fixloop-tui: error: {args.path} is not a directory", file=sys.stderr)
        return EXIT_USAGE
    runs = list_runs(args.path.resolve())
    if args.json:
        print(
            json.dumps(
                [{**run.model_dump(exclude={"path"}), "outcome": run.outcome} for run in runs]
            )
        )
        return 0
    if not runs:
        print("no runs yet in this project")
        return 0
    print(
        f"{'run':20}  {'status':24}  {'branch':9}  {'iter':>4}  {'started':19}  {'time':>6}  task"
    )
    for run in runs:
        task = run.task_line(50)
        took = said_duration(run.duration_s) if run.duration_s is not None else ""
        print(
            f"{run.id:20}  {run.status_label:24}  {run.outcome:9}  {run.iterations:4}  "
            f"{run.started:19}  {took:>6}  {task}"
        )
    return 0


def replay_command(args: argparse.Namespace) -> int:
    """`replay [RUN] [PATH]`; a lone argument that is a directory is the PATH."""
    from engine.errors import ConfigError
    from engine.project.paths import runs_dir
    from engine.project.settings import load_settings

    run, path = run_and_path(args.run, args.path)
    project = path.resolve()
    runs = runs_dir(project)
    if not runs.is_dir():
        print(f"fixloop-tui: error: no runs yet in {project}", file=sys.stderr)
        return EXIT_USAGE
    if run:
        named = named_run(project, run)
        if named is None:
            return EXIT_USAGE
        run = named
    try:
        # A replay runs nothing: the project config's untrusted security settings do not matter.
        settings = load_settings(project, {"theme": args.theme}, drop_untrusted=True)
    except ConfigError as exc:
        print(f"fixloop-tui: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    from tui.app import FixloopApp

    app = FixloopApp(project, settings, autostart=False, browse=run)
    app.run()
    return 0
