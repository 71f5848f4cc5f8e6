"""`fixloop-tui accept|keep|discard [RUN] [PATH]`: from the shell, what the app's end modal
does with a run that ended undecided (engine/run/finish.py), for a run the app never decided on
(a headless run, a resumed one, an app closed at its end)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from engine.run.exit_codes import EXIT_USAGE

# The parser is built on every start: git and the run's records load when a command runs.
if TYPE_CHECKING:
    from engine.run.finish import Finish

# What each command does, for its help and the parser's.
FINISH_HELP: dict[Finish, str] = {
    "accept": "squash an undecided run's branch onto your branch as one commit",
    "keep": "keep an undecided run's branch as it is, for you to merge yourself",
    "discard": "delete an undecided run's branch (says which); nothing is asked",
}
EXIT_REFUSED = 1  # not done, nothing changed: git refused an accept, or the record is not sealed


def add_finish_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "run",
        nargs="?",
        default="",
        help="run id or a unique prefix of it or of its last part (default: the newest "
        "undecided run)",
    )
    parser.add_argument("path", nargs="?", default=None, help="project directory (default: .)")


def finish_command(args: argparse.Namespace, choice: Finish) -> int:
    """Exit 0 done; 1 an accept git refused, nothing changed; 2 no such run, or one that is
    not undecided (decided already, still running or stopped, no branch), nothing changed."""
    from engine.errors import FinishRefused, RunNotNamed
    from engine.run.finish import finish_run, newest_undecided
    from tui.trail import named_project, run_and_path

    given, path = run_and_path(args.run, args.path)
    project = named_project(path)
    if project is None:
        return EXIT_USAGE
    try:
        if given:
            from engine.run.run_directory import resolve_run

            run_id = resolve_run(project, given)
        else:
            run_id = newest_undecided(project)
        finished = finish_run(project, run_id, choice, only_undecided=True)
    except (RunNotNamed, FinishRefused) as exc:
        print(f"fixloop-tui: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if not finished.done:
        done = {"accept": "accepted", "keep": "kept", "discard": "discarded"}[choice]
        print(f"fixloop-tui: error: run {run_id} not {done}: {finished.detail}", file=sys.stderr)
        return EXIT_REFUSED
    print(f"run {run_id}: {finished.detail}")
    return 0
