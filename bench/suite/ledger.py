"""`bench --ledger FILE`: every finished run (an item under one arm) appended to FILE as one
JSON line, so a bench of hours can run over several sittings or survive a crash. A later bench
with the same ledger and the same measuring conditions runs only the item and arm pairs the
ledger lacks, and reports on all of them.

The conditions that must match are `LEDGER_KEY`'s: the suite, mode, model, rounds, seed,
test timeout and test layout (not `--limit`: a longer run of the same seed takes the shorter
one's items first, and not `--arms`: arms are added as they are asked for). Each line also
records the run options its arm resolved to (`levers`): a line whose arm means something else
now (the loop's defaults changed under `defaults`) is not reused. And each names the fixloop
source it was measured with, so a report over several sittings can say which.
"""

from __future__ import annotations

import functools
import json
import subprocess
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from bench.errors import LedgerError
from bench.suite.arms import ARMS, arm_levers, recorded_levers, unrecorded_levers
from bench.suite.bench_run import ArmResult, BenchConfig, BenchItem, BenchRun, ItemResult, machine
from bench.suite.selection import natural_key, rank
from bench.suite.tasks import SUITES

LEDGER_KEY = (
    "suite",
    "mode",
    "model",
    "max_rounds",
    "seed",
    "exec_timeout_s",
    "mutants_per_task",
    "test_layout",
)
# What a condition was before it was recorded: lines written before `test_layout` existed
# measured the literal layout.
KEY_DEFAULTS: dict[str, Any] = {"test_layout": "literal"}


class LedgerLine(BaseModel):
    key: dict[str, Any]
    item_id: str
    task_id: str = ""  # older lines: the item id's part before "#"
    mutant: str | None = None  # repair mode: the mutant, described
    arm: ArmResult
    levers: dict[str, Any] | None = None  # older lines: `unrecorded_levers(arm)`
    revision: str = ""
    recorded: str = ""


class Ledger:
    """The runs already measured under this bench's conditions, and where new ones go."""

    def __init__(self, path: Path, config: BenchConfig) -> None:
        self.path = path
        self.key = ledger_key(config)
        # (item_id, the run options measured) -> its run: a line is found by what its arm
        # ran with, not by the arm's name, so an arm whose options another arm's lines
        # measured (`defaults` once a default changes) reuses them.
        self.lines: dict[tuple[str, str], LedgerLine] = {}
        self.other_conditions = 0  # lines measured under other conditions: left alone
        self.measures = {arm: _canonical(arm_levers(arm, config.model)) for arm in ARMS}
        if path.exists():
            self._read()
        elif not path.resolve().parent.is_dir():
            raise LedgerError(f"--ledger {path}: its directory does not exist")
        self.earlier = frozenset(self.lines)  # measured in earlier sittings
        known = set(self.measures.values())
        # lines whose options no arm has now (an old default): kept, reused by none
        self.other_levers = sum(measure not in known for _, measure in self.lines)

    def _read(self) -> None:
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise LedgerError(f"--ledger {self.path}: cannot read it ({exc})") from None
        for number, text in enumerate(lines, start=1):
            if not text.strip():
                continue
            try:
                line = LedgerLine.model_validate_json(text)
            except ValidationError:
                if number == len(lines):  # a write cut short by a crash: that run is redone
                    continue
                raise LedgerError(
                    f"--ledger {self.path}: line {number} is not a bench ledger line"
                ) from None
            if {**KEY_DEFAULTS, **line.key} != self.key:
                self.other_conditions += 1
                continue
            if line.levers is None and line.arm.arm not in ARMS:
                continue  # an arm since removed, from before lines recorded their options
            if line.levers is not None:
                levers = recorded_levers(line.levers)
            else:
                levers = unrecorded_levers(line.arm.arm)
            self.lines[(line.item_id, _canonical(levers))] = line  # a later line wins

    @functools.cached_property
    def revision(self) -> str:
        """The source this sitting measures with (asked of git once, when first recorded)."""
        return source_revision()

    def run_of(self, item_id: str, arm: str) -> tuple[str, str]:
        """Where the ledger keeps `arm`'s run of `item_id`."""
        return item_id, self.measures[arm]

    def get(self, item_id: str, arm: str) -> ArmResult | None:
        """`arm`'s run of the item, measured by whichever arm then had its options."""
        line = self.lines.get(self.run_of(item_id, arm))
        return line.arm.model_copy(update={"arm": arm}) if line is not None else None

    def mutant_ids(self, task_id: str) -> list[str]:
        """The mutants of `task_id` an earlier sitting measured (their ids, after the "#" of
        its item ids): found failing then, under these conditions, so not screened again."""
        ids = {item.split("#", 1)[1] for item, _ in self.lines if item.startswith(task_id + "#")}
        return sorted(ids)

    def provenance(self, runs: Iterable[tuple[str, str]]) -> tuple[int, list[str]]:
        """Of these (item_id, arm) runs: how many came from earlier sittings, and the fixloop
        sources all of them were measured with."""
        where = [self.run_of(item_id, arm) for item_id, arm in runs]
        earlier = sum(run in self.earlier for run in where)
        revisions = {self.lines[run].revision for run in where if run in self.lines}
        return earlier, sorted(revision for revision in revisions if revision)

    def record(self, item: BenchItem, result: ArmResult) -> None:
        """Append one finished run, flushed to disk before the bench goes on."""
        item_id = item.item_id
        line = LedgerLine(
            key=self.key,
            item_id=item_id,
            task_id=item.task.task_id,
            mutant=item.mutant.describe() if item.mutant else None,
            arm=result,
            levers=json.loads(self.measures[result.arm]),
            revision=self.revision,
            recorded=datetime.now(UTC).isoformat(timespec="seconds"),
        )
        text = line.model_dump_json() + "\n"
        try:
            with self.path.open("a", encoding="utf-8") as handle:
                handle.write(text)
                handle.flush()
        except OSError as exc:
            raise LedgerError(f"--ledger {self.path}: cannot write it ({exc})") from None
        self.lines[self.run_of(item_id, result.arm)] = line


