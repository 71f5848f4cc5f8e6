"""The command palette (ctrl+p): the app's own commands, then the open screen's.

Each screen that makes decisions offers them itself (`palette_commands`, beside its actions
and key bindings), so the app knows no modal's commands.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Protocol, runtime_checkable

from textual.app import SystemCommand

import themes
from tui.interactive_gate import InteractiveGate
from tui.screens.main import MainScreen

THEME_LABELS = {
    themes.DARK.name: "dark",
    themes.LIGHT.name: "light",
    themes.HIGH_CONTRAST.name: "high contrast",
}


@runtime_checkable
class OffersCommands(Protocol):
    """A screen whose actions belong in the palette while it is open."""

    def palette_commands(self) -> Iterable[SystemCommand]: ...


class PaletteApp(Protocol):
    """What the palette reads of the app and what it calls (FixloopApp is one): the palette is
    the app's part, so it names these and never imports the app."""

    @property
    def running(self) -> bool: ...
    @property
    def outcome(self) -> object | None: ...
    @property
    def gate(self) -> InteractiveGate: ...
    @property
    def main(self) -> MainScreen: ...

    def action_toggle_mode(self) -> None: ...
    def action_toggle_pause(self) -> None: ...
    def action_abort_run(self) -> None: ...
    def action_show_summary(self) -> None: ...
    def action_new_from_spec(self) -> None: ...
    def action_open_runs(self) -> None: ...


def app_commands(app: PaletteApp) -> Iterable[SystemCommand]:
    """What the app can do now: the run's actions while it runs, the end once there is one,
    the panes and the themes always."""
    yield SystemCommand(
        "Mode: switch step/auto (m)",
        "step: review every proposal; auto: stop only at a suspicious pass",
        app.action_toggle_mode,
    )
    if app.running:
        yield SystemCommand(
            "Resume the run (p)" if app.gate.paused else "Pause the run (p)",
            "hold the loop before its next iteration, or let it go on",
            app.action_toggle_pause,
        )
        yield SystemCommand(
            "Abort the run (x)", "stop the loop; the branch is kept", app.action_abort_run
        )
    if app.outcome is not None:
        yield SystemCommand(
            "End of run: accept, keep or discard (s)",
            "squash onto your branch, keep the branch, or delete it",
            app.action_show_summary,
        )
    if not app.running and app.outcome is None:
        yield SystemCommand(
            "New from spec (ctrl+n)",
            "write a new module and its tests from a structured spec",
            app.action_new_from_spec,
        )
    yield SystemCommand(
        "Runs: open a past run (r)",
        "list the project's runs and replay one read-only",
        app.action_open_runs,
    )
    yield SystemCommand(
        "Code: next file (f)", "show the next file under repair", app.main.action_next_file
    )
    yield SystemCommand(
        "Feedback: packet or model output (o)",
        "switch the feedback pane's tab",
        app.main.action_toggle_output,
    )
    yield SystemCommand(
        "History: follow the live iteration (l)",
        "select the latest iteration and stay on it",
        app.main.action_follow,
    )
    for theme in themes.THEMES:
        yield SystemCommand(
            f"Theme: {THEME_LABELS[theme.name]}",
            f"switch to the {THEME_LABELS[theme.name]} theme",
            functools.partial(setattr, app, "theme", theme.name),
        )
