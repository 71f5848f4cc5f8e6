"""The interactive app: `fixloop-tui [PATH] [flags]` without `--headless`.

The engine runs in a thread worker with its own asyncio loop (the workspace makes blocking
git calls); its events, streamed text and review requests come back as messages. Opening is
fast: the engine (the runner, the model client, the verifier, git, the events' models) is
imported inside the workers and handlers that use it, never at module level, and the first
frame waits for neither the sandbox nor the verifier (tests/tui/test_startup.py).
FixloopApp's other parts are its bases: the checks before a run (tui/app_checks.py), the end
of a run (tui/app_end.py), and stop, abort and quit (tui/app_quit.py); its palette is
tui/commands.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual import on, work
from textual.app import SystemCommand
from textual.binding import BindingType
from textual.message import Message
from textual.screen import Screen
from textual.theme import Theme

import themes
from engine.errors import ConfigError
from engine.project.settings import Settings
from engine.run.exit_codes import EXIT_INFRA, EXIT_INTERRUPTED, EXIT_USAGE
from engine.run.guards import ModelUnreachable, RunInterrupted
from engine.run.talk import Talk
from tui.app_checks import FINDING_MODEL, ProjectChecks
from tui.app_end import RunEnding
from tui.app_quit import StopAndQuit, TaskOnLoop, cancel
from tui.commands import OffersCommands, app_commands
from tui.interactive_gate import (
    CandidatesAsked,
    EngineEvent,
    Held,
    InteractiveGate,
    Mode,
    ModelText,
    PassReviewAsked,
    ReviewAsked,
    UiSink,
)
from tui.keymap import APP, bindings_for
from tui.screens.candidates import CandidatesScreen
from tui.screens.editor import EditorScreen
from tui.screens.end import EndScreen, RunOutcome
from tui.screens.main import MainScreen
from tui.screens.outage import OutageChoice, OutageScreen
from tui.screens.quit import QuitScreen
from tui.screens.replay import ReplayScreen, artifact_loader
from tui.screens.review import ReviewScreen
from tui.screens.runs import RunsScreen
from tui.screens.suspicious import SuspiciousPassScreen
from tui.screens.task import TaskScreen
from tui.screens.watch import WatchScreen
from tui.state import remember_theme, remembered_theme
from tui.widgets.code import warm_up

if TYPE_CHECKING:
    from engine.run.finish import Finished
    from engine.spec.definition import Spec


def sandbox_label(settings: Settings) -> str:
    """The header's sandbox: the choice, and a standing reminder when runc is allowed."""
    label = settings.sandbox
    return f"{label}, runc allowed (not gVisor!)" if settings.allow_runc else label


# The keys that change the live run (off while a past run is replayed).
LIVE_RUN_ACTIONS = frozenset({"toggle_mode", "toggle_pause", "abort_run", "show_review"})


