"""From a prompt to the answer an iteration applies (ARCHITECTURE.md, "One iteration, step by
step", steps 1-4): the mode's prompt (`RunMode`; `RepairMode` here, `SpecMode` in spec_mode.py),
the model asked once, once more when its answer would change nothing (`noop_retry`), or for N
candidates at once (`candidates`); the answer parsed by the mode, reviewed at the gate (or
chosen among the verified candidates) and screened by the mode's test rules."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence, Set
from dataclasses import replace
from pathlib import Path
from typing import Protocol

from engine.edits.apply import dropped_definitions
from engine.edits.parse import parse
from engine.edits.proposal import EditFormat, Proposal
from engine.errors import EditFormatError, ModelError
from engine.feedback import context, prompts
from engine.feedback.excerpt_answers import answer_for_excerpts
from engine.feedback.small_prompt import small_prompt
from engine.feedback.tree import Verification
from engine.model.types import Completion, Message, ModelClient
from engine.project.pins import pinned_why
from engine.project.strategy import DEFAULT_STRATEGY, Strategy
from engine.project.workspace import Workspace
from engine.run.candidates import Candidate, Candidates, Request, Sampled
from engine.run.checker import IterationChecker
from engine.run.events import (
    AnswerReasked,
    Event,
    ModelRequested,
    ProposalReady,
    ReviewRequested,
)
from engine.run.gate import (
    Choice,
    Gate,
    Review,
    TestEditSplit,
    apply_pinning,
    held_back_note,
    partly_applied_note,
    rejected_candidates_note,
    rejected_proposal_note,
    reviewer_note,
    split_test_edits,
)
from engine.run.guards import RunEnded, RunStatus, Spend
from engine.run.journal import Journal
from engine.run.no_change import (
    NO_FILE,
    ONLY_HELD_BACK,
    Noop,
    runs_doctests,
    unchanged_because,
    wording,
)
from engine.run.outcome import RunConfig
from engine.run.ranking import best_choice
from engine.run.steps import Answer, Steps
from engine.run.streaming import OnPiece, streamed_to
from engine.text.tokens import count_tokens
from engine.verify.results import StageResult
from engine.verify.verdict import Verdict

# An answer that changed nothing is asked for once more, sampled: the greedy answer to the same
# prompt would most likely be the same file again.
REASK_TEMPERATURE = 0.7
# With `sample_after_noop`, a later iteration's first answer is sampled from this seed plus the
# iteration's number: apart from the re-asks' seeds (the iteration's number alone).
SAMPLED_FIRST_SEED = 100
ECHOED = "an earlier answer changed nothing"  # why a first answer is sampled


def unchanged_note(files: Sequence[str], because: str = NO_FILE) -> str:
    """The one line a re-asked model hears; `because`: `unchanged_because`'s reason."""
    sent = ", ".join(files) if files else "nothing"
    said = wording(because).reasked
    if because == ONLY_HELD_BACK:
        return f"Your last answer {said}. Find the bug in the code and send the file with it fixed."
    return (
        f"Your last answer {said} ({sent} came back with the same code). "
        "Find the bug and send the file with it fixed."
    )


def noop_rule(config: RunConfig, current: Verification) -> Noop:
    """What an answer may change and still change nothing, this iteration: docstrings only
    with `docs_noop` where the project runs no doctests (its doctests test them)."""
    if config.strategy.docs_noop and not runs_doctests(current):
        return "docs"
    return "code" if config.strategy.code_noop else "lines"


