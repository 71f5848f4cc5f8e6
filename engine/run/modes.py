"""What differs between a repair run and a spec run, behind one `RunMode` protocol: where the
run starts, what a prompt holds, how an answer is read and screened, and what a commit, a
verification and a resume add. `RepairMode` repairs a red project; `SpecMode` builds from a spec.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence, Set
from typing import TYPE_CHECKING, Protocol

from engine.edits.apply import dropped_definitions
from engine.edits.parse import parse
from engine.edits.proposal import EditFormat, Proposal
from engine.errors import EditFormatError
from engine.feedback import context, prompts
from engine.feedback.excerpt_answers import answer_for_excerpts
from engine.feedback.small_prompt import small_prompt
from engine.feedback.tree import Verification
from engine.model.types import Message
from engine.project.strategy import DEFAULT_STRATEGY, Strategy
from engine.project.workspace import Workspace
from engine.run.checker import IterationChecker
from engine.run.events import Event
from engine.run.gate import Review, TestEditSplit, apply_pinning, held_back_note
from engine.run.outcome import RunConfig
from engine.verify.results import StageResult

if TYPE_CHECKING:
    from pathlib import Path


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
