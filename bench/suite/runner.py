"""A bench run: for each task, an answer, the hidden tests in the sandbox, and on failure up
to K rounds of repair with feedback, once per feedback arm.

Round 0 is the one-shot attempt and has no feedback (`generate`: complete the prompt;
`repair`: fix a mutant, told only that its tests fail), so it is the same prompt for every
arm: when several arms run together it is asked once and each arm goes on from that answer.
Rounds 1..K show the current file and the feedback: fixloop's repair packet (`packet`) or the
tail of the raw pytest log and "please fix it" (`raw`).
"""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from bench.suite import prompts
from bench.suite.harness import (
    RAW_LOG_CHARS,
    SOLUTION,
    Evaluation,
    Evaluator,
    assemble,
    extract_code,
)
from bench.suite.mutants import Mutant, reference_program, seeded_mutants
from bench.suite.prompts import Arm
from bench.suite.selection import natural_key, seeded_order, select
from bench.suite.tasks import BenchTask
from engine.feedback.packet import DEFAULT_CAP
from engine.model.client import Message, ModelClient, ModelError
from engine.run.guards import StallDetector

Mode = Literal["generate", "repair"]
AttemptStatus = Literal["passed", "failed", "no_code", "truncated"]
# Mutants tried per task before giving up on it; a hanging mutant is never kept.
MAX_MUTANT_TRIES = 12


def _default_arms() -> list[Arm]:
    return ["packet"]


class BenchConfig(BaseModel):
    model_config = ConfigDict(frozen=True)

    suite: str
    mode: Mode = "generate"
    model: str
    arms: list[Arm] = Field(default_factory=_default_arms, min_length=1)
    max_rounds: int = Field(default=2, ge=0, description="repair rounds after round 0 (K)")
    limit: int | None = Field(default=None, ge=1)
    seed: int = 0
    exec_timeout_s: float = Field(default=30.0, gt=0)
    mutants_per_task: int = Field(default=1, ge=1)
    packet_cap: int = DEFAULT_CAP
    raw_log_chars: int = RAW_LOG_CHARS


class BenchItem(BaseModel):
    """What the model is asked to get right: a task, and in repair mode the mutant."""

    model_config = ConfigDict(frozen=True)

    item_id: str
    task: BenchTask
    mutant: Mutant | None = None


class Attempt(BaseModel):
    round: int
    status: AttemptStatus
    summary: str
    error_class: str = ""
    tests_passed: int | None = None
    tests_collected: int | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    model_s: float = 0.0
    verify_s: float = 0.0
    feedback_tokens: int = 0  # the feedback paragraph of this attempt's prompt
    shared: bool = False  # a round 0 asked once for several arms
    answer: str = ""


class ArmResult(BaseModel):
    arm: Arm
    attempts: list[Attempt]
    passed_round: int | None  # the round whose answer passed, None if none did
    wall_s: float  # round 0 included, as if the arm had run alone


class ItemResult(BaseModel):
    item_id: str
    task_id: str
    mutant: str | None = None
    arms: dict[Arm, ArmResult]


class SkippedTask(BaseModel):
    task_id: str
    reason: str


class BenchRun(BaseModel):
    """Everything a run did, as `--json` prints it (with the scores added)."""

    config: BenchConfig
    started: str
    machine: dict[str, str]
    duration_s: float
    items: list[ItemResult]
    skipped: list[SkippedTask] = Field(default_factory=list)


# --- progress --------------------------------------------------------------------------------


class ItemStarted(BaseModel):
    type: Literal["ItemStarted"] = "ItemStarted"
    index: int
    total: int
    item_id: str


class AttemptFinished(BaseModel):
    type: Literal["AttemptFinished"] = "AttemptFinished"
    item_id: str
    arm: str  # "packet", "raw", or "all" for a shared round 0
    attempt: Attempt


class ItemFinished(BaseModel):
    type: Literal["ItemFinished"] = "ItemFinished"
    index: int
    total: int
    result: ItemResult


class Preparing(BaseModel):
    type: Literal["Preparing"] = "Preparing"
    detail: str


BenchEvent = ItemStarted | AttemptFinished | ItemFinished | Preparing
Listener = Callable[[BenchEvent], None]


# --- the run ---------------------------------------------------------------------------------