class Answers:
    """Asks the model and turns what it says into the iteration's `Answer`."""

    def __init__(
        self,
        config: RunConfig,
        model: ModelClient,
        workspace: Workspace,
        gate: Gate,
        journal: Journal,
        mode: RunMode,
        checker: IterationChecker,
        spend: Spend,
        on_text: OnPiece | None,
        after_ask: Callable[[int], None],
    ) -> None:
        self.config, self.model, self.workspace, self.gate = config, model, workspace, gate
        self.journal, self.mode, self.checker, self.spend = journal, mode, checker, spend
        self.on_text, self.after_ask = on_text, after_ask  # after_ask: the budget guard
        self.candidates = Candidates(config, workspace, journal, mode.parse, self.verify_candidate)
        self.previous: Verification | None = None
        self.noop_seen = False  # an answer of this model changed nothing (`sample_after_noop`)
        self.noop: Noop = "lines"  # what changes nothing in this iteration's answers
        self.shown: list[str] = []  # the files the person added: in every prompt (talk.py)

    async def answer(self, steps: Steps, current: Verification, notes: list[str]) -> Answer:
        """The iteration's answer, from the prompt built on `current` and `notes`."""
        n = steps.n
        self.noop = noop_rule(self.config, current)
        messages = self.prompt(n, current, notes)
        if self.config.candidates > 1 and self.config.spec is None:
            self.previous = current
            return await self.choose(steps, messages, current, notes)
        completion = await self.first_ask(steps, messages)
        answer = await self.review(n, completion.text, reask=self.config.strategy.noop_retry)
        self.noop_seen = self.noop_seen or bool(answer.unchanged)
        if not answer.unchanged or not self.config.strategy.noop_retry:
            return answer
        self.journal.text(n, "unchanged-response.txt", completion.text)
        again = await self.reask(steps, current, notes, answer.proposal, answer.unchanged)
        answer = await self.review(n, (again or completion).text, reask=False)
        # Both answers changed nothing: two in a row for the stall guard, not one. A re-ask
        # whose request failed is no answer: the first one stands, one idle answer.
        return replace(answer, idle_answers=2) if answer.unchanged and again else answer

    async def reask(
        self,
        steps: Steps,
        current: Verification,
        notes: list[str],
        proposal: Proposal | None,
        reason: str,
        candidate: int = 0,
    ) -> Completion | None:
        """The model told in one line that its answer changed nothing (or only docstrings,
        `docs_noop`: `reason` says which) and asked once more, sampled; None if that request
        failed (the answer before stands). `candidate`: the number the re-asked answer takes
        after an iteration's candidates (`reask_candidates`)."""
        n = steps.n
        files = [edit.path for edit in proposal.edits] if proposal else []
        self.journal.emit(AnswerReasked(n=n, reason=reason, temperature=REASK_TEMPERATURE))
        notes = [*notes, unchanged_note(files, reason)]
        messages = self.prompt(n, current, notes, trail="reask-prompt.json")
        try:
            # Seeded by the iteration: a rerun asks the same, and each iteration differs.
            return await self.ask(
                steps, messages, temperature=REASK_TEMPERATURE, seed=n, candidate=candidate
            )
        except ModelError as exc:  # the sampled retry failed
            self.journal.text(n, "reask-error.txt", str(exc))
            return None

    def sampled_first(self, n: int) -> Sampled | None:
        """How iteration n's first answer is sampled, or None for greedy: with
        `sample_after_noop`, sampled once this model has sent back an unchanged first answer
        (its greedy answers then mostly repeat that), on either path."""
        if self.config.strategy.sample_after_noop and self.noop_seen:
            return Sampled(REASK_TEMPERATURE, SAMPLED_FIRST_SEED + n, ECHOED)
        return None

    async def first_ask(self, steps: Steps, messages: Sequence[Message]) -> Completion:
        """The iteration's first answer, greedy or sampled (`sampled_first`)."""
        if sampled := self.sampled_first(steps.n):
            return await self.ask(
                steps,
                messages,
                temperature=sampled.temperature,
                seed=sampled.seed,
                because=sampled.because,
            )
        return await self.ask(steps, messages)

    def prompt(
        self, n: int, current: Verification, notes: list[str], trail: str = "prompt.json"
    ) -> list[Message]:
        """The messages of a request, in the iteration's trail as `trail` (a re-ask's apart
        from the first answer's, which it would otherwise overwrite)."""
        messages = self.mode.messages(current, notes, self.shown)
        self.journal.prompt(n, messages, trail)
        return messages

    def tokens(self, messages: Sequence[Message]) -> int:
        return sum(count_tokens(m.content, self.config.model) for m in messages)

    async def ask(
        self,
        steps: Steps,
        messages: Sequence[Message],
        temperature: float | None = None,
        seed: int | None = None,
        because: str = "",
        candidate: int = 0,
    ) -> Completion:
        """One answer; `because` says why a first answer is sampled (`sample_after_noop`);
        `candidate`, its number among the iteration's candidates (0: the only answer)."""
        n, model = steps.n, self.model
        requested = ModelRequested(
            n=n,
            model=model.model,
            prompt_tokens=self.tokens(messages),
            candidate=candidate,
            temperature=temperature,
            sampled_because=because,
        )
        self.journal.emit(requested)
        on_text = streamed_to(self.on_text, n, candidate, model.model)
        completion = await model.complete(
            messages, on_text=on_text, temperature=temperature, seed=seed
        )
        self.spent(steps, [completion], completion.duration_s)
        self.journal.responded(n, completion, candidate=candidate or None)
        return completion

    def spent(self, steps: Steps, completions: Sequence[Completion], model_s: float) -> None:
        for completion in completions:
            self.spend.tokens += completion.usage.prompt_tokens + completion.usage.completion_tokens
            self.spend.cost_usd += completion.usage.cost_usd
        steps.completions += completions
        steps.model_s += model_s
        self.after_ask(steps.n)

    async def review(self, n: int, text: str, *, reask: bool = False) -> Answer:
        """The answer parsed, reviewed at the gate, and screened by the mode's test rules. An
        answer that would change no file's code comes back `unchanged`, never reviewed or
        applied: with `reask` silently (it is asked again), else as a proposal of nothing."""
        try:
            proposal = self.mode.parse(text)
        except EditFormatError as exc:
            return self.unusable(n, exc)
        workspace, emit = self.workspace, self.journal.emit
        split = split_test_edits(proposal, workspace.pins, workspace.root)
        explanation = proposal.explanation
        unchanged = unchanged_because(proposal, workspace.root, noop=self.noop)
        if unchanged and reask:
            return Answer(explanation, proposal=proposal, unchanged=unchanged)
        emit(ProposalReady(n=n, explanation=explanation, files=[e.path for e in proposal.edits]))
        if unchanged:  # blank lines or spaces moved at most: nothing to review or verify
            return Answer(explanation, proposal=proposal, unchanged=unchanged)
        reasons = [f"changes {pinned_why(path)}" for path in split.held_back]
        emit(ReviewRequested(n=n, kind="proposal", reasons=reasons))
        review = await self.gate.review(n, proposal, split.held_back)
        emit(review.resolved(n))
        if review.decision == "abort":
            ending = RunEnded(RunStatus.ABORTED, review.note or "the proposal was rejected")
            return Answer(explanation, ending=ending)
        if review.decision == "reject":
            said = rejected_proposal_note([e.path for e in proposal.edits], review.comment)
            return Answer(explanation, rejected=said, comment=review.comment)
        try:
            kept, held_back = self.mode.screen(n, proposal, split, review)
        except EditFormatError as exc:
            return self.unusable(n, exc, explanation)
        edits: dict[str, object] = {"proposal": proposal.model_dump(), "held_back": held_back}
        self.journal.json(n, "edits.json", edits)
        notes = self.notes(held_back, review.comment, review.dropped)
        return Answer(explanation, kept, held_back, notes, comment=review.comment)

    def notes(self, held_back: list[str], comment: str, dropped: Sequence[str] = ()) -> list[str]:
        """What the next prompt says of an applied answer: held-back files, the person's words
        (with the hunks they dropped, when they kept only part of it)."""
        notes = [self.mode.held_back_note(held_back)] if held_back else []
        if dropped:
            return [*notes, partly_applied_note(list(dropped), comment)]
        return notes + ([reviewer_note(comment)] if comment.strip() else [])

    def unusable(self, n: int, exc: EditFormatError, explanation: str = "") -> Answer:
        self.journal.emit(ProposalReady(n=n, format_error=str(exc)))
        return Answer(explanation, unusable=exc)

    # -- candidates --------------------------------------------------------------------------

    async def choose(
        self, steps: Steps, messages: Sequence[Message], current: Verification, notes: list[str]
    ) -> Answer:
        """N answers, the usable ones verified side by side, one chosen at the gate; with
        `reask_candidates`, when none could be verified and one changed nothing, the model is
        told so and asked once more, that answer candidate N + 1."""
        n = steps.n
        started = time.monotonic()
        tokens = self.tokens(messages)
        request = Request(n, self.model, messages, tokens, self.on_text, self.sampled_first(n))
        if self.gate.approval == "auto":  # nobody compares them: the first ok will do
            raced = await self.candidates.first_ok(request, noop=self.noop)
            # A request given up on (`ModelGivenUp`): its prompt was read all the same.
            self.spend.tokens += raced.given_up * tokens
            self.spent(steps, raced.answered, raced.asked_s)
            every = raced.candidates
        else:
            completions = await self.candidates.ask(request)
            answered = [c for c in completions if isinstance(c, Completion)]
            self.spent(steps, answered, time.monotonic() - started)
            every = await self.candidates.run(n, completions, noop=self.noop)
        self.noop_seen = self.noop_seen or any(c.unchanged for c in every if c.k == 1)
        best = best_choice(every)
        echo = next((c for c in every if c.unchanged), None)
        if best is None and echo is not None and self.config.strategy.reask_candidates:
            k = len(every) + 1
            again = await self.reask(steps, current, notes, echo.proposal, echo.unchanged, k)
            if again is not None:
                every = [*every, *await self.candidates.run(n, [again], noop=self.noop, first=k)]
                best = best_choice(every)
                if best is None:  # the re-asked answer could not be verified either
                    answer = self.none_verified(n, every)
                    return replace(answer, idle_answers=2) if answer.unchanged else answer
        if best is None:
            return self.none_verified(n, every)
        views = [c.view() for c in every if c.verification is not None]
        choice = await self.gate.choose(n, views, best)
        if choice.decision == "reject":  # none of them: asked again, as after a rejected review
            self.journal.emit(choice.rejected(n))
            said = rejected_candidates_note(len(views), choice.comment)
            return Answer("", rejected=said, comment=choice.comment)
        self.journal.emit(choice.chosen(n))
        return self.chosen(n, choice, {c.k: c for c in every})

    def chosen(self, n: int, choice: Choice, by_k: dict[int, Candidate]) -> Answer:
        if choice.decision == "abort":
            return Answer(ending=RunEnded(RunStatus.ABORTED, choice.why or "aborted by you"))
        candidate = by_k[choice.k]
        proposal = choice.proposal if choice.decision == "edit" else candidate.proposal
        assert proposal is not None
        files = [edit.path for edit in proposal.edits]
        self.journal.emit(ProposalReady(n=n, explanation=proposal.explanation, files=files))
        held = candidate.held_back if choice.decision == "pick" else []
        edits: dict[str, object] = {
            "proposal": proposal.model_dump(),
            "held_back": held,
            "candidate": choice.k,
        }
        self.journal.json(n, "edits.json", edits)
        verification = candidate.verification if choice.decision == "pick" else None
        if verification is not None and verification.judgement.verdict is Verdict.ENV_FAILURE:
            verification = None  # verified again, in case it was a fluke
        return Answer(
            proposal.explanation,
            proposal,
            held,
            self.notes(held, choice.comment, choice.dropped),
            comment=choice.comment,
            verified=verification,
        )

    def none_verified(self, n: int, every: Sequence[Candidate]) -> Answer:
        """No candidate could be verified: one that changes nothing takes the no-change path
        (never applied: a docstring-only one would otherwise be committed), else the first
        unusable answer's problem is what the model hears."""
        for candidate in every:
            if candidate.proposal is not None and candidate.problem is None:
                notes = self.notes(candidate.held_back, "")
                return Answer(
                    "",
                    candidate.proposal,
                    candidate.held_back,
                    notes,
                    unchanged=candidate.unchanged or NO_FILE,
                )
        problem = next(c.problem for c in every if c.problem is not None)
        return self.unusable(n, problem)

    async def verify_candidate(
        self, n: int, tree: Path, touched: list[str], diff: str, k: int
    ) -> Verification:
        previous = self.previous.stages if self.previous is not None else None
        return await self.checker.verify(
            n,
            touched,
            diff,
            list(previous) if previous is not None else None,
            tree=tree,
            on_stage=self.journal.candidate_stage(n, k),
        )