class FixloopApp(ProjectChecks, RunEnding, StopAndQuit):
    """One run of the repair loop, watched and steered by a person."""

    CSS_PATH = str(themes.STYLESHEET)
    TITLE = "fixloop"
    BINDINGS: ClassVar[list[BindingType]] = [*bindings_for(APP)]

    class RunOver(Message):
        """The engine's thread is done (after RunFinished, or instead of it on a start-up
        failure, or after the person stopped the run to resume it later)."""

        def __init__(
            self,
            error: str | None = None,
            usage: bool = False,
            stopped: bool = False,
            outage: str | None = None,
        ) -> None:
            super().__init__()
            self.error = error
            self.usage = usage
            self.stopped = stopped
            self.outage = outage  # why the model could not be reached: the run is stopped

    def __init__(
        self,
        project: Path,
        settings: Settings,
        *,
        task: str | None = None,
        autostart: bool = True,
        browse: str | None = None,
        watch: bool = False,
        config_refused: str | None = None,
        resume: str | None = None,
        resume_with: OutageChoice | None = None,
    ) -> None:
        super().__init__()
        self.project = project
        self.settings = settings
        # Why the project config's security settings were left out of `settings` (untrusted).
        self.config_refused = config_refused
        self.initial_task = task
        self.autostart = autostart  # False: show what it is given, start nothing
        # Not None: no run, only the trail — "" opens the list of runs, a run id that run.
        self.browse = browse
        self.watching = watch  # watch mode: verify on every save until the person starts a run
        # Not None: a stopped run taken up again (`fixloop-tui resume`), its trail shown first;
        # `resume_with`: the person's --model/--api-base for it.
        self.resuming = resume
        self.resume_with = resume_with or OutageChoice()
        self._checks = 0
        self.spec: Spec | None = None  # spec mode, from the "New from spec" form
        self.mode: Mode = settings.approve
        self.gate = InteractiveGate(self.post_from_thread, self.mode)
        self.sink = UiSink(self.post_from_thread)
        # What the person says while the run goes on: notes and files for the next prompts.
        self.talk = Talk(project)
        self.main = MainScreen(
            project=str(project),
            model=settings.model or FINDING_MODEL,
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
        self._engine: TaskOnLoop | None = None
        self._checking: TaskOnLoop | None = None

    # -- start-up -------------------------------------------------------------------------------

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return {**super().get_theme_variable_defaults(), **themes.VARIABLE_DEFAULTS}

    def get_default_screen(self) -> Screen[Any]:
        return self.main

    def on_mount(self) -> None:
        if not self.is_headless:  # a terminal to lose (Pilot's tests have none)
            self.watch_terminal()
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
        # From now on a change of theme (the palette, Textual's picker) is remembered. Subscribed
        # now, not after a refresh (a change made before that refresh was lost), so the signal
        # of the theme just set is told apart by its name.
        self._mounted_theme: str | None = wanted
        self.theme_changed_signal.subscribe(self, self._theme_changed)
        # The workers below start once the first frame is painted: the engine, the model client
        # and the highlighter they import would hold the GIL while it is drawn.
        self.call_after_refresh(self._warm_up)
        if self.browse is not None:
            if self.browse:
                self.replay(self.browse)
            else:
                self.action_open_runs()
            return
        if self.resuming is not None:
            self.call_after_refresh(self._take_up, self.resuming)
            return
        if not self.autostart:
            return
        if self.config_refused is not None and (self.watching or self.initial_task is not None):
            self.notify(self.config_refused, title="not obeyed", severity="warning", timeout=30)
        if self.watching:
            watching = WatchScreen(
                self.project,
                model=self.settings.model or FINDING_MODEL,
                sandbox=sandbox_label(self.settings),
                mode=self.mode,
            )
            self.push_screen(watching, self.begin)
            self.call_after_refresh(self._check_project)
            self.call_after_refresh(self._check_model)
        elif self.initial_task is None:
            screen = TaskScreen(
                project=str(self.project),
                model=self.settings.model or FINDING_MODEL,
                sandbox=sandbox_label(self.settings),
                mode=self.mode,
                config_refused=self.config_refused,
            )
            self.push_screen(screen, self.begin)
            self.call_after_refresh(self._check_project)
            self.call_after_refresh(self._check_model)
        else:
            self.call_after_refresh(self.begin, self.initial_task)
            if not self.settings.model:  # the run's start names it too, a moment later
                self.call_after_refresh(self._check_model)

    def _theme_changed(self, theme: Theme) -> None:
        if theme.name == self._mounted_theme:  # the signal of the theme set at mount
            self._mounted_theme = None
            return
        self._mounted_theme = None
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

    def begin(self, task: str | None) -> None:
        """Start the run with `task` (from the task screen or --task)."""
        if task is None or self.running:
            return
        cancel(self._checking)
        self.initial_task = task
        self.running = True
        self.refresh_bindings()
        self.main.note = "starting: the worktree, the sandbox and the first verification…"
        self.main.refresh_header()
        self._run_engine(task)

    def _take_up(self, run_id: str) -> None:
        """A stopped run opened in the app: its trail folded in as a live run's events are
        (the history, the panes), then the run goes on where it stopped, in its own mode."""
        from engine.project.paths import run_path
        from engine.run.run_directory import read_events

        self.main.loader = artifact_loader(self.project, run_id)
        for event in read_events(run_path(self.project, run_id) / "events.jsonl"):
            self.main.apply(event)
        self.main.view.resumed()
        self.running = True
        self.refresh_bindings()
        self.main.note = "resuming: where the run stopped…"
        self.main.refresh_header()
        self._resume_engine(run_id, self.resume_with)

    # -- the engine's thread --------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="run", exit_on_error=False)
    async def _run_engine(self, task: str) -> None:
        from engine.run.start import start_run  # the model client's modules load off the UI thread

        settings = self.settings.model_copy(update={"task": task})
        await self._drive(
            start_run(
                self.project,
                settings,
                gate=self.gate,
                sinks=[self.gate, self.sink],
                on_model_text=self.sink.model_text,
                spec=self.spec,
                talk=self.talk,
            )
        )

    @work(thread=True, exclusive=True, group="run", exit_on_error=False)
    async def _resume_engine(self, run_id: str, choice: OutageChoice) -> None:
        """The stopped run taken up again in this app (after an outage), its history kept."""
        from engine.run.start import resume_run

        await self._drive(
            resume_run(
                self.project,
                run_id,
                gate=self.gate,
                sinks=[self.gate, self.sink],
                on_model_text=self.sink.model_text,
                api_base=choice.api_base,
                model=choice.model,
                talk=self.talk,
            )
        )

    async def _drive(self, run: Coroutine[Any, Any, object]) -> None:
        """Run the engine's coroutine on this thread; say how it ended (RunOver)."""
        from engine.errors import WorkspaceError

        current = asyncio.current_task()
        assert current is not None
        self._engine = (asyncio.get_running_loop(), current)
        try:
            await run
        except ModelUnreachable as exc:
            self.post_from_thread(self.RunOver(stopped=True, outage=exc.reason))
            return
        except RunInterrupted:
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
        from engine.run.events import RunFinished, RunStarted

        event = message.event
        self.main.note = ""  # "starting…" or "resuming…": the run is under way
        if isinstance(event, RunStarted):
            self.main.loader = artifact_loader(self.project, event.run_id)
        self.main.apply(event)
        if isinstance(event, RunFinished):
            self._close_reviews()
            self._run_finished(event)

    @on(Held)
    def _held(self, message: Held) -> None:
        if self.gate.paused:
            self.main.set_paused(f"paused before iteration {message.n} · p resumes")

    @on(ModelText)
    def _model_text(self, message: ModelText) -> None:
        self.main.stream(message.piece)

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
        self.main.show_pending(review.pending_diff())
        self.main.refresh_header()
        self.refresh_bindings()

    def action_show_review(self) -> None:
        review, self._hidden = self._hidden, None
        if review is None:
            return
        self.uninstall_screen(review)
        self.main.aside = ""
        self.main.show_pending(None)
        self.main.refresh_header()
        self.push_screen(review, lambda decided: _resolve(review.request, decided))
        self.refresh_bindings()

    @on(PassReviewAsked)
    def _pass_review_asked(self, message: PassReviewAsked) -> None:
        request = message.request
        self.push_screen(SuspiciousPassScreen(request), lambda review: _resolve(request, review))

    @on(CandidatesAsked)
    def _candidates_asked(self, message: CandidatesAsked) -> None:
        request = message.request
        iteration = self.main.view.iterations.get(request.n)
        screen = CandidatesScreen(request, iteration.dropped if iteration else ())
        self.push_screen(screen, lambda choice: _resolve(request, choice))

    @on(RunOver)
    def _run_over(self, message: RunOver) -> None:
        self.running = False
        self.main.note = ""
        self.main.paused = ""
        self.main.refresh_header()
        if message.stopped and self.outcome is None:  # recorded as stopped: resumable
            self._close_reviews()
            self.stopped = self.main.view.run_id
            self.exit_status = EXIT_INFRA if message.outage else EXIT_INTERRUPTED
            if message.outage and self.stopped and not self._quitting:
                self._offer_to_go_on(self.stopped, message.outage)
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

    def _offer_to_go_on(self, run_id: str, reason: str) -> None:
        """The model could not be reached: retry now, ask elsewhere, or leave it stopped."""

        def chosen(choice: OutageChoice | None) -> None:
            if choice is None or self.running:
                return
            self.stopped = ""
            self.exit_status = 0
            self.main.view.resumed()
            self.running = True
            self.refresh_bindings()
            self.main.note = "resuming: the model is asked again…"
            self.main.refresh_header()
            self._resume_engine(run_id, choice)

        model = self.settings.model or ""
        screen = OutageScreen(reason, run_id, str(self.project), self.settings.api_base, model)
        self.push_screen(screen, chosen)

    def _close_reviews(self) -> None:
        """Reviews the run no longer waits for (it ended, or was stopped) go away; so does a
        quit dialog about a run that is over."""
        waiting = (ReviewScreen, CandidatesScreen, EditorScreen, SuspiciousPassScreen, QuitScreen)
        while len(self.screen_stack) > 1 and isinstance(self.screen, waiting):
            self.pop_screen()
        hidden, self._hidden = self._hidden, None
        if hidden is not None:
            self.uninstall_screen(hidden)
            hidden.remove()
            self.main.aside = ""
            self.main.show_pending(None)
            self.main.refresh_header()

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

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Abort only while a run goes on; the end-of-run summary only once there is one; back
        to the review only while one is put aside. A past run's replay (and the list of runs)
        never changes the live run: those keys are off there."""
        if action in LIVE_RUN_ACTIONS and isinstance(self.screen, (ReplayScreen, RunsScreen)):
            return False
        if action in ("abort_run", "toggle_pause"):
            return self.running
        if action == "show_summary":
            return self.outcome is not None
        if action == "show_review":
            return self._hidden is not None
        return True

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield from app_commands(self)
        if isinstance(screen, OffersCommands):
            yield from screen.palette_commands()


def _resolve(request: Any, review: Any) -> None:
    """A modal's answer to the engine (a modal closed without one decides nothing)."""
    if review is not None:
        request.resolve(review)
