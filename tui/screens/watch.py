"""Watch mode (`fixloop-tui watch`): the task screen that re-verifies the project each time
a file in it is saved, so the repair packet on screen is always the one for the code as it
is now. `ctrl+s` starts a repair loop from there; `ctrl+r` verifies again at once.

The watching is watchfiles' (a native watcher, debounced); the verifying is the app's, in
the sandbox, exactly as before a run: this screen only says when and shows the result."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

import watchfiles
from textual import work
from textual.app import SystemCommand
from textual.binding import BindingType
from textual.message import Message

from engine.project.paths import FIXLOOP_DIR
from tui.keymap import WATCH, bindings_for
from tui.screens.task import TaskScreen

if TYPE_CHECKING:  # the verifier loads when its first verdict arrives
    from engine.feedback.tree import Verification

IGNORED_DIRS = (FIXLOOP_DIR, ".ruff_cache", "venv", "build", "dist", ".eggs")
DEBOUNCE_MS = 400  # an editor's save is often several writes: one check for all of them


class ProjectFilter(watchfiles.DefaultFilter):
    """watchfiles' defaults (.git, caches, .venv, *.pyc …) and fixloop's own files."""

    ignore_dirs = (*watchfiles.DefaultFilter.ignore_dirs, *IGNORED_DIRS)


class WatchScreen(TaskScreen):
    """Dismissed with the task to run; posts `Saved` when the project changes."""

    BINDINGS: ClassVar[list[BindingType]] = [*bindings_for(WATCH)]

    class Saved(Message):
        """Files in the project changed on disk (relative paths)."""

        def __init__(self, paths: list[str]) -> None:
            super().__init__()
            self.paths = paths

    def __init__(
        self,
        root: Path,
        *,
        model: str,
        sandbox: str,
        mode: str = "step",
        watch_files: bool = True,  # False: only show verdicts (a snapshot)
    ) -> None:
        super().__init__(project=str(root), model=model, sandbox=sandbox, mode=mode)
        self.root = root
        self.watch_files = watch_files
        self.checks = 0  # verdicts shown so far
        self.watch_error = ""
        self.clock: Callable[[], str] = lambda: time.strftime("%H:%M:%S")
        self.cause = "start"  # what the check under way is for

    def on_mount(self) -> None:
        super().on_mount()
        self.query_one("#state").border_title = "the project now · watching for saves"
        if self.watch_files:
            self._watch()

    @work(exclusive=True, group="watch", exit_on_error=False)
    async def _watch(self) -> None:
        try:
            async for changes in watchfiles.awatch(
                self.root, watch_filter=ProjectFilter(), debounce=DEBOUNCE_MS
            ):
                paths = _saved_paths(self.root, changes)
                if not paths:
                    continue
                self.checking(f"a save of {_names(paths)}")
                self.post_message(self.Saved(paths))
        except OSError as exc:  # e.g. the system's limit of inotify watches
            self.watch_error = f"not watching for saves: {exc}"
            self.query_one("#state").border_title = "the project now"
            self.app.notify(self.watch_error, title="watch", severity="error")

    def checking(self, cause: str) -> None:
        """A new check is under way; the last verdict stays on screen until it is done."""
        self.cause = cause
        self.query_one("#state").border_subtitle = f"verifying after {cause}…"

    def show_check(self, result: Verification | None, error: str | None = None) -> None:
        super().show_check(result, error)
        self.checks += 1
        self.query_one("#state").border_subtitle = f"checked {self.clock()} after {self.cause}"

    def palette_commands(self) -> Iterable[SystemCommand]:
        """Verifying on demand, in the command palette too."""
        yield SystemCommand(
            "Watch: verify now (ctrl+r)", "verify the project again", self.action_verify
        )

    def action_verify(self) -> None:
        self.checking("your ctrl+r")
        self.post_message(self.Saved([]))


def _saved_paths(root: Path, changes: set[tuple[watchfiles.Change, str]]) -> list[str]:
    """The changed files, without an editor's temporary files (created and gone again)."""
    kinds: dict[str, set[watchfiles.Change]] = {}
    for change, path in changes:
        kinds.setdefault(path, set()).add(change)
    transient = {watchfiles.Change.added, watchfiles.Change.deleted}
    return sorted(
        _relative(root, path)
        for path, seen in kinds.items()
        if not (transient <= seen and not Path(path).exists())
    )


def _relative(root: Path, path: str) -> str:
    try:
        return str(Path(path).relative_to(root))
    except ValueError:
        return path


def _names(paths: list[str]) -> str:
    if not paths:
        return "a change"
    shown = ", ".join(paths[:3])
    return shown + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
