"""The task screen, shown first when no `--task` was given: what the verifier says about the
project right now (checked in the sandbox while the person types), and the task to run, on as
many lines as it needs. `ctrl+s` starts the run; `enter` is a new line. Starting is refused,
with the way forward, where a run cannot work: outside the top of a git repository, or when
the project has no tests for a repair to be checked against."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Footer, Static, TextArea

from tui.keymap import TASK, bindings_for
from tui.screens.confirm import ConfirmScreen
from tui.widgets.config_refused import ConfigRefused
from tui.widgets.feedback import feedback_content
from tui.widgets.header import RunHeader
from tui.widgets.model_problem import ModelProblem
from tui.widgets.run_view import IterationView, StageView

# The verifier is imported once its verdict arrives: this is the first screen, drawn before any
# verification starts.
if TYPE_CHECKING:
    from engine.feedback.tree import Verification

DEFAULT_TASK = "Make the failing tests pass."
CHECK_INTRO = "Your checkout as it is now (uncommitted work included), verified in the sandbox."
CHECK_HEADING = "repair packet — what the model would be told first:"
TASK_KEYS = "ctrl+s: start the run · enter: new line · ctrl+q: quit"
# Said in the task box's border where `escape` is pressed: a toast would cover that border at
# 80x24. The keys come back once the task is typed on.
TASK_KEPT = "your task is kept · ctrl+s: start the run · ctrl+q: quit"
REFUSED = "cannot start: see above"
NO_TESTS_WAY = "write a test that shows the bug, or build from a spec with ctrl+n"


def check_view(result: Verification) -> IterationView:
    """A verification of the checkout, as the feedback pane renders an iteration."""
    judgement = result.judgement
    return IterationView(
        n=0,
        status=judgement.verdict.value,
        tests=judgement.tests.model_dump() if judgement.tests else None,
        error_class=judgement.classification.error_class.value,
        stages=[
            StageView(
                name=stage.name,
                cmd=stage.cmd,
                exit_code=stage.exit_code,
                duration_ms=stage.duration_ms,
                timed_out=stage.timed_out,
                oom_killed=stage.oom_killed,
            )
            for stage in result.stages
        ],
        pass_reasons=list(judgement.reasons) if judgement.verdict.value != "failing" else [],
    )


class TaskScreen(Screen[str]):
    """Dismissed with the task to run."""

    BINDINGS: ClassVar[list[BindingType]] = [*bindings_for(TASK)]

    def __init__(
        self,
        *,
        project: str,
        model: str,
        sandbox: str,
        mode: str = "step",
        config_refused: str | None = None,
    ) -> None:
        super().__init__()
        self.project, self.model, self.sandbox, self.mode = project, model, sandbox, mode
        # The project config's untrusted security settings, left out of this run's settings.
        self.config_refused = config_refused
        self.may_quit = False  # the person said yes to losing the typed task
        self.refusal: str | None = None  # why a repair cannot start here; None: it can
        self.unusable: str | None = None  # why no run at all (spec mode neither) can start here

    def compose(self) -> ComposeResult:
        yield RunHeader(project=self.project, model=self.model, sandbox=self.sandbox)
        with Vertical(id="task-body"):
            if self.config_refused is not None:
                yield ConfigRefused(self.config_refused)
            with VerticalScroll(id="state") as state:
                state.border_title = "the project now"
                yield Static(
                    Content.styled("checking the project in the sandbox…", "$text-accent"),
                    id="state-text",
                )
            yield ModelProblem()
            with Vertical(id="task-box") as box:
                box.border_title = "task"
                box.border_subtitle = TASK_KEYS
                yield TextArea(
                    DEFAULT_TASK,
                    id="task",
                    soft_wrap=True,
                    show_line_numbers=False,
                    placeholder=DEFAULT_TASK,
                )
        yield Footer()

    def on_mount(self) -> None:
        header = self.query_one(RunHeader)
        header.mode = self.mode
        header.idle = "no run yet: enter the task below"
        header.refresh()
        task = self.query_one("#task", TextArea)
        task.focus()
        task.move_cursor(task.document.end)

    @property
    def task_text(self) -> str:
        return self.query_one("#task", TextArea).text

    # -- what the app tells it ------------------------------------------------------------------

    def show_check(self, result: Verification | None, error: str | None = None) -> None:
        """The verifier's verdict on the checkout, or why it could not run."""
        self.unusable = None
        refusal = None
        if error is not None:
            body = Content.assemble(("could not check the project: ", "bold $text-error"), error)
        elif result is not None:
            from engine.verify.baseline_tests import no_tests_reason

            body = feedback_content(
                check_view(result), result.packet_text, intro=CHECK_INTRO, heading=CHECK_HEADING
            )
            refusal = no_tests_reason(result.stages)
            if refusal is not None:
                body = Content("\n\n").join([_refused(refusal, NO_TESTS_WAY), body])
        else:
            body = Content("")
        self.query_one("#state-text", Static).update(body)
        self._refuse(refusal)

    def show_unusable(self, reason: str) -> None:
        """The project directory cannot hold a run (not a git repository, a subdirectory of
        one, no commit yet): said at once, instead of a check that would mislead."""
        way = "a run works on the top of a git repository; nothing was checked or run here"
        self.query_one("#state-text", Static).update(_refused(reason, way))
        self.unusable = reason
        self._refuse(reason)

    def _refuse(self, refusal: str | None) -> None:
        self.refusal = refusal
        box = self.query_one("#task-box")
        box.border_subtitle = TASK_KEYS if refusal is None else REFUSED
        box.set_class(refusal is not None, "refused")
        self.refresh_bindings()

    # -- keys -----------------------------------------------------------------------------------

    def action_start(self) -> None:
        if self.refusal is not None:
            self._refused_again()
            return
        self.dismiss(self.task_text.strip() or DEFAULT_TASK)

    def action_keep_task(self) -> None:
        """`escape` here has nowhere to go back to: it keeps the typed task and says how to
        leave (it never quits, as it once did, losing what was typed), in the task box's own
        border rather than a toast over it."""
        if self.refusal is None:
            box = self.query_one("#task-box")
            box.border_subtitle = Content.styled(TASK_KEPT, "bold $text-accent")

    def _refused_again(self) -> None:
        """A start refused again: the bell, and the box's border points at the reason above
        (a toast would cover that border, and the reason is on the screen already)."""
        self.app.bell()
        self.query_one("#task-box").border_subtitle = Content.styled(REFUSED, "bold $text-warning")

    @on(TextArea.Changed, "#task")
    def _typed(self) -> None:
        if self.refusal is None:
            self.query_one("#task-box").border_subtitle = TASK_KEYS

    async def action_quit_task(self) -> None:
        await self.app.run_action("quit")

    def asks_before_quitting(self) -> bool:
        """Whether quitting waits for an answer: a task the person typed is not dropped
        without asking (the default answer keeps it). The app's quit asks this first."""
        typed = self.task_text.strip()
        if self.may_quit or not typed or typed == DEFAULT_TASK:
            return False
        question = "quit the app? the task you typed is not kept anywhere."
        confirm = ConfirmScreen("quit and lose the task?", question, yes="quit", no="keep it")
        self.app.push_screen(confirm, self._quit_confirmed)
        return True

    async def _quit_confirmed(self, yes: bool | None) -> None:
        if yes:
            self.may_quit = True
            await self.app.run_action("quit")

    async def action_new_from_spec(self) -> None:
        """Spec mode needs tests at no baseline, but it needs a git repository all the same."""
        if self.unusable is not None:
            self._refused_again()
            return
        await self.app.run_action("new_from_spec")


def _refused(reason: str, way: str) -> Content:
    """Why starting is refused, and what to do instead."""
    return Content.assemble((reason, "bold $text-warning"), "\n", (way, "$text-primary"))
