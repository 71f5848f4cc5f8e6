"""What happens during a run, as events (ARCHITECTURE.md, "Events and the audit trail"): the
audit log, the headless printer and the TUI consume them; the loop only emits. Each has a
`type` field, so `events.jsonl` parses back into the same classes (`parse_event`)."""

from __future__ import annotations

import time
from typing import Annotated, Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter


class BaseEvent(BaseModel):
    model_config = ConfigDict(frozen=True)

    ts: float = Field(default_factory=time.time)
    run_id: str = ""


class RunStarted(BaseEvent):
    type: Literal["RunStarted"] = "RunStarted"
    task: str
    project: str
    model: str
    sandbox: str
    mode: str = "auto"
    max_iterations: int
    branch: str = ""
    baseline: str = ""
    config: dict[str, Any] = Field(default_factory=dict)
    versions: dict[str, str] = Field(default_factory=dict)


class IterationStarted(BaseEvent):
    type: Literal["IterationStarted"] = "IterationStarted"
    n: int
    max_n: int


class ModelRequested(BaseEvent):
    type: Literal["ModelRequested"] = "ModelRequested"
    n: int
    model: str
    prompt_tokens: int = 0
    candidate: int = 0  # which of the iteration's candidates, from 1 (0: not one of several)
    temperature: float | None = None  # None: the client's own (greedy)
    # A first answer sampled rather than greedy, and why (`sample_after_noop`); "" otherwise.
    sampled_because: str = ""
    # How many candidates the request asks for at once (a provider's `n`, so that their
    # prompt is sent once); 1: this answer's own request.
    together: int = 1


class ModelGivenUp(BaseEvent):
    """A candidate's request cancelled before it answered: another candidate verified ok
    first and nobody compares them (`Candidates.first_ok`). Its prompt, estimated, was read
    by the model and counts as spent, like an answer's."""

    type: Literal["ModelGivenUp"] = "ModelGivenUp"
    n: int
    candidate: int
    prompt_tokens: int = 0


class ModelResponded(BaseEvent):
    type: Literal["ModelResponded"] = "ModelResponded"
    n: int
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    duration_s: float = 0.0
    finish_reason: str | None = None
    attempts: int = 1
    candidate: int = 0


class AnswerStreamed(BaseModel):
    """A piece of an answer as it streams in, for a screen: its iteration and candidate, the
    text, and the answer's completion tokens so far (`StreamTokens`). Not an event of the
    trail: pieces come many times a second, and the answer is written whole once it ends
    (`ModelResponded`, whose usage then replaces this count)."""

    model_config = ConfigDict(frozen=True)

    n: int
    candidate: int = 0  # as `ModelRequested.candidate`: 0 for an iteration's only answer
    text: str
    tokens: int  # the answer's completion tokens so far, this piece's included
    seconds: float = 0.0  # since the answer's first piece

    @property
    def per_second(self) -> float | None:
        """Tokens a second since the first piece; None until there is time to measure."""
        return self.tokens / self.seconds if self.seconds >= MEASURED_S else None


# The time an answer streams before its tokens a second are said: a rate over the first few
# pieces is the network's, not the model's.
MEASURED_S = 0.5


class ModelRetrying(BaseEvent):
    """An attempt at the model failed in a way worth another; the next waits `wait_s`."""

    type: Literal["ModelRetrying"] = "ModelRetrying"
    n: int
    attempt: int  # the attempt about to be made: 2 is the first retry
    max_attempts: int
    wait_s: float
    reason: str  # a few words: "connection refused", "HTTP 503 Service Unavailable"
    # The retried request streams its text: the app starts that text anew. False for the
    # candidates sampled beside it, whose retry must not wipe the first answer's text.
    streamed: bool = True

    @property
    def said(self) -> str:
        """In the user's words, for the header and the headless printer:
        "the model did not answer (connection refused): retry 2/4 in 3 s"."""
        wait = f"{self.wait_s:.0f}" if self.wait_s >= 1 else f"{self.wait_s:.1f}"
        return (
            f"the model did not answer ({self.reason}):"
            f" retry {self.attempt}/{self.max_attempts} in {wait} s"
        )