class RunMode(Protocol):
    """The loop asks; the mode answers. An ending is raised as `RunEnded`; an unusable
    answer as `EditFormatError` (its message is told to the model)."""

    async def begin(self, checker: IterationChecker) -> Verification:
        """Where a new run starts: what the first prompt is built from."""
        ...

    def restore(self, events: Sequence[Event]) -> None:
        """A resumed run's mode state, from its events."""
        ...

    def messages(
        self, current: Verification, notes: Sequence[str], added: Sequence[str] = ()
    ) -> list[Message]:
        """The prompt built on `current` with `notes`, showing the files the person added
        (`added`: engine/run/talk.py) beside the run's named ones."""
        ...

    def parse(self, text: str) -> Proposal: ...

    def screen(
        self, n: int, proposal: Proposal, split: TestEditSplit, review: Review
    ) -> tuple[Proposal, list[str]]:
        """(what to apply, the pinned test files held back), after the gate's review."""
        ...

    def held_back_note(self, held: Sequence[str]) -> str:
        """For the next packet, when the rest of the proposal was applied."""
        ...

    def committed(self, n: int, commit: str) -> None: ...

    def restorable(self, paths: Sequence[str]) -> list[str]:
        """Which of a rejected pass's doubtful test files go back to their baseline content."""
        ...

    def check_before_verify(
        self, n: int, previous: Sequence[StageResult] = ()
    ) -> Verification | None:
        """A verification that stands in for the sandbox run, or None to run it."""
        ...


