"""A bench run: each item (a task; in repair mode, a seeded mutant of it) becomes a throwaway
git repository, and each arm runs the real loop on it (`start_run`, as `fixloop-tui run
--headless` does) with one model client and one warm sandbox shared by every run.

Round r is the loop's iteration r + 1: round 0 is the first answer, rounds 1..K the repairs
(`max_iters` = K + 1). Each run's audit trail stays in its repository's `.fixloop/`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from bench.errors import BenchStopped
from bench.suite.arms import arm_settings
from bench.suite.bench_run import (
    ArmFinished,
    ArmResult,
    BenchConfig,
    BenchEvent,
    BenchItem,
    BenchRun,
    ItemFinished,
    ItemResult,
    ItemStarted,
    Listener,
    ModelSpend,
    Preparing,
    RoundVerified,
    SkippedTask,
    arm_result,
    machine,
)
from bench.suite.harness import SOLUTION, TEST_CMD, Evaluator, task_repo, task_text
from bench.suite.ledger import Ledger
from bench.suite.mutants import Mutant, reference_program, seeded_mutants
from bench.suite.selection import natural_key, seeded_order, select
from bench.suite.tasks import BenchTask
from engine.errors import ModelError
from engine.model.types import Completion, Message, ModelClient, SamplesTogether
from engine.project.settings import Settings
from engine.run.events import (
    BaseEvent,
    ModelGivenUp,
    ModelResponded,
    PacketReady,
    ProposalReady,
)
from engine.run.gate import PolicyGate
from engine.run.guards import ModelUnreachable, RunStatus
from engine.run.outcome import RunResult
from engine.run.start import start_run
from sandbox import Sandbox

# Mutants tried per task before giving up on it; a hanging mutant is never kept.
MAX_MUTANT_TRIES = 12


async def run_task(
    root: Path,
    settings: Settings,
    watch: RunWatch,
    model: HeardModel,
    sandbox: Sandbox | None,
    task_failure: Callable[[str], bool] = lambda reason: False,
) -> tuple[RunResult, float]:
    """One task's run through the loop, and its wall seconds. An outage stops the bench (it is
    no task's failure: the rest would wait), and so does an error before the model ever
    answered, unless `task_failure` says that error is the task's own."""
    started = time.monotonic()
    try:
        result = await start_run(
            root, settings, gate=PolicyGate(), sinks=[watch], model_client=model, sandbox=sandbox
        )
    except ModelUnreachable as exc:
        raise BenchStopped(exc.reason) from None
    if result.status is RunStatus.ERROR and not model.heard and not task_failure(result.reason):
        raise BenchStopped(result.reason)
    return result, time.monotonic() - started


class HeardModel:
    """The bench's model client, noting whether the model answered at all: a truncated or
    empty answer still says the model is there; only an unreachable one stops the bench."""

    def __init__(self, inner: ModelClient) -> None:
        self.inner, self.model = inner, inner.model
        self.heard = False

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        on_text: Callable[[str], None] | None = None,
        temperature: float | None = None,
        seed: int | None = None,
    ) -> Completion:
        try:
            completion = await self.inner.complete(
                messages, on_text=on_text, temperature=temperature, seed=seed
            )
        except ModelError as exc:
            self.heard = self.heard or exc.answered
            raise
        self.heard = True
        return completion

    async def samples_together(self) -> bool:
        inner = self.inner
        return isinstance(inner, SamplesTogether) and await inner.samples_together()

    async def sample(
        self, messages: Sequence[Message], n: int, *, temperature: float, seed: int
    ) -> list[Completion | ModelError]:
        assert isinstance(self.inner, SamplesTogether)  # asked only after samples_together
        try:
            answers = await self.inner.sample(messages, n, temperature=temperature, seed=seed)
        except ModelError as exc:
            self.heard = self.heard or exc.answered
            raise
        self.heard = self.heard or bool(answers)  # a truncated or empty choice is an answer too
        return answers


class RunWatch:
    """Hears one run's events: sums its model spend and tells the listener each round."""

    def __init__(self, item_id: str, arm: str, listener: Listener) -> None:
        self.item_id, self.arm, self.listener = item_id, arm, listener
        self.spend = ModelSpend()

    def emit(self, event: BaseEvent) -> None:
        if isinstance(event, ModelResponded):
            spend = self.spend
            spend.model_calls += 1
            spend.prompt_tokens += event.prompt_tokens
            spend.completion_tokens += event.completion_tokens
            spend.cost_usd += event.cost_usd
        elif isinstance(event, ModelGivenUp):  # a call whose prompt was read, unanswered
            self.spend.model_calls += 1
            self.spend.prompt_tokens += event.prompt_tokens
        elif isinstance(event, PacketReady) and event.n >= 1:
            tests = event.tests or {}
            detail = f"{tests.get('passed', 0)} passed, {tests.get('failed', 0)} failed"
            self.said(event.n, event.verdict, detail if tests else event.error_class)
        elif isinstance(event, ProposalReady) and event.format_error:
            self.said(event.n, "format_error", event.format_error.splitlines()[0])

    def said(self, n: int, verdict: str, detail: str) -> None:
        self.listener(
            RoundVerified(
                item_id=self.item_id, arm=self.arm, round=n - 1, verdict=verdict, detail=detail
            )
        )


