"""The feedback pane, two tabs: `packet` — each verifier stage's state, the verdict, and the
repair packet the model is told next (or why there is none); `model` — the model's answer,
streamed in while it is generated, wrapped to the pane, and once finished laid out for
reading (`answer.readable_answer`); with candidates, a row per answer above it: its tokens as
they stream, and which are done."""

from __future__ import annotations

from collections.abc import Sequence

from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.widgets import Static, TabbedContent, TabPane

from engine.text.durations import said_duration
from tui.widgets.feedback.answer import readable_answer
from tui.widgets.history.pane import status_colour
from tui.widgets.run_view import IterationView, StageView, StreamView

STREAM_REFRESH_S = 0.1
STAGE_MARKS = {"ok": ("✓", "$text-success"), "running": ("…", "$text-muted")}


def stage_line(stage: StageView) -> Content:
    mark, style = STAGE_MARKS.get(stage.state, ("✗", "$text-error"))
    parts: list[str | tuple[str, str]] = [(f"{mark} ", style), (stage.name, "bold"), " "]
    parts.append((stage.state, style))
    if stage.exit_code is not None:
        parts.append((f" {said_duration(stage.duration_ms / 1000)}", "$text-muted"))
    parts.append((f" · {stage.cmd}", "$text-muted"))
    return Content.assemble(*parts)


def candidates_content(candidates: Sequence[tuple[str, str]]) -> Content:
    """Each candidate's answer laid out for reading under its label."""
    parts: list[Content] = []
    for label, answer in candidates:
        parts.append(Content.styled(f"── {label} ──", "bold $text-accent"))
        parts.append(Content(readable_answer(answer) or "(empty answer)"))
        parts.append(Content(""))
    return Content("\n").join(parts[:-1])


def verdict_line(it: IterationView) -> Content:
    colour = status_colour(it.status)
    parts: list[str | tuple[str, str]] = [
        (
            it.status.replace("_", " ").upper(),
            f"bold $text-{colour}" if colour != "foreground" else "bold",
        )
    ]
    if it.tests:
        t = it.tests
        counts = f"{t.get('passed', 0)} passed, {t.get('failed', 0)} failed"
        if t.get("errors"):
            counts += f", {t['errors']} errors"
        if t.get("skipped"):
            counts += f", {t['skipped']} skipped"
        parts.append(f" · {counts}")
    if it.error_class and it.error_class != "none":
        parts.append((f" · {it.error_class}", "$text-muted"))
    return Content.assemble(*parts)


STREAM_MARKS = {
    "asked": ("…", "$text-muted"),
    "together": ("…", "$text-muted"),
    "writing": ("▍", "$text-accent"),
    "done": ("done", "$text-success"),
    "failed": ("failed", "$text-error"),
    "given up": ("given up", "$text-muted"),
}


def stream_row(k: int, stream: StreamView, *, shown: bool) -> Content:
    """`#2 ▍ 88 tok · 11 tok/s`: one candidate's answer while (and once) it is written."""
    mark, style = STREAM_MARKS.get(stream.state, ("?", "$text-muted"))
    parts: list[str | tuple[str, str]] = [(f"#{k}", "bold" if shown else ""), " ", (mark, style)]
    if stream.state == "together":
        parts.append((" asked in one request", "$text-muted"))
    elif stream.state == "asked":
        parts.append((" asked", "$text-muted"))
    if stream.tokens or stream.state == "writing":
        parts.append(f" {stream.tokens:,} tok")
    if stream.state == "writing" and stream.per_second:
        parts.append((f" · {stream.per_second:,.0f} tok/s", "$text-muted"))
    return Content.assemble(*parts)


def stream_rows(it: IterationView | None) -> Content | None:
    """A row per candidate answer of the iteration; None for an iteration of one answer."""
    if it is None or len([k for k in it.streams if k > 0]) < 2:
        return None
    return Content("\n").join(
        stream_row(k, s, shown=k == it.shown) for k, s in sorted(it.streams.items()) if k > 0
    )


BASELINE_INTRO = "Before any edit: the project as the run started."
PACKET_HEADING = "repair packet — what the model is told next:"


def feedback_content(
    it: IterationView | None,
    packet_text: str,
    *,
    intro: str = BASELINE_INTRO,
    heading: str = PACKET_HEADING,
) -> Content:
    """Everything the packet tab shows for one iteration."""
    if it is None:
        return Content.styled("nothing verified yet", "$text-muted")
    blocks: list[Content] = []
    if it.n == 0:
        blocks.append(Content.styled(intro, "italic"))
    elif it.explanation:
        blocks.append(Content.assemble(("proposal: ", "bold"), it.explanation))
    if it.stages:
        blocks.append(Content("\n").join(stage_line(s) for s in it.stages))
    if not it.in_progress or it.tests:
        blocks.append(verdict_line(it))
    notes = _notes(it)
    if notes:
        blocks.append(notes)
    if packet_text.strip() and it.status in ("failing", "no_change"):
        title = Content.styled(heading, "bold $text-primary")
        blocks.append(Content("\n").join([title, Content(packet_text.rstrip())]))
    return Content("\n\n").join(blocks)


