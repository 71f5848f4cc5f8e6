"""The interactive app: `fixloop-tui [PATH] [flags]` without `--headless`.

The engine runs in a thread worker with its own asyncio loop (the workspace makes blocking
git calls); its events, streamed text and review requests come back as messages. Opening is
fast: the runner (and with it the model client) is imported inside the worker, and the
first frame waits for neither the sandbox nor the verifier. Over ~450 lines because its
workers and the handlers of what they post must be App methods; the palette is tui/commands.py.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual import on, work
from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.screen import Screen
from textual.theme import Theme

import themes
from engine.project.paths import run_path
from engine.project.settings import ConfigError, Settings
from engine.run.events import RunFinished, RunStarted
from engine.run.exit_codes import EXIT_INFRA, EXIT_INTERRUPTED, EXIT_USAGE, RUN_EXIT_CODES
from engine.run.finish import Finish, Finished
from engine.run.guards import STOP, RunStopped
from engine.verify.tree import Verification
from tui.commands import OffersCommands, app_commands
from tui.gate import (
    EngineEvent,
    Held,
    InteractiveGate,
    Mode,
    ModelText,
    PassReviewAsked,
    ReviewAsked,
    UiSink,
)
from tui.screens.editor import EditorScreen
from tui.screens.end import EndScreen, RunOutcome
from tui.screens.main import MainScreen
from tui.screens.quit import QuitChoice, QuitScreen, resume_command
from tui.screens.replay import ReplayScreen, artifact_loader
from tui.screens.review import ReviewScreen
from tui.screens.runs import RunsScreen
from tui.screens.suspicious import SuspiciousPassScreen
from tui.screens.task import TaskScreen
from tui.screens.watch import WatchScreen
from tui.state import remember_theme, remembered_theme
from tui.widgets.code import warm_up
from tui.widgets.model_problem import ModelProblem

if TYPE_CHECKING:
    from engine.spec.definition import Spec

QUIT_GRACE_S = 30.0  # how long quitting waits for the engine to stop and close its sandbox


def sandbox_label(settings: Settings) -> str:
    """The header's sandbox: the choice, and a standing reminder when runc is allowed."""
    label = settings.sandbox
    return f"{label}, runc allowed (not gVisor!)" if settings.allow_runc else label


