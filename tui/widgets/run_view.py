"""The run as the panes show it: the engine's events folded into one record per iteration.

Pure data, no Textual: the live app and the snapshot tests feed it events (or fixed values),
and every pane renders a slice of it. Iteration 0 is the verification before any edit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tui.lever_lines import (
    chosen_line,
    formatted_line,
    held_back_line,
    reasked_line,
    sampled_line,
    strategy_line,
    together_line,
    verified_line,
)

# The events' models are imported where events are folded (`from engine.run import events as
# ev`), not here: the task screen draws these views before any run, and its first frame loads no
# event model.
if TYPE_CHECKING:
    from engine.run import events as ev

# An iteration in one of these is still under way.
IN_PROGRESS = frozenset(
    {"verifying", "asking", "answered", "candidates", "review", "applying", "pass review"}
)


@dataclass
class StageView:
    name: str
    cmd: str
    exit_code: int | None = None  # None: still running
    duration_ms: int = 0
    timed_out: bool = False
    oom_killed: bool = False

    @property
    def state(self) -> str:
        if self.exit_code is None:
            return "running"
        if self.timed_out:
            return "timed out"
        if self.oom_killed:
            return "out of memory"
        if self.exit_code == 0:
            return "ok"
        return "sandbox error" if self.exit_code < 0 else f"exit {self.exit_code}"


# A stream in one of these still waits for its answer (its tokens are an estimate).
PENDING = frozenset({"asked", "together", "writing"})


@dataclass
class StreamView:
    """One answer of an iteration while it is written: its tokens so far (counted as they
    stream, replaced by the server's count once it ends) and their rate, or how it ended."""

    prompt_tokens: int = 0  # the prompt's estimate, spent once the model reads it
    tokens: int = 0
    per_second: float | None = None
    # asked; together (asked in one request with others, which comes back whole); writing;
    # done; failed; given up
    state: str = "asked"

    @property
    def pending(self) -> bool:
        return self.state in PENDING

    @property
    def live_tokens(self) -> int:
        """What this answer has cost so far, while it is written: prompt and completion."""
        return self.prompt_tokens + self.tokens if self.pending else 0


@dataclass
class IterationView:
    n: int
    status: str = "asking"
    explanation: str = ""
    format_error: str = ""
    files: list[str] = field(default_factory=list)
    held_back: list[str] = field(default_factory=list)
    commit: str | None = None
    tests: dict[str, int] | None = None
    error_class: str = ""
    tokens: int = 0
    cost_usd: float = 0.0
    started: float = 0.0
    ended: float = 0.0
    stages: list[StageView] = field(default_factory=list)
    decision: str = ""
    pass_reasons: list[str] = field(default_factory=list)
    guard: str = ""
    comment: str = ""  # what the person told the model with their decision
    model_text: str = ""  # streamed while the model answers
    retry: str = ""  # while the model is asked again: "... retry 2/4 in 3 s"
    candidates: int = 0  # candidates verified or dropped so far (`--candidates N`)
    chosen: int = 0  # the candidate the iteration committed (0: none, or no candidates)
    # Per candidate K, what became of it: its verdict, or why it was dropped.
    candidate_fate: dict[int, str] = field(default_factory=dict)
    dropped: list[str] = field(default_factory=list)  # a line per candidate not verified: why
    levers: list[str] = field(default_factory=list)  # re-asked, chosen, strategy: a line each
    unchanged: str = ""  # why its answer counted as no change (`EditsApplied.because`)
    # Each answer asked, by candidate (0: the iteration's only answer), while and since it streams.
    streams: dict[int, StreamView] = field(default_factory=dict)
    shown: int | None = None  # the candidate whose text `model_text` holds

    @property
    def writing(self) -> list[int]:
        """The candidates whose answers are still being written."""
        return [k for k, stream in sorted(self.streams.items()) if stream.pending]

    @property
    def only_held_back(self) -> bool:
        """Nothing was applied because every edit was to a pinned test file."""
        return self.status == "no_change" and bool(self.held_back) and not self.files

    @property
    def duration_s(self) -> float:
        return max(self.ended - self.started, 0.0) if self.started else 0.0

    @property
    def in_progress(self) -> bool:
        return self.status in IN_PROGRESS


@dataclass
class RunView:
    run_id: str = ""
    task: str = ""
    project: str = ""
    model: str = ""
    sandbox: str = ""
    max_iterations: int = 0
    branch: str = ""
    baseline: str = ""
    max_tokens: int | None = None
    max_cost_usd: float | None = None
    named_files: list[str] = field(default_factory=list)
    waiting: list[str] = field(default_factory=list)  # the person's notes not yet in a prompt
    iterations: dict[int, IterationView] = field(default_factory=dict)
    status: str = ""  # empty while the run is live
    reason: str = ""
    final_commit: str | None = None
    candidates: int = 1  # answers asked per iteration
    tokens: int = 0
    cost_usd: float = 0.0
    duration_s: float = 0.0

    @property
    def live(self) -> bool:
        return bool(self.run_id) and not self.status

    @property
    def latest(self) -> int | None:
        return max(self.iterations) if self.iterations else None

    @property
    def live_tokens(self) -> int:
        """The tokens spent so far, with the answers still being written counted as they
        stream (their prompts' estimates and the completion tokens so far)."""
        if not self.live:
            return self.tokens
        writing = sum(s.live_tokens for it in self.iterations.values() for s in it.streams.values())
        return self.tokens + writing

    def stream(self, piece: ev.AnswerStreamed) -> bool:
        """Fold in a piece of an answer being written; whether it belongs to the text shown
        (`IterationView.model_text`), which it is then added to."""
        it = self.iterations.get(piece.n)
        if it is None:
            return False
        stream = it.streams.setdefault(piece.candidate, StreamView())
        stream.tokens, stream.per_second, stream.state = piece.tokens, piece.per_second, "writing"
        it.retry = ""  # an answer is coming in again: the wait is over
        if it.shown is None:
            it.shown = piece.candidate
        if it.shown != piece.candidate:
            return False
        it.model_text += piece.text
        return True

    @property
    def current_n(self) -> int:
        """The iteration under way (or last), counting only the model's iterations."""
        return max((n for n in self.iterations if n > 0), default=0)

    def rev_at(self, n: int) -> str | None:
        """The commit the code stood at after iteration n: its own, or the last one before."""
        for k in sorted(self.iterations, reverse=True):
            commit = self.iterations[k].commit
            if k <= n and commit:
                return commit
        return self.baseline or None

    def apply(self, event: ev.BaseEvent) -> int | None:
        """Fold one event in; returns the iteration it changed, if any."""
        from engine.run import events as ev

        if isinstance(event, ev.RunStarted):
            self._started(event)
            return 0
        if isinstance(event, ev.RunFinished):
            self._finished(event)
            return self.latest
        if isinstance(event, ev.RunStopped):
            self._stopped(event)
            return self.latest
        if isinstance(event, ev.RunResumed):
            self.resumed()
            return None
        n = getattr(event, "n", None)
        if not isinstance(n, int):
            return None
        if isinstance(event, ev.IterationStarted):
            self._close_unfinished()
            self._close_streams()
            self.iterations[n] = IterationView(n=n, started=event.ts)
        it = self.iterations.setdefault(n, IterationView(n=n, started=event.ts))
        it.ended = event.ts
        self._update(it, event)
        return n

    # -- the events, one by one -----------------------------------------------------------

    def _started(self, event: ev.RunStarted) -> None:
        budget = event.config.get("budget") or {}
        self.run_id = event.run_id
        self.task = event.task
        self.project = event.project
        self.model = event.model
        self.sandbox = event.sandbox
        self.max_iterations = event.max_iterations
        self.branch = event.branch
        self.baseline = event.baseline
        self.max_tokens = budget.get("max_tokens")
        self.max_cost_usd = budget.get("max_cost_usd")
        self.named_files = list(event.config.get("files") or [])
        self.candidates = int(event.config.get("candidates") or 1)
        self.iterations[0] = IterationView(n=0, status="verifying", started=event.ts)

    def _update(self, it: IterationView, event: ev.BaseEvent) -> None:
        from engine.run import events as ev

        if starts_stream(event, it):
            it.model_text = ""
        if isinstance(event, ev.ModelRequested):
            it.status, it.retry = "asking", ""
            state = "together" if event.together > 1 else "asked"
            it.streams[event.candidate] = StreamView(event.prompt_tokens, state=state)
            if starts_stream(event):
                it.shown = event.candidate
            if line := sampled_line(event) or together_line(event):
                it.levers.append(line)
        elif isinstance(event, ev.ModelRetrying):
            it.retry = event.said
        elif isinstance(event, ev.ModelResponded):  # an iteration may ask more than once
            it.status, it.retry = "answered", ""
            done = it.streams.setdefault(event.candidate, StreamView())
            done.tokens, done.state = event.completion_tokens, "done"  # the server's count
            it.tokens += event.prompt_tokens + event.completion_tokens
            it.cost_usd += event.cost_usd
            self.tokens = sum(i.tokens for i in self.iterations.values())
            self.cost_usd = sum(i.cost_usd for i in self.iterations.values())
        elif isinstance(event, ev.ModelGivenUp):  # its prompt was read: spent all the same
            it.streams.setdefault(event.candidate, StreamView()).state = "given up"
            it.tokens += event.prompt_tokens
            self.tokens = sum(i.tokens for i in self.iterations.values())
        elif isinstance(event, ev.ProposalReady):
            it.explanation = event.explanation
            it.files = list(event.files)
            if event.format_error:
                it.status, it.format_error = "format_error", event.format_error
        elif isinstance(event, ev.ReviewRequested):
            it.status = "review" if event.kind == "proposal" else "pass review"
            if event.kind == "pass":
                it.pass_reasons = list(event.reasons)
        elif isinstance(event, ev.ReviewResolved):
            it.decision = event.decision
            it.comment = event.comment.strip() or it.comment
            if event.kind == "proposal":
                after = {"abort": "aborted", "reject": "rejected"}
                it.status = after.get(event.decision, "applying")
            else:
                it.status = "accepted" if event.decision == "accept" else "suspicious_pass"
        elif isinstance(event, ev.EditsApplied):
            it.files, it.held_back = list(event.files), list(event.held_back)
            if event.held_back:  # named where it happens, in the history's lines
                it.levers.append(held_back_line(event.held_back))
            if not event.files:
                it.status = "no_change"
                it.unchanged = held_back_line(event.held_back) if event.held_back else event.because
        elif isinstance(event, ev.Committed):
            it.commit = event.sha
        elif isinstance(event, ev.StageStarted):
            it.status = "verifying"
            it.stages = [s for s in it.stages if s.name != event.stage]
            it.stages.append(StageView(name=event.stage, cmd=event.cmd))
        elif isinstance(event, ev.StageFinished):
            self._stage_finished(it, event)
        elif isinstance(event, ev.PacketReady):
            it.status = event.verdict
            it.tests = dict(event.tests) if event.tests else None
            it.error_class = event.error_class
        elif isinstance(event, ev.GuardTripped):
            it.guard = f"{event.guard}: {event.detail}"
        else:
            self._lever_update(it, event)
            self._spec_update(it, event)

    def _lever_update(self, it: IterationView, event: ev.BaseEvent) -> None:
        """The strategy's moves: a re-asked answer, the candidates, a change of strategy."""
        from engine.run import events as ev

        if isinstance(event, ev.AnswerReasked):
            it.levers.append(reasked_line(event))
        elif isinstance(event, ev.CandidateVerified):
            it.candidates += 1
            it.candidate_fate[event.k] = (
                f"dropped: {event.dropped}" if event.dropped else event.verdict.replace("_", " ")
            )
            stream = it.streams.get(event.k)
            if stream is not None and stream.pending:  # the model gave it no answer
                stream.state = "failed"
            if event.dropped:  # said in the history, and in the candidates modal under the rest
                it.dropped.append(verified_line(event))
                it.levers.append(it.dropped[-1])
            if it.candidates >= self.candidates:
                it.status = "candidates"  # all in: one is being chosen
        elif isinstance(event, ev.CandidateChosen):
            it.status = "applying"
            it.chosen = event.k
            it.levers.append(chosen_line(event, it.candidates))
        elif isinstance(event, ev.Formatted):
            if line := formatted_line(event):
                it.levers.append(line)
        elif isinstance(event, ev.PersonNoted):  # the person's own words, marked as theirs
            it.levers.append(f"you: {event.text}")
            if event.text in self.waiting:
                self.waiting.remove(event.text)
        elif isinstance(event, ev.FilesShown):
            said = [f"+{path}" for path in event.added] + [f"-{path}" for path in event.dropped]
            it.levers.append(f"you: files {' '.join(said)}")
        elif isinstance(event, ev.StrategyChanged):
            it.levers.append(strategy_line(event))
            if event.kind == "escalate" and event.model:
                self.model = event.model  # the header names the model answering now

    def _spec_update(self, it: IterationView, event: ev.BaseEvent) -> None:
        """Spec mode's own events: the examples written, refused test edits, references."""
        from engine.run import events as ev

        if isinstance(event, ev.SpecPrepared):
            it.status = "spec"
            it.explanation = (
                f"spec {event.name}: {event.examples} examples are tests in "
                f"{event.examples_file}; the model writes {event.module} and {event.tests}"
            )
            it.files = [event.examples_file]
        elif isinstance(event, ev.TestEditsRefused):
            it.held_back = sorted({*it.held_back, *event.files})
        elif isinstance(event, ev.ReferencesChecked) and event.problems:
            it.status = it.error_class = "reference_error"
            it.format_error = "; ".join(event.problems)

    def _stage_finished(self, it: IterationView, event: ev.StageFinished) -> None:
        stage = next((s for s in it.stages if s.name == event.stage), None)
        if stage is None:
            stage = StageView(name=event.stage, cmd="")
            it.stages.append(stage)
        stage.exit_code = event.exit_code
        stage.duration_ms = event.duration_ms
        stage.timed_out = event.timed_out
        stage.oom_killed = event.oom_killed

    def _close_streams(self) -> None:
        """An answer still written when a new iteration starts, or the run stops, failed or
        was cut off: it no longer counts as being spent."""
        for it in self.iterations.values():
            for stream in it.streams.values():
                if stream.pending:
                    stream.state = "failed"

    def _close_unfinished(self) -> None:
        """An approved proposal whose edits did not apply leaves no event of its own."""
        for it in self.iterations.values():
            if it.status == "applying":
                it.status = "format_error"
                it.format_error = it.format_error or "the approved edits did not apply"

    def _stopped(self, event: ev.RunStopped) -> None:
        """Stopped to be resumed: not an ending, but nothing runs any more."""
        self.status, self.reason = "stopped", event.reason or "stopped by you"
        self._close_streams()  # a resumed run asks them anew
        for it in self.iterations.values():
            if it.in_progress:
                it.status, it.ended = "stopped", event.ts

    def resumed(self) -> None:
        """Taken up again after a stop: live once more (its stopped iteration stays as it
        was; the resumed run asks or verifies it anew)."""
        if self.status == "stopped":
            self.status, self.reason = "", ""

    def _finished(self, event: ev.RunFinished) -> None:
        self.status = event.status
        self.reason = event.reason
        self.final_commit = event.final_commit
        self.tokens = event.tokens
        self.cost_usd = event.cost_usd
        self.duration_s = event.duration_s
        for it in self.iterations.values():
            if it.in_progress:
                it.status = "aborted" if event.status == "aborted" else "stopped"
                it.ended = event.ts


def starts_stream(event: ev.BaseEvent, it: IterationView | None = None) -> bool:
    """Whether the answer shown as it streams starts anew with `event`: a first answer (the
    model tab shows candidate 1; the others may be asked later), a re-asked one, or a retry
    of a streamed request while `it` (the iteration) waits for no other answer (a retry does
    not say whose it is: with candidates being written it may be any one's)."""
    from engine.run import events as ev

    if isinstance(event, ev.ModelRequested):
        return event.candidate <= 1
    if isinstance(event, ev.ModelRetrying):
        return event.streamed and (it is None or len(it.writing) <= 1)
    return isinstance(event, ev.AnswerReasked)
