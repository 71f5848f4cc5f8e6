"""An iteration's candidates (`--candidates N`; ARCHITECTURE.md, "Candidates"): N answers asked
at once, the unusable, unchanged and duplicate ones dropped, the rest verified concurrently,
each on its own scratch copy of the run's worktree, ranked, and one chosen at the gate.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from engine.edits.apply import apply
from engine.edits.proposal import Proposal
from engine.errors import EditFormatError, ModelError
from engine.feedback.tree import Verification
from engine.model.types import Completion, Message, ModelClient, SamplesTogether
from engine.project.settings import MAX_CANDIDATES
from engine.project.workspace import Workspace
from engine.run.events import CandidateVerified, ModelGivenUp, ModelRequested
from engine.run.gate import CandidateView, apply_pinning, split_test_edits
from engine.run.journal import Journal
from engine.run.no_change import (
    NO_FILE,
    ONLY_HELD_BACK,
    Noop,
    edits_key,
    unchanged_because,
    wording,
)
from engine.run.outcome import RunConfig
from engine.run.ranking import diff_size, tree_diff
from engine.run.streaming import OnPiece, streamed_to
from engine.verify.verdict import Verdict

# The first answer is the client's own (greedy); the others sample, each with its own seed, so
# the model's second and third guesses are tried rather than its first one three times.
CANDIDATE_TEMPERATURE = 0.8
# (n, tree, touched, diff, k) -> the tree's verification, its stages in candidate k's trail
Verify = Callable[[int, Path, list[str], str, int], Awaitable[Verification]]
# (k, answer): candidate k's answer (or why there is none), as it comes back
Arrived = Callable[[int, "Completion | ModelError"], None]


@dataclass(frozen=True)
class Sampled:
    """An iteration's first answer (or first candidate) sampled instead of greedy
    (`sample_after_noop`): at `temperature` from `seed`, and why."""

    temperature: float
    seed: int
    because: str


@dataclass(frozen=True)
class Candidate:
    """One answer of an iteration, as far as it got: parsed and screened, then verified, or
    dropped (with why) before any sandbox ran."""

    k: int
    completion: Completion | None  # None: the model gave this candidate no answer
    proposal: Proposal | None = None  # pinned test files already held back
    held_back: list[str] = field(default_factory=list)
    dropped: str = ""
    unchanged: str = ""  # dropped as changing no code: why (`unchanged_because`)
    problem: EditFormatError | None = None  # why an unusable answer could not be used
    touched: list[str] = field(default_factory=list)
    diff: str = ""
    verification: Verification | None = None

    def as_unchanged(self, because: str) -> Candidate:
        """This candidate dropped as changing no code: the reason, and the text it is
        dropped with, set together."""
        return replace(self, dropped=wording(because).dropped, unchanged=because)

    def view(self) -> CandidateView:
        assert self.proposal is not None
        assert self.verification is not None
        judgement = self.verification.judgement
        suspicious = judgement.reasons if judgement.verdict is Verdict.SUSPICIOUS_PASS else []
        return CandidateView(
            k=self.k,
            verdict=judgement.verdict.value,
            tests=judgement.tests,
            summary=self.verification.packet.summary if self.verification.packet else "",
            explanation=self.proposal.explanation,
            files=self.touched,
            diff=self.diff,
            suspicious=list(suspicious),
            proposal=self.proposal,
        )

    def event(self, n: int) -> CandidateVerified:
        if self.verification is None:
            return CandidateVerified(
                n=n, k=self.k, dropped=self.dropped, unchanged=bool(self.unchanged)
            )
        judgement = self.verification.judgement
        return CandidateVerified(
            n=n,
            k=self.k,
            verdict=judgement.verdict.value,
            tests=judgement.tests.model_dump() if judgement.tests else None,
            files=self.touched,
            diff_lines=diff_size(self.diff),
            summary=self.verification.packet.summary if self.verification.packet else "",
        )


@dataclass(frozen=True)
class Request:
    """What an iteration asks its candidates with: the prompt, its estimated tokens, where
    each answer's pieces go as they stream, and how the first is sampled (None: greedy)."""

    n: int
    model: ModelClient
    messages: Sequence[Message]
    prompt_tokens: int
    on_text: OnPiece | None = None
    first_sampled: Sampled | None = None