class RepairMode:
    """A project that is red: verify it first, then repair it; pinned tests are held back."""

    def __init__(self, config: RunConfig, workspace: Workspace) -> None:
        self.config = config
        self.workspace = workspace
        self.asked_for: list[str] = []  # the files the last prompt let the model change
        self.excerpts: list[str] = []  # the files it showed only in excerpts

    async def begin(self, checker: IterationChecker) -> Verification:
        return await checker.baseline()

    def restore(self, events: Sequence[Event]) -> None:
        return None

    def messages(
        self, current: Verification, notes: Sequence[str], added: Sequence[str] = ()
    ) -> list[Message]:
        config = self.config
        named = list(dict.fromkeys([*config.files, *added]))
        if config.strategy.prompt_profile == "small":
            prompt: prompts.Prompt = small_prompt(
                self.workspace.root,
                current.packet,
                current.packet_text,
                config.task,
                named,
                config.edit_format,
                notes,
                strategy=config.strategy,
            )
        else:
            prompt = repair_prompt(
                self.workspace.root,
                current,
                notes,
                config.task,
                named,
                config.edit_format,
                strategy=config.strategy,
                window=context.prompt_budget(config.model),
            )
        self.asked_for, self.excerpts = prompt.reply_paths, prompt.excerpts
        return prompt.messages

    def parse(self, text: str) -> Proposal:
        sole = lone_block_file(self.asked_for, self.config.files)
        proposal = parse(text, self.config.edit_format, lone_block_path=sole)
        proposal = answer_for_excerpts(proposal, self.workspace.root, self.excerpts)
        # A shortened copy of a pinned test file is held back anyway: no reason to refuse
        # the fix that came with it.
        held = set() if self.config.allow_test_edits else set(self.workspace.pins.files)
        refuse_dropped_definitions(proposal, self.workspace.root, exempt=held)
        return proposal

    def screen(
        self, n: int, proposal: Proposal, split: TestEditSplit, review: Review
    ) -> tuple[Proposal, list[str]]:
        if review.decision == "edit" and review.proposal is not None:
            return review.proposal, []  # the person's own edit is applied as written
        allowed = self.config.allow_test_edits or review.allow_test_edits
        return apply_pinning(proposal, split, allowed=allowed)

    def held_back_note(self, held: Sequence[str]) -> str:
        return held_back_note(list(held))

    def committed(self, n: int, commit: str) -> None:
        return None

    def restorable(self, paths: Sequence[str]) -> list[str]:
        return list(paths)  # the baseline's tests are the evidence: put them back

    def check_before_verify(
        self, n: int, previous: Sequence[StageResult] = ()
    ) -> Verification | None:
        return None