class BenchRunner:
    def __init__(
        self,
        config: BenchConfig,
        model: ModelClient,
        sandbox: Sandbox,
        workdir: Path,
        *,
        settings: Settings | None = None,
        listener: Listener | None = None,
        ledger: Ledger | None = None,
    ) -> None:
        """`workdir` gets one repository per item and arm; `settings` carries what every run
        shares (the model's endpoint, the sandbox backend), the bench sets the rest; `ledger`
        holds the runs measured in earlier sittings, and gets each new one."""
        self.config, self.model, self.sandbox = config, HeardModel(model), sandbox
        self.workdir = workdir
        self.base = (settings or Settings()).model_copy(
            update={
                "model": config.model,
                "test_cmd": TEST_CMD,
                "files": [SOLUTION],
                "max_iters": config.max_rounds + 1,
                "exec_timeout": config.exec_timeout_s,
                "approve": "auto",
            }
        )
        self.evaluator = Evaluator(
            sandbox, timeout_s=config.exec_timeout_s, layout=config.test_layout
        )
        self.listener = listener
        self.ledger = ledger

    async def run(self, tasks: Sequence[BenchTask]) -> BenchRun:
        started_at, started = self.clock()
        items, skipped = await self.items(tasks)
        results = []
        for index, item in enumerate(items, start=1):
            self.emit(ItemStarted(index=index, total=len(items), item_id=item.item_id))
            result = await self.run_item(index, item)
            results.append(result)
            self.emit(ItemFinished(index=index, total=len(items), result=result))
        return self.finished(started_at, started, results, skipped)

    @staticmethod
    def clock() -> tuple[str, float]:
        """When the bench started: the wall-clock time it reports, and its monotonic start."""
        return datetime.now(UTC).isoformat(timespec="seconds"), time.monotonic()

    def finished(
        self,
        started_at: str,
        started: float,
        results: list[ItemResult],
        skipped: list[SkippedTask],
    ) -> BenchRun:
        ledger = self.ledger
        runs = [(item.item_id, arm) for item in results for arm in item.arms]
        reused, revisions = ledger.provenance(runs) if ledger else (0, [])
        return BenchRun(
            config=self.config,
            started=started_at,
            machine=machine(),
            duration_s=time.monotonic() - started,
            items=results,
            skipped=skipped,
            trails=str(self.workdir),
            ledger=str(ledger.path) if ledger else "",
            reused_runs=reused,
            revisions=revisions,
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
            if found := self.measured_mutants(task):
                self.emit(Preparing(detail=f"the mutants of {task.task_id}: from the ledger"))
                why = ""
            else:
                detail = f"finding mutants of {task.task_id} that fail its tests"
                self.emit(Preparing(detail=detail))
                found, why = await self.failing_mutants(task)
            if not found:
                skipped.append(SkippedTask(task_id=task.task_id, reason=why))
            items += [
                BenchItem(item_id=f"{task.task_id}#{m.id}", task=task, mutant=m) for m in found
            ]
        items = items[:limit]
        return sorted(items, key=lambda item: natural_key(item.item_id)), skipped

    def measured_mutants(self, task: BenchTask) -> list[Mutant]:
        """The task's mutants an earlier sitting measured under these conditions (the ledger's
        item ids): they failed its tests then, and are the ones every arm must get. Empty
        when the ledger has none, or names one this source no longer makes."""
        known = self.ledger.mutant_ids(task.task_id) if self.ledger is not None else []
        if not known:
            return []
        made = {mutant.id: mutant for mutant in seeded_mutants(task, self.config.seed)}
        found = [made[mutant_id] for mutant_id in known if mutant_id in made]
        return found if len(found) == len(known) else []

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

    async def run_item(self, index: int, item: BenchItem) -> ItemResult:
        arms = {arm: await self.measured(index, item, arm) for arm in self.config.arms}
        return ItemResult(
            item_id=item.item_id,
            task_id=item.task.task_id,
            mutant=item.mutant.describe() if item.mutant else None,
            arms=arms,
        )

    async def measured(self, index: int, item: BenchItem, arm: str) -> ArmResult:
        """The item's run under `arm`: from the ledger when an earlier sitting measured it,
        else run now (and written to the ledger)."""
        if self.ledger is not None and (done := self.ledger.get(item.item_id, arm)):
            self.emit(ArmFinished(item_id=item.item_id, result=done, reused=True))
            return done
        result = await self.run_arm(index, item, arm)
        if self.ledger is not None:
            self.ledger.record(item, result)
        return result

    async def run_arm(self, index: int, item: BenchItem, arm: str) -> ArmResult:
        """The loop on a fresh repository of the item, with the arm's options."""
        program = item.mutant.program if item.mutant else item.task.prompt
        slug = re.sub(r"[^A-Za-z0-9]+", "-", item.item_id).strip("-")
        root = task_repo(
            self.workdir / f"{index:03d}-{slug}-{arm}",
            item.task,
            program,
            layout=self.config.test_layout,
        )
        settings = arm_settings(arm, self.base).model_copy(
            update={"task": task_text(item.task, self.config.mode)}
        )
        watch = RunWatch(item.item_id, arm, self.emit)
        result, seconds = await run_task(root, settings, watch, self.model, self.sandbox)
        done = arm_result(arm, result, watch.spend, seconds)
        self.emit(ArmFinished(item_id=item.item_id, result=done))
        return done

    def emit(self, event: BenchEvent) -> None:
        if self.listener is not None:
            self.listener(event)