def _notes(it: IterationView) -> Content | None:
    lines: list[Content] = []
    if it.status == "rejected":
        lines.append(
            Content.styled(
                "rejected by you: nothing was applied; the model is asked again",
                "bold $text-warning",
            )
        )
    if it.comment:
        lines.append(Content.assemble(("you told the model: ", "bold"), it.comment))
    if it.format_error:
        lines.append(Content.styled("the answer could not be used:", "bold $text-warning"))
        lines.append(Content(it.format_error.rstrip()))
    if it.held_back:
        held = ", ".join(it.held_back)
        lines.append(Content.styled(f"held back (pinned tests): {held}", "$text-warning"))
    if it.pass_reasons:
        lines.append(Content.styled("why the pass is doubted:", "bold $text-warning"))
        lines.extend(Content(f"  • {reason}") for reason in it.pass_reasons)
    if it.status == "ok":
        lines.append(
            Content.styled("verified green: every stage passed, honestly.", "$text-success")
        )
    lines.extend(Content.styled(line, "$text-accent") for line in it.levers)
    if it.guard:
        lines.append(Content.styled(f"guard tripped: {it.guard}", "bold $text-error"))
    return Content("\n").join(lines) if lines else None


class FeedbackPane(Vertical):
    """Two tabs; the screen picks which one follows a live run."""

    DEFAULT_CSS = """
    FeedbackPane TabbedContent { height: 1fr; }
    FeedbackPane TabPane { padding: 0; height: 1fr; }
    FeedbackPane ContentSwitcher { height: 1fr; }
    FeedbackPane #packet-scroll { height: 1fr; }
    FeedbackPane #model-scroll { height: 1fr; }
    FeedbackPane #model-streams {
        height: auto; display: none; border-bottom: solid $foreground 20%;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.border_title = "feedback"
        self._shown: tuple[int | None, Content] | None = None
        self._response: str | None = None
        self._streamed = False  # a piece arrived that the tab does not show yet
        self._laid_out = False  # the tab shows `_response` whole, laid out for reading
        self._rows: Content | None = None  # the candidates' rows, shown at the next refresh
        self._rows_due = False

    def compose(self) -> ComposeResult:
        with TabbedContent(initial="packet"):
            with TabPane("packet", id="packet"), VerticalScroll(id="packet-scroll"):
                yield Static(
                    Content.styled("nothing verified yet", "$text-muted"), id="packet-text"
                )
            with TabPane("model", id="model"):
                yield Static("", id="model-streams", markup=False)
                with VerticalScroll(id="model-scroll"):
                    yield Static("", id="model-log", markup=False)

    def show(self, it: IterationView | None, packet_text: str) -> None:
        body = feedback_content(it, packet_text)
        n = it.n if it else None
        if self._shown is not None and self._shown[0] == n and self._shown[1].is_same(body):
            return
        moved = self._shown is None or self._shown[0] != n
        self._shown = (n, body)
        self.query_one("#packet-text", Static).update(body)
        if moved:
            self.query_one("#packet-scroll", VerticalScroll).scroll_home(animate=False)

    def show_response(self, text: str, candidates: Sequence[tuple[str, str]] = ()) -> None:
        """The model's whole answer (a finished iteration); unchanged text keeps the scroll.
        With no single answer, the `candidates`' answers (label, text), one after another."""
        several = not text and bool(candidates)
        if several:  # what is shown, to tell a change from the same answers shown again
            text = "\n".join(f"{label}\n{answer}" for label, answer in candidates)
        if text == self._response and self._laid_out:
            return
        keep_scroll = text == self._response  # the streamed answer, now whole
        self._response = text
        self._streamed = False
        self._laid_out = True
        if several:
            body = candidates_content(candidates)
        elif text:
            body = Content(readable_answer(text))
        else:
            body = Content("(no answer for this iteration)")
        self.query_one("#model-log", Static).update(body)
        if not keep_scroll:
            self.query_one("#model-scroll", VerticalScroll).scroll_home(animate=False)

    def begin_stream(self) -> None:
        """Empty the model tab for an answer about to stream in."""
        self._response = ""
        self._laid_out = False
        self.query_one("#model-log", Static).update("")

    def stream(self, text: str) -> None:
        """Append a piece of the answer being generated; the tab shows it at most ten times a
        second (each piece is a few characters, and the whole answer is laid out again)."""
        if self._response is None:
            self.begin_stream()
        self._response = (self._response or "") + text
        self._laid_out = False
        if not self._streamed:
            self._streamed = True
            self.set_timer(STREAM_REFRESH_S, self._show_stream)

    def show_streams(self, it: IterationView | None) -> None:
        """The rows of the iteration's candidate answers (hidden for one answer), shown at
        most ten times a second, as the streamed text is."""
        self._rows = stream_rows(it)
        if not self._rows_due:
            self._rows_due = True
            self.set_timer(STREAM_REFRESH_S, self._show_rows)

    def _show_rows(self) -> None:
        self._rows_due = False
        rows = self.query_one("#model-streams", Static)
        rows.display = self._rows is not None
        rows.update(self._rows or "")

    @property
    def streams_text(self) -> str:
        """The candidates' rows as the tab shows them now (empty: none shown)."""
        rows = self.query_one("#model-streams", Static)
        return str(rows.render()) if rows.display else ""

    def _show_stream(self) -> None:
        if not self._streamed:
            return  # the whole answer came meanwhile
        self._streamed = False
        self.query_one("#model-log", Static).update(Content(self._response or ""))
        self.query_one("#model-scroll", VerticalScroll).scroll_end(animate=False)

    @property
    def answer_text(self) -> str:
        """The answer the model tab holds (streamed so far, or whole)."""
        return self._response or ""

    def open_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab

    @property
    def tab(self) -> str:
        return self.query_one(TabbedContent).active
