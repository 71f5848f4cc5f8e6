"""The header: line one says what runs where (project, model, sandbox backend, mode), line
two the budget so far (iteration n/N, tokens, cost) and what the loop is doing now."""

from __future__ import annotations

from dataclasses import dataclass

from textual.content import Content
from textual.timer import Timer
from textual.widget import Widget

from tui.widgets.history.pane import status_colour
from tui.widgets.run_view import IterationView, RunView

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


@dataclass(frozen=True)
class Activity:
    text: str
    busy: bool = False


def answering(it: IterationView) -> str:
    """The answers being written, in a few words: `answering: 143 tok, 12 tok/s`; with
    candidates, their sum and how many are in (each one's own count is in the model tab)."""
    streams = list(it.streams.values())
    tokens = sum(s.tokens for s in streams if s.state in ("writing", "done"))
    if not tokens:
        return "the model is answering"
    rates = [s.per_second for s in streams if s.state == "writing" and s.per_second]
    said = f"answering: {tokens:,} tok" + (f", {sum(rates):,.0f} tok/s" if rates else "")
    if len(streams) > 1:
        done = sum(s.state == "done" for s in streams)
        said += f" ({len(streams)} candidates" + (f", {done} done)" if done else ")")
    return said


def activity_of(view: RunView) -> Activity:
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
    if latest.status == "asking" and latest.retry:
        return Activity(latest.retry, busy=True)
    if latest.status == "asking" or (latest.status == "answered" and latest.writing):
        return Activity(answering(latest), busy=True)
    if latest.status == "answered" and view.candidates > 1:
        return Activity(f"verifying {view.candidates} candidates side by side", busy=True)
    if latest.status == "answered":
        return Activity("reading the answer", busy=True)
    if latest.status == "candidates":
        return Activity("choosing among the candidates")
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
        width = max(self.content_region.width, 1)
        return Content("\n").join([self._first_line(width), self._second_line(width)])

    def _first_line(self, width: int) -> Content:
        """What runs where; shorter labels when narrow, and the model cut last."""
        view = self.view
        sep = (" · ", "$text-muted")
        project = (view.project or self.project).rstrip("/").rsplit("/", 1)[-1]
        model = view.model or self.model or "model?"
        sandbox = view.sandbox or self.sandbox or "?"
        mode_style = "bold $text-accent" if self.mode == "auto" else "bold $text-primary"
        brand: list[str | tuple[str, str]] = [("fixloop", "bold $text-primary"), sep]
        where: list[str | tuple[str, str]] = [(project or "?", "bold"), sep, model, sep]
        full = Content.assemble(
            *brand, *where, f"sandbox {sandbox}", sep, (f"{self.mode} mode", mode_style)
        )
        short = Content.assemble(*where, sandbox, sep, (self.mode, mode_style))
        # Still too long: the model's name gives way; the sandbox (a runc warning) and the
        # mode stay whole.
        room = width - (short.cell_length - len(model))
        clipped = model[: max(room - 1, 0)] + "…" if room < len(model) else model
        where[2] = clipped
        shortest = Content.assemble(*where, sandbox, sep, (self.mode, mode_style))
        return fit(width, full, short, shortest)

    def _second_line(self, width: int) -> Content:
        """The budget so far, then what the loop does now (cut with … when narrow)."""
        view = self.view
        sep = (" · ", "$text-muted")
        if not view.run_id:
            if self.activity.text:
                spinner = f"{SPINNER[self._frame]} " if self.activity.busy else ""
                return fit(width, Content.styled(spinner + self.activity.text, "$text-accent"))
            return fit(width, Content.styled(self.idle, "$text-muted"))
        spent = view.live_tokens
        tokens = f"{spent:,}"
        if view.max_tokens:
            tokens += f"/{view.max_tokens:,}"
        cost = f"${view.cost_usd:.4f}"
        if view.max_cost_usd:
            cost += f"/${view.max_cost_usd:.2f}"
        activity = self.activity
        if view.status:
            colour = status_colour(view.status)
            style = f"bold $text-{colour}" if colour != "foreground" else "bold"
            now = Content.styled(activity.text, style)
        else:
            spinner = f"{SPINNER[self._frame]} " if activity.busy else ""
            now = Content.styled(
                spinner + activity.text, "$text-accent" if activity.busy else "bold"
            )
        iteration = f"{view.current_n}/{view.max_iterations}"
        full = Content.assemble(
            f"iteration {iteration}", sep, f"{tokens} tokens", sep, cost, sep, now
        )
        # Narrow: the caps go, the labels shrink; what the loop does keeps the rest.
        short = Content.assemble(
            f"iter {iteration}", sep, f"{spent:,} tok", sep, f"${view.cost_usd:.4f}", sep, now
        )
        return fit(width, full, short)


def fit(width: int, *variants: Content) -> Content:
    """The first variant that fits on one line of `width` cells; else the last one, cut with
    an ellipsis. A header line never wraps (a wrapped first line hides the second)."""
    for variant in variants:
        if variant.cell_length <= width:
            return variant
    return variants[-1].truncate(width, ellipsis=True)
