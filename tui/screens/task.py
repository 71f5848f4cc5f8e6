"""The task screen, shown first when no `--task` was given: what the verifier says about the
project right now (checked in the sandbox while the person types), and the task to run.
`enter` starts the run."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Footer, Input, Static

from engine.verify.tree import Verification
from tui.widgets.feedback import feedback_content
from tui.widgets.header import RunHeader
from tui.widgets.model_problem import ModelProblem
from tui.widgets.run_view import IterationView, StageView

DEFAULT_TASK = "Make the failing tests pass."
CHECK_INTRO = "Your checkout as it is now (uncommitted work included), verified in the sandbox."
CHECK_HEADING = "repair packet — what the model would be told first:"


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

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.quit", "quit"),
        Binding("ctrl+n", "app.new_from_spec", "new from spec"),
    ]

    def __init__(self, *, project: str, model: str, sandbox: str, mode: str = "step") -> None:
        super().__init__()
        self.project, self.model, self.sandbox, self.mode = project, model, sandbox, mode

    def compose(self) -> ComposeResult:
        yield RunHeader(project=self.project, model=self.model, sandbox=self.sandbox)
        with Vertical(id="task-body"):
            with VerticalScroll(id="state") as state:
                state.border_title = "the project now"
                yield Static(
                    Content.styled("checking the project in the sandbox…", "$text-accent"),
                    id="state-text",
                )
            yield ModelProblem()
            with Vertical(id="task-box") as box:
                box.border_title = "task"
                box.border_subtitle = "enter: start the run · esc: quit"
                yield Input(value=DEFAULT_TASK, placeholder=DEFAULT_TASK, id="task")
        yield Footer()

    def on_mount(self) -> None:
        header = self.query_one(RunHeader)
        header.mode = self.mode
        header.idle = "no run yet: enter the task below"
        header.refresh()
        self.query_one(Input).focus()

    def show_check(self, result: Verification | None, error: str | None = None) -> None:
        """The verifier's verdict on the checkout, or why it could not run."""
        if error is not None:
            body = Content.assemble(("could not check the project: ", "bold $text-error"), error)
        elif result is not None:
            body = feedback_content(
                check_view(result), result.packet_text, intro=CHECK_INTRO, heading=CHECK_HEADING
            )
        else:
            body = Content("")
        self.query_one("#state-text", Static).update(body)

    @on(Input.Submitted, "#task")
    def _submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip() or DEFAULT_TASK)