def _canonical(levers: dict[str, Any]) -> str:
    return json.dumps(levers, sort_keys=True)


def ledger_key(config: BenchConfig) -> dict[str, Any]:
    """The conditions under which two runs' numbers may be added up."""
    values = config.model_dump(mode="json")
    suite = Path(config.suite)
    if config.suite not in SUITES and suite.is_dir():  # the same directory, however named
        values["suite"] = str(suite.resolve())
    return {name: values[name] for name in LEDGER_KEY}


def source_revision() -> str:
    """The fixloop source measured: its git commit (with `+dirty` for uncommitted changes)
    when it runs from a checkout, else the installed version."""
    root = Path(__file__).resolve().parents[2]
    commit = _git(root, "rev-parse", "--short=12", "HEAD")
    if commit:
        dirty = _git(root, "status", "--porcelain", "--untracked-files=no")
        return commit + ("+dirty" if dirty else "")
    try:
        from importlib.metadata import version

        return f"fixloop-tui {version('fixloop-tui')}"
    except Exception:
        return ""


def _git(root: Path, *args: str) -> str:
    """A git command's output in `root`; empty when git or the checkout is not there."""
    try:
        done = subprocess.run(
            ["git", "-C", str(root), *args],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip()


def ledger_run(config: BenchConfig, ledger: Ledger) -> BenchRun:
    """`bench --report-only`: the report over the runs the ledger holds, running nothing.
    Its items are those every asked arm was measured on; with `--limit N`, the first N of
    them in the seed's order (the order a bench of that limit takes its tasks in)."""
    described: dict[str, LedgerLine] = {}  # each item once: any of its lines says what it is
    for (item_id, _), line in ledger.lines.items():
        described.setdefault(item_id, line)
    complete = []
    for item_id, line in described.items():
        arms = {arm: ledger.get(item_id, arm) for arm in config.arms}
        measured = {arm: result for arm, result in arms.items() if result is not None}
        if len(measured) == len(arms):
            complete.append(
                ItemResult(
                    item_id=item_id,
                    task_id=line.task_id or item_id.split("#", 1)[0],
                    mutant=line.mutant,
                    arms=measured,
                )
            )
    seeded = sorted(complete, key=lambda i: (rank(config.seed, i.task_id), i.item_id))
    items = sorted(seeded[: config.limit], key=lambda i: natural_key(i.item_id))
    runs = [(item.item_id, arm) for item in items for arm in item.arms]
    _, revisions = ledger.provenance(runs)
    return BenchRun(
        config=config,
        started="(from the ledger)",
        machine=machine(),
        duration_s=sum(arm.wall_s for item in items for arm in item.arms.values()),
        items=items,
        ledger=str(ledger.path),
        reused_runs=len(runs),
        revisions=revisions,
    )
