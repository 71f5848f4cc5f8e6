"""The header: line one says what runs where (project, model, sandbox backend, mode), line
two the budget so far (iteration n/N, tokens, cost) and what the loop is doing now."""

from __future__ import annotations

from dataclasses import dataclass

from textual.content import Content
from textual.timer import Timer
from textual.widget import Widget

from tui.widgets.history.pane import status_colour
from tui.widgets.run_view import RunView

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


@dataclass(frozen=True)
class Activity:
    text: str
    busy: bool = False


def activity_of(view: RunView, streamed: int = 0) -> Activity:
    """What the loop is doing, in a few words, from the run so far."""
    if not view.run_id:
        return Activity("")
    if view.status:
        return Activity(f"finished: {view.status} — {view.reason}")
    latest = view.iterations.get(view.latest or 0)
    if latest is None:
        return Activity("starting", busy=True)
    running = next((s for s in latest.stages if s.exit_code is None), None)
    if latest.status == "verifying":
        where = "the project before any edit" if latest.n == 0 else f"iteration {latest.n}"
        stage = f": {running.name}" if running else ""
        return Activity(f"verifying {where} in the sandbox{stage}", busy=True)
    if latest.status == "asking" and latest.retry and not streamed:
        return Activity(latest.retry, busy=True)
    if latest.status == "asking":
        got = f" ({streamed:,} characters so far)" if streamed else ""
        return Activity(f"the model is answering{got}", busy=True)
    if latest.status == "answered":
        return Activity("reading the answer", busy=True)
    if latest.status == "review":
        return Activity("waiting for your review of the proposal")
    if latest.status == "pass review":
        return Activity("waiting for you: the pass looks suspicious")
    if latest.status == "applying":
        return Activity("applying and committing the edits", busy=True)
    return Activity("preparing the next prompt", busy=True)


class RunHeader(Widget):
    """Two lines at the top of the main screen."""

    DEFAULT_CSS = """
    RunHeader {
        height: 2;
        padding: 0 1;
        background: $panel;
        color: $foreground;
    }
    """

    def __init__(self, *, project: str = "", model: str = "", sandbox: str = "") -> None:
        super().__init__()
        self.view = RunView()
        self.project = project
        self.model = model
        self.sandbox = sandbox
        self.mode = "step"
        self.idle = "no run yet"  # line two before a run starts
        self.activity = Activity("")
        self._frame = 0
        self._timer: Timer | None = None

    def show(self, view: RunView, mode: str, activity: Activity) -> None:
        self.view, self.mode, self.activity = view, mode, activity
        if activity.busy and self._timer is None:
            self._timer = self.set_interval(0.1, self._spin)
        elif not activity.busy and self._timer is not None:
            self._timer.stop()
            self._timer = None
        self.refresh()

    def _spin(self) -> None:
        self._frame = (self._frame + 1) % len(SPINNER)
        self.refresh()

    def render(self) -> Content:
        view = self.view
        sep = (" · ", "$text-muted")
        project = (view.project or self.project).rstrip("/").rsplit("/", 1)[-1]
        mode_style = "bold $text-accent" if self.mode == "auto" else "bold $text-primary"
        first = Content.assemble(
            ("fixloop", "bold $text-primary"),
            sep,
            (project or "?", "bold"),
            sep,
            view.model or self.model or "model?",
            sep,
            f"sandbox {view.sandbox or self.sandbox or '?'}",
            sep,
            (f"{self.mode} mode", mode_style),
        )
        return Content("\n").join([first, self._second_line()])

    def _second_line(self) -> Content:
        view = self.view
        sep = (" · ", "$text-muted")
        if not view.run_id:
            if self.activity.text:
                spinner = f"{SPINNER[self._frame]} " if self.activity.busy else ""
                return Content.styled(spinner + self.activity.text, "$text-accent")
            return Content.styled(self.idle, "$text-muted")
        tokens = f"{view.tokens:,}"
        if view.max_tokens:
            tokens += f"/{view.max_tokens:,}"
        cost = f"${view.cost_usd:.4f}"
        if view.max_cost_usd:
            cost += f"/${view.max_cost_usd:.2f}"
        parts: list[str | tuple[str, str]] = [
            f"iteration {view.current_n}/{view.max_iterations}",
            sep,
            f"{tokens} tokens",
            sep,
            cost,
            sep,
        ]
        activity = self.activity
        if view.status:
            colour = status_colour(view.status)
            style = f"bold $text-{colour}" if colour != "foreground" else "bold"
            parts.append((activity.text, style))
        else:
            spinner = f"{SPINNER[self._frame]} " if activity.busy else ""
            parts.append((spinner + activity.text, "$text-accent" if activity.busy else "bold"))
        return Content.assemble(*parts)