@dataclass
class _State:
    """Where one arm stands on one item after an attempt."""

    program: str  # the file shown in the next prompt
    tested: str | None  # the last program that ran against the tests
    evaluation: Evaluation | None
    attempt: Attempt
    stall: StallDetector = field(default_factory=StallDetector)


class BenchRunner:
    def __init__(
        self,
        config: BenchConfig,
        model: ModelClient,
        evaluator: Evaluator,
        listener: Listener | None = None,
    ) -> None:
        self.config = config
        self.model = model
        self.evaluator = evaluator
        self.listener = listener

    async def run(self, tasks: Sequence[BenchTask]) -> BenchRun:
        started_at = datetime.now(UTC).isoformat(timespec="seconds")
        started = time.monotonic()
        items, skipped = await self.items(tasks)
        results = []
        for index, item in enumerate(items, start=1):
            self.emit(ItemStarted(index=index, total=len(items), item_id=item.item_id))
            result = await self.run_item(item)
            results.append(result)
            self.emit(ItemFinished(index=index, total=len(items), result=result))
        return BenchRun(
            config=self.config,
            started=started_at,
            machine=machine(),
            duration_s=time.monotonic() - started,
            items=results,
            skipped=skipped,
        )

    async def items(self, tasks: Sequence[BenchTask]) -> tuple[list[BenchItem], list[SkippedTask]]:
        if self.config.mode == "generate":
            chosen = select(tasks, self.config.limit, self.config.seed)
            return [BenchItem(item_id=t.task_id, task=t) for t in chosen], []
        return await self.mutant_items(tasks)

    async def mutant_items(
        self, tasks: Sequence[BenchTask]
    ) -> tuple[list[BenchItem], list[SkippedTask]]:
        """In the seeded order, each task's first failing mutants, until `limit` are found."""
        limit = self.config.limit or len(tasks) * self.config.mutants_per_task
        items: list[BenchItem] = []
        skipped: list[SkippedTask] = []
        for task in seeded_order(tasks, self.config.seed):
            if len(items) >= limit:
                break
            self.emit(Preparing(detail=f"finding mutants of {task.task_id} that fail its tests"))
            found, why = await self.failing_mutants(task)
            if not found:
                skipped.append(SkippedTask(task_id=task.task_id, reason=why))
            items += [
                BenchItem(item_id=f"{task.task_id}#{m.id}", task=task, mutant=m) for m in found
            ]
        items = items[:limit]
        return sorted(items, key=lambda item: natural_key(item.item_id)), skipped

    async def failing_mutants(self, task: BenchTask) -> tuple[list[Mutant], str]:
        if not task.canonical_solution.strip():
            return [], "no canonical_solution to mutate"
        reference = await self.evaluator.evaluate(task, reference_program(task))
        if not reference.passed:
            return [], f"its reference solution fails its tests ({reference.summary})"
        kept: list[Mutant] = []
        for tried, mutant in enumerate(seeded_mutants(task, self.config.seed)):
            if tried >= MAX_MUTANT_TRIES or len(kept) >= self.config.mutants_per_task:
                break
            evaluation = await self.evaluator.evaluate(task, mutant.program)
            if evaluation.verdict == "failing" and not evaluation.timed_out:
                kept.append(mutant)
        return kept, "" if kept else "none of its mutants fails the tests without hanging"

    async def run_item(self, item: BenchItem) -> ItemResult:
        started = time.monotonic()
        shared = len(self.config.arms) > 1
        first = await self.first_round(item, shared)
        first_s = time.monotonic() - started
        self.emit(
            AttemptFinished(
                item_id=item.item_id,
                arm="all" if shared else self.config.arms[0],
                attempt=first.attempt,
            )
        )
        arms = {}
        for arm in self.config.arms:
            arm_started = time.monotonic()
            state = _State(first.program, first.tested, first.evaluation, first.attempt)
            state.stall.observe(first.evaluation.signature if first.evaluation else "", [SOLUTION])
            attempts = [first.attempt]
            for round in range(1, self.config.max_rounds + 1):
                if attempts[-1].status == "passed":
                    break
                state = await self.repair_round(item, arm, round, state)
                attempts.append(state.attempt)
                self.emit(AttemptFinished(item_id=item.item_id, arm=arm, attempt=state.attempt))
            passed = next((a.round for a in attempts if a.status == "passed"), None)
            arms[arm] = ArmResult(
                arm=arm,
                attempts=attempts,
                passed_round=passed,
                wall_s=first_s + time.monotonic() - arm_started,
            )
        return ItemResult(
            item_id=item.item_id,
            task_id=item.task.task_id,
            mutant=item.mutant.describe() if item.mutant else None,
            arms=arms,
        )

    async def first_round(self, item: BenchItem, shared: bool) -> _State:
        if item.mutant is None:
            messages, program = prompts.generate(item.task), item.task.prompt
        else:
            messages, program = prompts.repair(item.task, item.mutant.program), item.mutant.program
        state = await self.attempt(item, 0, messages, program, tested=None, previous=None)
        state.attempt = state.attempt.model_copy(update={"shared": shared})
        return state

    async def repair_round(self, item: BenchItem, arm: Arm, round: int, state: _State) -> _State:
        text = self.feedback(arm, state)
        messages = prompts.feedback(item.task, state.program, text)
        new = await self.attempt(
            item, round, messages, state.program, tested=state.tested, previous=state.evaluation
        )
        new.attempt = new.attempt.model_copy(
            update={"feedback_tokens": self.evaluator.tokens(text)}
        )
        new.stall = state.stall
        if new.evaluation is not None and new.evaluation is not state.evaluation:
            new.stall.observe(new.evaluation.signature, [SOLUTION])
        return new

    def feedback(self, arm: Arm, state: _State) -> str:
        """What the tests said about the last attempt, as this arm tells it."""
        if state.attempt.status == "no_code":
            return prompts.NO_CODE
        if state.attempt.status == "truncated":
            return prompts.TRUNCATED
        evaluation = state.evaluation
        assert evaluation is not None  # a tested attempt always has one
        if arm == "raw":
            return prompts.raw_feedback(evaluation.raw_log)
        if evaluation.packet is None:  # no packet (e.g. an env failure): say what was found
            return f"Verification failed: {evaluation.summary}."
        note = state.stall.note()
        packet = (
            evaluation.packet.model_copy(update={"repeat_note": note})
            if note
            else evaluation.packet
        )
        return self.evaluator.render(packet)

    async def attempt(
        self,
        item: BenchItem,
        round: int,
        messages: list[Message],
        program: str,
        *,
        tested: str | None,
        previous: Evaluation | None,
    ) -> _State:
        """Ask, extract the file, test it: one attempt."""
        try:
            completion = await self.model.complete(messages)
        except ModelError as exc:
            if "finish_reason length" not in str(exc):  # a model that stays down ends the run
                raise
            attempt = Attempt(round=round, status="truncated", summary="answer cut off")
            return _State(program, tested, previous, attempt)
        usage = completion.usage
        spent: dict[str, Any] = {
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "cost_usd": usage.cost_usd,
            "model_s": completion.duration_s,
            "answer": completion.text,
        }
        code = extract_code(completion.text, item.task.entry_point)
        if code is None:
            attempt = Attempt(
                round=round, status="no_code", summary="no code in the answer", **spent
            )
            return _State(program, tested, previous, attempt)
        candidate = assemble(item.task, code)
        evaluation = await self.evaluator.evaluate(
            item.task,
            candidate,
            # The packet counts attempts from 1: round 0 is attempt 1 of K + 1.
            round=round + 1,
            max_rounds=self.config.max_rounds + 1,
            previous=previous,
            last_program=tested if tested is not None else program,
        )
        tests = evaluation.tests
        attempt = Attempt(
            round=round,
            status="passed" if evaluation.passed else "failed",
            summary=evaluation.summary,
            error_class="" if evaluation.passed else evaluation.error_class,
            tests_passed=tests.passed if tests else None,
            tests_collected=tests.collected if tests else None,
            verify_s=evaluation.duration_s,
            **spent,
        )
        return _State(candidate, candidate, evaluation, attempt)

    def emit(self, event: BenchEvent) -> None:
        if self.listener is not None:
            self.listener(event)


def machine() -> dict[str, str]:
    """What the numbers were measured on."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            cpu = next(
                (line.split(":", 1)[1].strip() for line in info if line.startswith("model name")),
                cpu,
            )
    except OSError:
        pass
    return {
        "platform": platform.platform(),
        "cpu": cpu,
        "cores": str(os.cpu_count() or 0),
        "python": platform.python_version(),
    }