@dataclass(frozen=True)
class Raced:
    """An iteration's candidates from `Candidates.first_ok`: the answers that came back (for
    the spend), every candidate in order, how many requests were given up on, and how long
    the model was asked for."""

    answered: list[Completion]
    candidates: list[Candidate]
    given_up: int
    asked_s: float


class Candidates:
    """Asks for, screens, verifies and ranks one iteration's candidates."""

    def __init__(
        self,
        config: RunConfig,
        workspace: Workspace,
        journal: Journal,
        parse: Callable[[str], Proposal],
        verify: Verify,
    ) -> None:
        self.config, self.workspace, self.journal, self.parse = config, workspace, journal, parse
        self.verify = verify

    async def ask(
        self, request: Request, arrived: Arrived | None = None
    ) -> list[Completion | ModelError]:
        """The iteration's answers, asked at once (a provider or local server that batches
        decodes them together); each one asked on its own streams to the screen (those asked
        together in one request come back whole), the first greedy unless `first_sampled` says
        how to sample it instead. A candidate the model fails to answer (a sampled answer that
        runs past max_tokens, say) is its error: the run ends in error only when every
        candidate failed. `arrived` hears of each answer as it comes back."""
        n, model, messages = request.n, request.model, request.messages
        prompt_tokens, on_text, first_sampled = (
            request.prompt_tokens,
            request.on_text,
            request.first_sampled,
        )

        def got(k: int, answer: Completion | ModelError) -> Completion | ModelError:
            if arrived is not None:
                arrived(k, answer)
            return answer

        def sampling(k: int) -> tuple[float | None, int | None]:
            if k > 1:
                return CANDIDATE_TEMPERATURE, seed_of(n, k)
            if first_sampled is None:
                return None, None
            return first_sampled.temperature, first_sampled.seed

        def requested(k: int, *, together: int = 1, tokens: int = prompt_tokens) -> None:
            event = ModelRequested(
                n=n,
                model=model.model,
                prompt_tokens=tokens,
                candidate=k,
                temperature=sampling(k)[0],
                sampled_because=first_sampled.because if first_sampled and k == 1 else "",
                together=together,
            )
            self.journal.emit(event)

        async def one(k: int) -> Completion | ModelError:
            requested(k)
            temperature, seed = sampling(k)
            try:
                completion = await model.complete(
                    messages,
                    on_text=streamed_to(on_text, n, k, model.model),
                    temperature=temperature,
                    seed=seed,
                )
            except ModelError as exc:
                return got(k, exc)
            self.journal.responded(n, completion, candidate=k)
            return got(k, completion)

        async def sampled(ks: list[int]) -> list[Completion | ModelError]:
            """Candidates 2..N: in one request where the provider takes `n` (their prompt
            sent and billed once), else each in its own; any the server left out (it
            ignores `n`), each in its own after all."""
            sampler = model if isinstance(model, SamplesTogether) else None
            if sampler is None or len(ks) < 2 or not await sampler.samples_together():
                return list(await asyncio.gather(*(one(k) for k in ks)))
            for k in ks:  # the prompt's estimate once, on the first of them
                requested(k, together=len(ks), tokens=prompt_tokens if k == ks[0] else 0)
            streams = [streamed_to(on_text, n, k, model.model) for k in ks]
            heard: dict[str, Callable[[int, str], None]] = {}
            if on_text is not None:  # streamed only for a screen; choice i is candidate ks[i]

                def choice_text(i: int, text: str) -> None:
                    if 0 <= i < len(streams) and (stream := streams[i]) is not None:
                        stream(text)

                heard["on_text"] = choice_text
            try:
                answers = await sampler.sample(
                    messages,
                    len(ks),
                    temperature=CANDIDATE_TEMPERATURE,
                    seed=seed_of(n, ks[0]),
                    **heard,
                )
            except ModelError as exc:
                return [got(k, exc) for k in ks]
            for k, answer in zip(ks, answers, strict=False):
                if isinstance(answer, Completion):
                    self.journal.responded(n, answer, candidate=k)
                got(k, answer)
            left_out = ks[len(answers) :]
            return [*answers, *await asyncio.gather(*(one(k) for k in left_out))]

        first, rest = await asyncio.gather(
            one(1), sampled(list(range(2, self.config.candidates + 1)))
        )
        answers = [first, *rest]
        failed = [answer for answer in answers if isinstance(answer, ModelError)]
        if len(failed) == len(answers):
            raise failed[0]
        return answers

    def screen(
        self,
        completions: Sequence[Completion | ModelError],
        *,
        noop: Noop = "lines",
        first: int = 1,
    ) -> list[Candidate]:
        """Each answer parsed and its pinned test edits held back; unanswered, unusable,
        unchanged (by the `noop` rule) and duplicate ones dropped, with why. The answers are
        candidates `first`, `first` + 1, ..."""
        seen: dict[tuple[object, ...], int] = {}
        return [
            self.screen_one(k, completion, seen, noop=noop)
            for k, completion in enumerate(completions, start=first)
        ]

    def screen_one(
        self,
        k: int,
        completion: Completion | ModelError,
        seen: dict[tuple[object, ...], int],
        *,
        noop: Noop,
    ) -> Candidate:
        """Candidate k screened; `seen`: the edits of those screened before it, to which a
        usable one adds its own."""
        if isinstance(completion, ModelError):
            return Candidate(k, None, dropped=f"no answer: {completion.cause}")
        candidate = Candidate(k, completion)
        try:
            proposal = self.parse(completion.text)
        except EditFormatError as exc:
            return replace(candidate, dropped=f"unusable: {exc.problems[0]}", problem=exc)
        root = self.workspace.root
        split = split_test_edits(proposal, self.workspace.pins, root)
        kept, held = apply_pinning(proposal, split, allowed=self.config.allow_test_edits)
        candidate = replace(candidate, proposal=kept, held_back=held)
        key = edits_key(kept)
        if held and not kept.edits:  # nothing but pinned test files: all held back
            return candidate.as_unchanged(ONLY_HELD_BACK)
        if unchanged := unchanged_because(kept, root, noop=noop):
            return candidate.as_unchanged(unchanged)
        if key in seen:
            return replace(candidate, dropped=f"the same as candidate {seen[key]}")
        seen[key] = k
        return candidate

    async def verified(self, n: int, candidate: Candidate) -> Candidate:
        """The candidate applied to a scratch copy of the worktree and verified there; the
        user's checkout and the run's worktree are never written."""
        assert candidate.proposal is not None
        root = self.workspace.root
        scratch = Path(tempfile.mkdtemp(prefix="fixloop-candidate-"))
        try:
            tree = scratch / "tree"
            await asyncio.to_thread(
                shutil.copytree, root, tree, symlinks=True, ignore=shutil.ignore_patterns(".git")
            )
            try:
                applied = apply(candidate.proposal, tree)
            except EditFormatError as exc:
                return replace(candidate, dropped=f"does not apply: {exc.problems[0]}", problem=exc)
            if not applied.files:
                return candidate.as_unchanged(NO_FILE)
            diff = tree_diff(root, tree, applied.files)
            examined = await self.verify(n, tree, applied.files, diff, candidate.k)
        finally:
            await asyncio.to_thread(shutil.rmtree, scratch, True)
        return replace(candidate, touched=applied.files, diff=diff, verification=examined)

    async def run(
        self,
        n: int,
        completions: Sequence[Completion | ModelError],
        *,
        noop: Noop = "lines",
        first: int = 1,
    ) -> list[Candidate]:
        """Every candidate screened, the usable ones verified concurrently, each in the
        trail (`iterations/NN/candidates/K/`) and as an event; K counts from `first`."""
        screened = self.screen(completions, noop=noop, first=first)
        usable = [c for c in screened if not c.dropped]
        done = await asyncio.gather(*(self.verified(n, c) for c in usable))
        by_k = {c.k: c for c in done}
        every = [by_k.get(c.k, c) for c in screened]
        for candidate in every:
            self.record(n, candidate)
        return every

    async def first_ok(self, request: Request, *, noop: Noop = "lines") -> Raced:
        """The iteration's candidates when no person chooses among them: each answer screened
        and verified as it comes back, and once one verifies ok the answers still being
        written are given up on (their requests cancelled: the embedded model stops within a
        token), each in the trail as not waited for. Without an ok before the last answer,
        every candidate is verified, as `run` does."""
        n = request.n
        seen: dict[tuple[object, ...], int] = {}
        screened: dict[int, Candidate] = {}
        checks: list[asyncio.Task[Candidate]] = []
        oks: list[int] = []
        settled = asyncio.Event()

        async def check(candidate: Candidate) -> Candidate:
            done = await self.verified(n, candidate)
            if done.verification and done.verification.judgement.verdict is Verdict.OK:
                oks.append(done.k)
                settled.set()
            return done

        def arrived(k: int, answer: Completion | ModelError) -> None:
            candidate = self.screen_one(k, answer, seen, noop=noop)
            screened[k] = candidate
            if not candidate.dropped:
                checks.append(asyncio.create_task(check(candidate)))

        asking = asyncio.create_task(self.ask(request, arrived))
        waiting = asyncio.create_task(settled.wait())
        started = time.monotonic()
        try:
            await asyncio.wait({asking, waiting}, return_when=asyncio.FIRST_COMPLETED)
            if asking.done():
                asking.result()  # every candidate failed: raised here
            else:
                asking.cancel()
                await asyncio.wait({asking})  # (a cancellation of this task still propagates)
            asked_s = time.monotonic() - started
            done = {c.k: c for c in await asyncio.gather(*checks)}
        finally:
            for task in (asking, waiting, *checks):
                task.cancel()
        given_up = f"not waited for: candidate {oks[0]} verified ok first" if oks else ""
        for k in range(1, self.config.candidates + 1):
            if k not in screened:
                given = ModelGivenUp(n=n, candidate=k, prompt_tokens=request.prompt_tokens)
                self.journal.emit(given)
        every = [
            done.get(k) or screened.get(k) or Candidate(k, None, dropped=given_up)
            for k in range(1, self.config.candidates + 1)
        ]
        for candidate in every:
            self.record(n, candidate)
        answered = [c.completion for c in every if c.completion is not None]
        return Raced(answered, every, self.config.candidates - len(screened), asked_s)

    def record(self, n: int, candidate: Candidate) -> None:
        where = f"candidates/{candidate.k}"
        if candidate.proposal is not None:
            edits: dict[str, object] = {
                "proposal": candidate.proposal.model_dump(),
                "held_back": candidate.held_back,
            }
            self.journal.json(n, f"{where}/edits.json", edits)
        if candidate.diff:
            self.journal.text(n, f"{where}/patch.diff", candidate.diff)
        event = candidate.event(n)
        self.journal.json(n, f"{where}/verdict.json", event)
        self.journal.emit(event)


def seed_of(n: int, k: int) -> int:
    """Sampled candidate k's seed in iteration n: 1 ... N - 1 in the first iteration, new ones
    in each later one. An iteration whose answers all changed nothing leaves the next prompt
    nearly the same, and the same seeds drew the very same answers again (QuixBugs'
    bucketsort: three iterations, byte for byte the same three answers)."""
    return (n - 1) * MAX_CANDIDATES + k - 1