class FixloopApp(App[int]):
    """One run of the repair loop, watched and steered by a person."""

    CSS_PATH = str(themes.STYLESHEET)
    TITLE = "fixloop"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("m", "toggle_mode", "mode"),
        Binding("p", "toggle_pause", "pause"),
        Binding("x", "abort_run", "abort"),
        Binding("s", "show_summary", "end of run"),
        Binding("r", "open_runs", "runs"),
        Binding("q", "quit", "quit"),
        Binding("v", "show_review", "review"),
    ]

    class ProjectChecked(Message):
        """The verifier's verdict on the checkout before the run (or why there is none)."""

        def __init__(self, result: Verification | None, error: str | None, check: int) -> None:
            super().__init__()
            self.result = result
            self.error = error
            self.check = check  # which check: a later one makes this one stale

    class ModelChecked(Message):
        """Whether the configured model can be called: None, or the line that says the fix."""

        def __init__(self, problem: str | None) -> None:
            super().__init__()
            self.problem = problem

    class ProjectUnusable(Message):
        """The project directory cannot hold a run: not the top of a git repository with a
        commit (the check of the checkout is not run: it would mislead)."""

        def __init__(self, reason: str, check: int) -> None:
            super().__init__()
            self.reason = reason
            self.check = check

    class RunOver(Message):
        """The engine's thread is done (after RunFinished, or instead of it on a start-up
        failure, or after the person stopped the run to resume it later)."""

        def __init__(
            self, error: str | None = None, usage: bool = False, stopped: bool = False
        ) -> None:
            super().__init__()
            self.error = error
            self.usage = usage
            self.stopped = stopped

    class Settled(Message):
        """Accept, keep or discard is done (or the accept was refused)."""

        def __init__(self, finished: Finished) -> None:
            super().__init__()
            self.finished = finished

    class SquashDiffRead(Message):
        """The change an accept would squash onto the person's branch (or why it is unread)."""

        def __init__(self, diff: str, error: str) -> None:
            super().__init__()
            self.diff = diff
            self.error = error

    def __init__(
        self,
        project: Path,
        settings: Settings,
        *,
        task: str | None = None,
        autostart: bool = True,
        browse: str | None = None,
        watch: bool = False,
    ) -> None:
        super().__init__()
        self.project = project
        self.settings = settings
        self.initial_task = task
        self.autostart = autostart  # False: show what it is given, start nothing
        # Not None: no run, only the trail — "" opens the list of runs, a run id that run.
        self.browse = browse
        self.watching = watch  # watch mode: verify on every save until the person starts a run
        self._checks = 0
        self.spec: Spec | None = None  # spec mode, from the "New from spec" form
        self.mode: Mode = settings.approve
        self.gate = InteractiveGate(self.post_from_thread, self.mode)
        self.sink = UiSink(self.post_from_thread)
        self.main = MainScreen(
            project=str(project),
            model=settings.model or "default model",
            sandbox=sandbox_label(settings),
            mode=self.mode,
        )
        self.outcome: RunOutcome | None = None
        self.finished: Finished | None = None
        self.exit_status = 0
        self.running = False
        self._quitting = False
        self._cancelled = False
        self.stopped = ""  # the run id of a run the person stopped to resume it later
        self._hidden: ReviewScreen | None = None  # a review put aside to look at the run
        self._engine: tuple[asyncio.AbstractEventLoop, asyncio.Task[Any]] | None = None
        self._checking: tuple[asyncio.AbstractEventLoop, asyncio.Task[Any]] | None = None

    # -- start-up -------------------------------------------------------------------------------

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return {**super().get_theme_variable_defaults(), **themes.VARIABLE_DEFAULTS}

    def get_default_screen(self) -> Screen[Any]:
        return self.main

    def on_mount(self) -> None:
        for theme in themes.THEMES:
            self.register_theme(theme)
        chosen = self.settings.theme or remembered_theme()
        wanted = themes.theme_name(chosen)
        if wanted not in self.available_themes:
            self.notify(
                f"unknown theme {chosen!r}; try dark, light or high-contrast",
                severity="warning",
            )
            wanted = themes.DEFAULT
        self.theme = wanted
        # From now on a change of theme (the palette, Textual's picker) is remembered.
        self.call_after_refresh(self.theme_changed_signal.subscribe, self, self._theme_changed)
        self._warm_up()
        if self.browse is not None:
            if self.browse:
                self.replay(self.browse)
            else:
                self.action_open_runs()
            return
        if not self.autostart:
            return
        if self.watching:
            watching = WatchScreen(
                self.project,
                model=self.settings.model or "default model",
                sandbox=sandbox_label(self.settings),
                mode=self.mode,
            )
            self.push_screen(watching, self.begin)
            self.call_after_refresh(self._check_project)
        elif self.initial_task is None:
            screen = TaskScreen(
                project=str(self.project),
                model=self.settings.model or "default model",
                sandbox=sandbox_label(self.settings),
                mode=self.mode,
            )
            self.push_screen(screen, self.begin)
            self.call_after_refresh(self._check_project)
            self._check_model()
        else:
            self.call_after_refresh(self.begin, self.initial_task)

    def _theme_changed(self, theme: Theme) -> None:
        remember_theme(theme.name)

    @work(thread=True, group="warm-up", exit_on_error=False)
    def _warm_up(self) -> None:
        """What the first iteration's panes need, loaded before the run gets there."""
        warm_up()

    def post_from_thread(self, message: Message) -> bool:
        """post_message, safe from any thread, even while the app shuts down."""
        try:
            return self.post_message(message)
        except RuntimeError:  # the app's loop is closed
            return False

    @work(thread=True, exclusive=True, group="check", exit_on_error=False)
    async def _check_project(self) -> None:
        from engine.verify.checkout import verify_checkout

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

        try:
            problem = check_model(resolve_model(self.settings), self.settings.api_base)
        except ConfigError as exc:  # no model at all
            problem = str(exc)
        self.post_from_thread(self.ModelChecked(problem))

    @on(ModelChecked)
    def _model_checked(self, message: ModelChecked) -> None:
        # The task screen may be under another (the spec form) when the answer comes.
        task = next((s for s in self.screen_stack if isinstance(s, TaskScreen)), None)
        if task is not None:
            task.query_one(ModelProblem).show(message.problem)

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
        _cancel(self._checking)
        self._check_project()

    def begin(self, task: str | None) -> None:
        """Start the run with `task` (from the task screen or --task)."""
        if task is None or self.running:
            return
        _cancel(self._checking)
        self.initial_task = task
        self.running = True
        self.refresh_bindings()
        self.main.note = "starting: the worktree, the sandbox and the first verification…"
        self.main.refresh_header()
        self._run_engine(task)

    # -- the engine's thread --------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="run", exit_on_error=False)
    async def _run_engine(self, task: str) -> None:
        from engine.project.git_plumbing import WorkspaceError
        from engine.run.start import start_run  # the model client's modules load off the UI thread

        current = asyncio.current_task()
        assert current is not None
        self._engine = (asyncio.get_running_loop(), current)
        settings = self.settings.model_copy(update={"task": task})
        try:
            await start_run(
                self.project,
                settings,
                gate=self.gate,
                sinks=[self.gate, self.sink],
                on_model_text=self.sink.model_text,
                spec=self.spec,
            )
        except RunStopped:
            self.post_from_thread(self.RunOver(stopped=True))
            return
        except asyncio.CancelledError:
            self.post_from_thread(self.RunOver())
            return
        except (ConfigError, WorkspaceError) as exc:
            self.post_from_thread(self.RunOver(str(exc), usage=True))
            return
        except Exception as exc:  # never a class name on screen: the message, or plain words
            self.post_from_thread(self.RunOver(str(exc) or "the run failed unexpectedly"))
            return
        finally:
            self._engine = None
        self.post_from_thread(self.RunOver())

    @on(EngineEvent)
    def _engine_event(self, message: EngineEvent) -> None:
        event = message.event
        if isinstance(event, RunStarted):
            self.main.note = ""
            self.main.loader = artifact_loader(self.project, event.run_id)
        self.main.apply(event)
        if isinstance(event, RunFinished):
            self._run_finished(event)

    @on(Held)
    def _held(self, message: Held) -> None:
        if self.gate.paused:
            self.main.set_paused(f"paused before iteration {message.n} · p resumes")

    @on(ModelText)
    def _model_text(self, message: ModelText) -> None:
        self.main.stream(message.text)

    @on(ReviewAsked)
    def _review_asked(self, message: ReviewAsked) -> None:
        request = message.request
        self.push_screen(ReviewScreen(request), lambda review: _resolve(request, review))

    @on(ReviewScreen.Hide)
    def _hide_review(self, message: ReviewScreen.Hide) -> None:
        """The review steps aside (still pending) so the person can look at the panes."""
        review = message.review
        if self.screen is not review or self._hidden is not None:
            return
        self._hidden = review
        self.install_screen(review, f"review-{id(review)}")  # kept whole while off the stack
        self.pop_screen()
        self.main.aside = "your review waits · v brings it back"
        self.main.refresh_header()
        self.refresh_bindings()

    def action_show_review(self) -> None:
        review, self._hidden = self._hidden, None
        if review is None:
            return
        self.uninstall_screen(review)
        self.main.aside = ""
        self.main.refresh_header()
        self.push_screen(review, lambda decided: _resolve(review.request, decided))
        self.refresh_bindings()

    @on(PassReviewAsked)
    def _pass_review_asked(self, message: PassReviewAsked) -> None:
        request = message.request
        self.push_screen(SuspiciousPassScreen(request), lambda review: _resolve(request, review))

    def _run_finished(self, event: RunFinished) -> None:
        from engine.run.guards import RunStatus

        self._close_reviews()
        report = run_path(self.project, event.run_id) / "report.md"
        self.outcome = RunOutcome(
            status=event.status,
            reason=event.reason,
            iterations=event.iterations,
            branch=event.branch,
            tokens=event.tokens,
            cost_usd=event.cost_usd,
            duration_s=event.duration_s,
            report=str(report) if report.is_file() else "",
            decidable=bool(event.branch),
            accepted_suspicious=tuple(event.accepted_suspicious),
        )
        if self.outcome.decidable:
            self._read_squash_diff(event.run_id)
        try:
            self.exit_status = RUN_EXIT_CODES[RunStatus(event.status)]
        except ValueError:
            self.exit_status = EXIT_INFRA
        self.refresh_bindings()
        if not self._quitting:
            self.push_screen(EndScreen(self.outcome))

    @on(RunOver)
    def _run_over(self, message: RunOver) -> None:
        self.running = False
        self.main.note = ""
        self.main.paused = ""
        self.main.refresh_header()
        if message.stopped and self.outcome is None:  # recorded as stopped: resumable
            self._close_reviews()
            self.stopped = self.main.view.run_id
            self.exit_status = EXIT_INTERRUPTED
        if message.error is not None:
            self._close_reviews()
            self.exit_status = EXIT_USAGE if message.usage else EXIT_INFRA
            if self.outcome is None:
                self.outcome = RunOutcome(
                    status="error", reason=message.error, decidable=False, started=False
                )
                if not self._quitting:
                    self.push_screen(EndScreen(self.outcome))
            else:
                self.notify(message.error, title="the run's thread failed", severity="error")
        self.refresh_bindings()
        if self._quitting:
            self.exit(self.exit_status)

    def _close_reviews(self) -> None:
        """Reviews the run no longer waits for (it ended, or was stopped) go away; so does a
        quit dialog about a run that is over."""
        waiting = (ReviewScreen, EditorScreen, SuspiciousPassScreen, QuitScreen)
        while len(self.screen_stack) > 1 and isinstance(self.screen, waiting):
            self.pop_screen()
        hidden, self._hidden = self._hidden, None
        if hidden is not None:
            self.uninstall_screen(hidden)
            hidden.remove()
            self.main.aside = ""
            self.main.refresh_header()

    # -- end of run -----------------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="squash-diff", exit_on_error=False)
    def _read_squash_diff(self, run_id: str) -> None:
        """The change an accept would squash, read off the UI thread for the end modal."""
        from engine.run.finish import squash_diff

        try:
            diff, error = squash_diff(self.project, run_id), ""
        except Exception as exc:  # shown in the modal's diff pane; the choices still work
            diff, error = "", str(exc) or type(exc).__name__
        self.post_from_thread(self.SquashDiffRead(diff, error))

    @on(SquashDiffRead)
    def _squash_diff_read(self, message: SquashDiffRead) -> None:
        if self.outcome is None:
            return
        self.outcome = replace(self.outcome, diff=message.diff, diff_error=message.error)
        for screen in self.screen_stack:
            if isinstance(screen, EndScreen):
                screen.show_outcome(self.outcome)

    @on(EndScreen.Decided)
    def _decided(self, message: EndScreen.Decided) -> None:
        view = self.main.view
        if view.run_id:
            self._finish(view.run_id, message.choice)

    @work(thread=True, exclusive=True, group="finish", exit_on_error=False)
    def _finish(self, run_id: str, choice: Finish) -> None:
        from engine.run.finish import finish_run

        try:
            finished = finish_run(self.project, run_id, choice)
        except Exception as exc:  # the git work failed unexpectedly: say so, change nothing
            finished = Finished(choice=choice, done=False, detail=str(exc))
        self.post_from_thread(self.Settled(finished))

    @on(Settled)
    def _settled(self, message: Settled) -> None:
        if message.finished.done:
            self.finished = message.finished
        for screen in self.screen_stack:
            if isinstance(screen, EndScreen):
                screen.show_finished(message.finished)
        self.notify(
            message.finished.detail,
            severity="information" if message.finished.done else "error",
        )

    # -- actions --------------------------------------------------------------------------------

    def action_toggle_mode(self) -> None:
        self.mode = "auto" if self.mode == "step" else "step"
        self.gate.mode = self.mode
        self.main.set_mode(self.mode)
        self.notify(
            "auto: proposals are approved; only a suspicious pass stops the run"
            if self.mode == "auto"
            else "step: every proposal waits for your review",
            title=f"{self.mode} mode",
        )

    def action_toggle_pause(self) -> None:
        if not self.running:
            return
        if self.gate.paused:
            self.gate.resume()
            self.main.set_paused("")
            self.notify("the loop goes on", title="resumed")
        else:
            self.gate.pause()
            self.main.set_paused("pausing: the loop holds once the step under way is done")
            self.notify("the loop holds before its next iteration; p resumes", title="paused")
        self.refresh_bindings()

    def action_new_from_spec(self) -> None:
        """Spec mode from the form: a new module and its tests, instead of a repair."""
        from tui.screens.spec_form import SpecFormScreen  # the spec validator: when first needed

        if self.running or self.outcome is not None or isinstance(self.screen, SpecFormScreen):
            return
        self.push_screen(SpecFormScreen(), self._begin_spec)

    def _begin_spec(self, spec: Spec | None) -> None:
        if spec is None or self.running:
            return
        self.spec = spec
        if isinstance(self.screen, TaskScreen):
            self.pop_screen()  # the spec is the task
        self.begin(spec.task)

    def action_open_runs(self) -> None:
        if isinstance(self.screen, RunsScreen):
            return
        self.push_screen(RunsScreen(self.project), self._runs_closed)

    def _runs_closed(self, run_id: str | None) -> None:
        if run_id:
            self.replay(run_id)
        elif self.browse is not None:
            self.exit(0)

    def replay(self, run_id: str) -> None:
        """Open a past run read-only (back to the list when it closes, when browsing)."""

        def closed(_: None) -> None:
            if self.browse is not None:
                self.action_open_runs()

        self.push_screen(ReplayScreen(self.project, run_id), closed)

    def action_abort_run(self) -> None:
        if not self.running:
            return
        at_gate = self.gate.waiting
        self.gate.close("aborted by you")  # a waiting review ends the run cleanly as aborted
        if not at_gate and not self._cancelled:
            self._cancelled = True  # once: a second cancel would cut the sandbox's clean-up
            _cancel(self._engine)  # mid-model or mid-verification: stop it there
        self.notify("stopping the run…", title="abort")

    def action_show_summary(self) -> None:
        if self.outcome is not None and not isinstance(self.screen, EndScreen):
            self.push_screen(EndScreen(self.outcome, self.finished))

    def action_stop_run(self) -> None:
        """Stop the run so that `fixloop-tui resume` continues it: at the gate, the waiting
        review raises RunStopped; elsewhere the engine's task is cancelled with STOP."""
        if not self.running:
            return
        at_gate = self.gate.waiting
        self.gate.stop("stopped by you")
        if not at_gate and not self._cancelled:
            self._cancelled = True  # once: a second cancel would cut the sandbox's clean-up
            _cancel(self._engine, STOP)
        self.notify("stopping the run; it stays resumable…", title="stop")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Abort only while a run goes on; the end-of-run summary only once there is one; back
        to the review only while one is put aside."""
        if action in ("abort_run", "toggle_pause"):
            return self.running
        if action == "show_summary":
            return self.outcome is not None
        if action == "show_review":
            return self._hidden is not None
        return True

    async def action_quit(self) -> None:
        """Out of the app; mid-run it first asks: stop (resumable), abort, or stay."""
        if not self.running:
            _cancel(self._checking)  # the check of the checkout: its sandbox closes as it stops
            self.exit(self.exit_status)
            return
        if self._quitting or isinstance(self.screen, QuitScreen):
            return
        self.push_screen(QuitScreen(self.main.view.run_id, str(self.project)), self._quit_chosen)

    def _quit_chosen(self, choice: QuitChoice | None) -> None:
        if choice is None or self._quitting:
            return
        if not self.running:  # the run ended while the dialog was up
            self.exit(self.exit_status)
            return
        self._quitting = True
        if choice == "stop":
            self.action_stop_run()
        else:
            self.action_abort_run()
        self.set_timer(QUIT_GRACE_S, lambda: self.exit(self.exit_status))

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield from app_commands(self)
        if isinstance(screen, OffersCommands):
            yield from screen.palette_commands()


def _resolve(request: Any, review: Any) -> None:
    """A modal's answer to the engine (a modal closed without one decides nothing)."""
    if review is not None:
        request.resolve(review)


