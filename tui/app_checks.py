"""The checks before a run, a part of FixloopApp: is the project a git checkout, what does
the verifier say of it (again on every save in watch mode), can the model be called.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from textual import on, work
from textual.app import App
from textual.message import Message

from engine.errors import ConfigError
from engine.project.settings import Settings
from tui.app_quit import TaskOnLoop, cancel
from tui.screens.task import TaskScreen
from tui.screens.watch import WatchScreen
from tui.widgets.header import RunHeader
from tui.widgets.model_problem import ModelProblem

# What the headers say for the model before the check names it, and when there is none.
FINDING_MODEL = "finding the model…"
NO_MODEL = "no model"

# The verifier, git and the model client are imported by the workers that check (after the first
# frame, off the UI thread), never here: the first screen needs none of them.
if TYPE_CHECKING:
    from engine.feedback.tree import Verification


class ProjectChecks(App[int]):
    """FixloopApp's checks before a run, shown on the task and watch screens. An App subclass
    (not a plain mixin) so that Textual finds the `@on` handlers below."""

    # Set by FixloopApp.__init__.
    project: Path
    settings: Settings
    running: bool
    _checks: int  # how many checks of the checkout were started: the last one counts
    _checking: TaskOnLoop | None  # the check of the checkout under way

    class ProjectChecked(Message):
        """The verifier's verdict on the checkout before the run (or why there is none)."""

        def __init__(self, result: Verification | None, error: str | None, check: int) -> None:
            super().__init__()
            self.result = result
            self.error = error
            self.check = check  # which check: a later one makes this one stale

    class ModelChecked(Message):
        """Whether the configured model can be called: None, or the line that says the fix;
        and its name ("" when there is none), the settings' or the embedded model's."""

        def __init__(self, problem: str | None, model: str = "") -> None:
            super().__init__()
            self.problem = problem
            self.model = model

    class ProjectUnusable(Message):
        """The project directory cannot hold a run: not the top of a git repository with a
        commit (the check of the checkout is not run: it would mislead)."""

        def __init__(self, reason: str, check: int) -> None:
            super().__init__()
            self.reason = reason
            self.check = check

    if TYPE_CHECKING:  # FixloopApp's

        def post_from_thread(self, message: Message) -> bool: ...

    @work(thread=True, exclusive=True, group="check", exit_on_error=False)
    async def _check_project(self) -> None:
        from engine.feedback.checkout import verify_checkout

        task = asyncio.current_task()
        assert task is not None
        self._checks += 1
        check = self._checks
        if (unusable := _unusable_project(self.project)) is not None:
            self.post_from_thread(self.ProjectUnusable(unusable, check))
            return
        self._checking = (asyncio.get_running_loop(), task)
        try:
            result = await verify_checkout(self.project, self.settings)
        except asyncio.CancelledError:
            return
        except Exception as exc:
            self.post_from_thread(self.ProjectChecked(None, str(exc), check))
            return
        finally:
            if self._checking is not None and self._checking[1] is task:
                self._checking = None
        self.post_from_thread(self.ProjectChecked(result, None, check))

    @work(thread=True, exclusive=True, group="model-check", exit_on_error=False)
    def _check_model(self) -> None:
        """The run's own preflight, off the UI thread: it may import litellm (seconds)."""
        from engine.model.preflight import check_model
        from engine.run.start import resolve_model

        model = ""
        try:
            model = resolve_model(self.settings)
            problem = check_model(model, self.settings.api_base)
        except ConfigError as exc:  # no model at all
            problem = str(exc)
        self.post_from_thread(self.ModelChecked(problem, model))

    @on(ModelChecked)
    def _model_checked(self, message: ModelChecked) -> None:
        # The task screen may be under another (the spec form) when the answer comes.
        task = next((s for s in self.screen_stack if isinstance(s, TaskScreen)), None)
        if task is not None:
            task.query_one(ModelProblem).show(message.problem)
        self._name_the_model(message.model or NO_MODEL)

    def _name_the_model(self, model: str) -> None:
        """Every header names the model the run will ask (a run's own start names it again)."""
        for screen in self.screen_stack:
            for header in screen.query(RunHeader):
                header.model = model
                header.refresh()

    @on(ProjectChecked)
    def _checked(self, message: ProjectChecked) -> None:
        if message.check != self._checks:
            return  # a later check is under way: this verdict is about older files
        if isinstance(self.screen, TaskScreen):
            self.screen.show_check(message.result, message.error)

    @on(ProjectUnusable)
    def _unusable(self, message: ProjectUnusable) -> None:
        if message.check == self._checks and isinstance(self.screen, TaskScreen):
            self.screen.show_unusable(message.reason)

    @on(WatchScreen.Saved)
    def _saved(self, message: WatchScreen.Saved) -> None:
        """Watch mode: the project changed; verify it again (the check under way stops)."""
        if self.running:
            return
        cancel(self._checking)
        self._check_project()


def _unusable_project(project: Path) -> str | None:
    """Why `project` cannot hold a run (with the path to use), or None."""
    from engine.errors import WorkspaceError
    from engine.project.workspace import project_root

    try:
        project_root(project)
    except WorkspaceError as exc:
        return str(exc)
    return None