class ProposalReady(BaseEvent):
    type: Literal["ProposalReady"] = "ProposalReady"
    n: int
    explanation: str = ""
    files: list[str] = Field(default_factory=list)
    format_error: str | None = None


class AnswerReasked(BaseEvent):
    """The answer changed nothing: the model is told so and asked once more, in the same
    iteration, at a higher temperature (`noop_retry`)."""

    type: Literal["AnswerReasked"] = "AnswerReasked"
    n: int
    reason: str
    temperature: float


class CandidateVerified(BaseEvent):
    """One of an iteration's candidates: verified on its own scratch copy of the worktree, or
    `dropped` (unusable, no change, a duplicate) before any sandbox ran."""

    type: Literal["CandidateVerified"] = "CandidateVerified"
    n: int
    k: int
    verdict: str = ""
    tests: dict[str, int] | None = None
    files: list[str] = Field(default_factory=list)
    diff_lines: int = 0
    summary: str = ""
    dropped: str = ""  # why it was not verified
    unchanged: bool = False  # dropped as changing no code (`sample_after_noop` reads it)


class CandidateChosen(BaseEvent):
    """Which candidate the iteration commits, and why (the ranking, or the person)."""

    type: Literal["CandidateChosen"] = "CandidateChosen"
    n: int
    k: int
    why: str
    by: Literal["person", "policy"] = "policy"
    dropped: list[str] = Field(default_factory=list)  # hunks left out of an edited candidate


class StrategyChanged(BaseEvent):
    """A stall changed the approach: `restart` goes back to the baseline and asks for the wrong
    assumption first; `escalate` hands the run to `model`."""

    type: Literal["StrategyChanged"] = "StrategyChanged"
    n: int
    kind: Literal["restart", "escalate"]
    reason: str
    model: str = ""
    # Whether it used the run's one change of approach: a restart with nothing to put back
    # under `keep_asking` does not.
    spent: bool = True


class ReviewRequested(BaseEvent):
    type: Literal["ReviewRequested"] = "ReviewRequested"
    n: int
    kind: Literal["proposal", "pass"]
    reasons: list[str] = Field(default_factory=list)


class PersonNoted(BaseEvent):
    """A note the person typed while the run went on, as it went into iteration n's prompt
    (the first prompt built after it was typed)."""

    type: Literal["PersonNoted"] = "PersonNoted"
    n: int
    text: str


class FilesShown(BaseEvent):
    """The person added or dropped files (the app's picker) before iteration n's prompt;
    `shown`: every file the person added that this and later prompts show."""

    type: Literal["FilesShown"] = "FilesShown"
    n: int
    added: list[str] = Field(default_factory=list)
    dropped: list[str] = Field(default_factory=list)
    shown: list[str] = Field(default_factory=list)


class ReviewResolved(BaseEvent):
    type: Literal["ReviewResolved"] = "ReviewResolved"
    n: int
    kind: Literal["proposal", "pass"]
    decision: Literal["approve", "edit", "abort", "accept", "reject"]
    by: Literal["person", "policy"] = "policy"
    note: str = ""
    comment: str = ""  # what the person told the model with the decision
    dropped: list[str] = Field(default_factory=list)  # hunks left out of an edited proposal


class EditsApplied(BaseEvent):
    type: Literal["EditsApplied"] = "EditsApplied"
    n: int
    files: list[str] = Field(default_factory=list)
    held_back: list[str] = Field(default_factory=list)
    # Nothing written: the answer sent the code back as it was, or changed only pinned test
    # files (`because` says which)
    unchanged: bool = False
    because: str = ""  # why it counts as unchanged: no file, or no code (`code_noop`, `docs_noop`)


class Committed(BaseEvent):
    type: Literal["Committed"] = "Committed"
    n: int
    sha: str
    message: str


class Formatted(BaseEvent):
    """The fix pass (`fix_cmd`) ran before a verification: the files it changed (committed
    on their own as `commit`), the pinned test files it would have changed (not applied),
    and whether it failed (then nothing was applied)."""

    type: Literal["Formatted"] = "Formatted"
    n: int
    files: list[str] = Field(default_factory=list)
    held_back: list[str] = Field(default_factory=list)
    refused: list[str] = Field(default_factory=list)
    truncated: bool = False
    failed: bool = False
    commit: str | None = None