def _unusable_project(project: Path) -> str | None:
    """Why `project` cannot hold a run (with the path to use), or None."""
    from engine.project.git_plumbing import WorkspaceError
    from engine.project.workspace import project_root

    try:
        project_root(project)
    except WorkspaceError as exc:
        return str(exc)
    return None


def _cancel(
    running: tuple[asyncio.AbstractEventLoop, asyncio.Task[Any]] | None, message: str | None = None
) -> None:
    """Cancel a task running on another thread's loop (if it still runs); `message` (STOP)
    tells the engine what the cancellation means."""
    if running is None:
        return
    loop, task = running
    with contextlib.suppress(RuntimeError):  # that loop has already closed
        loop.call_soon_threadsafe(task.cancel, message)


# -- the command line's entry --------------------------------------------------------------------


def run_app(args: argparse.Namespace, *, watch: bool = False) -> int:
    """`fixloop-tui [PATH] [flags]` (or `watch`): settings as for headless, then the app; its
    exit code."""
    from tui.headless import settings_from_args

    prepared = settings_from_args(args)
    if isinstance(prepared, int):
        return prepared
    project, settings = prepared
    app = FixloopApp(project, settings, task=settings.task, watch=watch)
    app.run()
    if app.stopped:
        resume = resume_command(app.stopped, str(project))
        print(f"fixloop: stopped — resume with: {resume}", file=sys.stderr)
    elif app.outcome is not None:
        line = f"fixloop: {app.outcome.status_text} — {app.outcome.reason}"
        if app.finished is not None:
            line += f"; {app.finished.detail}"
        elif app.outcome.decidable:
            line += f"; the result stays on branch {app.outcome.branch}"
        print(line, file=sys.stderr)
    return app.exit_status