def repair_prompt(
    root: Path,
    current: Verification,
    notes: Sequence[str],
    task: str,
    named: Sequence[str],
    edit_format: EditFormat,
    shown: Callable[[list[str]], list[str]] = list,
    *,
    strategy: Strategy = DEFAULT_STRATEGY,
    window: int | None = None,
) -> prompts.Prompt:
    """A repair prompt: the task, the files the packet points at (those `shown` keeps), the
    packet (or the raw feedback in its place), and the notes. With packet feedback also the
    definitions the failure calls (with `repeat_called` even those whose whole file is shown,
    else only those cut to excerpts or left out; with `called_code` without their
    docstrings), and with `test_focus` test files cut to their failing tests; raw feedback
    shows them whole, as a naive loop would. With `code_last` the code to fix comes after the
    packet. The strategy's `context` says how a large file is cut; the whole prompt holds at
    most `window` tokens (engine/feedback/context.py)."""
    paths = shown(prompts.relevant_paths(root, current.packet, named=list(named)))
    return context.repair_prompt(
        root,
        current.packet,
        current.packet_text,
        paths,
        task,
        notes,
        edit_format,
        strategy,
        window,
    )


def lone_block_file(shown: Sequence[str], named: Sequence[str]) -> str | None:
    """The file an answer's lone block without its path line (or its unfenced code) is taken
    for: the one file the prompt showed the model to change, or, when it showed more (a
    helper the tests import), the one the person named. A small model often leaves the path
    out: read so, 6 of the 12 unusable answers of the bench's defaults (table layout, 40
    tasks) are proposals (bench/replay_unusable.py)."""
    if len(shown) == 1:
        return shown[0]
    named_shown = [path for path in dict.fromkeys(named) if path in shown]
    return named_shown[0] if len(named_shown) == 1 else None


def refuse_dropped_definitions(
    proposal: Proposal, root: Path, exempt: Set[str] = frozenset()
) -> None:
    """A whole-file answer that silently drops definitions is unusable (small models send
    back a shortened file), whichever format was asked for (a JSON run reads whole files
    too); edits to `exempt` files (held back anyway) are not looked at."""
    if proposal.format == "whole":
        looked_at = [edit for edit in proposal.edits if edit.path not in exempt]
        lost = dropped_definitions(proposal.model_copy(update={"edits": looked_at}), root)
        if lost:
            raise EditFormatError(lost, "None of your edits were applied.")