class StageStarted(BaseEvent):
    type: Literal["StageStarted"] = "StageStarted"
    n: int
    stage: str
    cmd: str


class StageFinished(BaseEvent):
    type: Literal["StageFinished"] = "StageFinished"
    n: int
    stage: str
    exit_code: int
    duration_ms: int
    timed_out: bool = False
    oom_killed: bool = False


class PacketReady(BaseEvent):
    type: Literal["PacketReady"] = "PacketReady"
    n: int
    verdict: str
    error_class: str
    signature: str = ""
    tokens: int = 0
    tests: dict[str, int] | None = None
    new_tests: int = 0  # tests the model added: listed, never evidence on their own


class SpecPrepared(BaseEvent):
    """Spec mode began: the spec's examples were written as tests and committed."""

    type: Literal["SpecPrepared"] = "SpecPrepared"
    n: int = 0
    name: str
    module: str
    tests: str
    examples_file: str
    examples: int
    constraints: int
    commit: str


class TestsLatched(BaseEvent):
    """Test files frozen (spec mode): later edits to them are refused. `files` maps each newly
    frozen (or, with the person's approval, re-frozen) file to its content's sha256."""

    __test__ = False
    type: Literal["TestsLatched"] = "TestsLatched"
    n: int
    files: dict[str, str]
    reason: str = ""


class TestEditsRefused(BaseEvent):
    """Edits to frozen test files that were not applied (spec mode)."""

    __test__ = False
    type: Literal["TestEditsRefused"] = "TestEditsRefused"
    n: int
    files: list[str]
    reason: str = ""


class ReferencesChecked(BaseEvent):
    """The tests read against the module before running (spec mode); any problem means the
    sandbox was not run for this iteration."""

    type: Literal["ReferencesChecked"] = "ReferencesChecked"
    n: int
    problems: list[str] = Field(default_factory=list)


class GuardTripped(BaseEvent):
    type: Literal["GuardTripped"] = "GuardTripped"
    n: int
    guard: str
    detail: str = ""


class RunStopped(BaseEvent):
    """The person stopped the run to go on later: no RunFinished, `resume` picks it up."""

    type: Literal["RunStopped"] = "RunStopped"
    n: int = 0
    reason: str = ""


class RunResumed(BaseEvent):
    """`resume` took the run up again at iteration `n`, asking `model` (the one it started
    with, or the one `resume --model` named); `endpoint_changed`: `resume --api-base` pointed
    it at another server (its address is the person's own setting, not kept in the trail)."""

    type: Literal["RunResumed"] = "RunResumed"
    n: int = 0
    model: str = ""
    endpoint_changed: bool = False


class RunFinished(BaseEvent):
    type: Literal["RunFinished"] = "RunFinished"
    status: str
    reason: str = ""
    # An ok that rests on a suspicious pass the person accepted: that pass's reasons.
    accepted_suspicious: list[str] = Field(default_factory=list)
    iterations: int = 0
    branch: str = ""
    final_commit: str | None = None
    tokens: int = 0
    cost_usd: float = 0.0
    duration_s: float = 0.0


Event = Annotated[
    RunStarted
    | IterationStarted
    | ModelRequested
    | ModelResponded
    | ModelGivenUp
    | ModelRetrying
    | ProposalReady
    | AnswerReasked
    | CandidateVerified
    | CandidateChosen
    | StrategyChanged
    | ReviewRequested
    | ReviewResolved
    | PersonNoted
    | FilesShown
    | EditsApplied
    | Committed
    | Formatted
    | StageStarted
    | StageFinished
    | PacketReady
    | GuardTripped
    | SpecPrepared
    | TestsLatched
    | TestEditsRefused
    | ReferencesChecked
    | RunStopped
    | RunResumed
    | RunFinished,
    Field(discriminator="type"),
]

EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)


def parse_event(line: str | bytes) -> Event:
    """One line of events.jsonl back into its event class."""
    return EVENT_ADAPTER.validate_json(line)


class EventSink(Protocol):
    """Anything that hears the run's events: the audit log, a printer, the TUI."""

    def emit(self, event: BaseEvent) -> None: ...
