"""Unusable answers, replayed: each answer a bench run's loop could not read is parsed again
by today's code, checked for dropped definitions, and, when it changes the code, run against
the task's tests in the gVisor sandbox (root). No model is involved: this measures which
answers a change to the answer reader turns into proposals, not how the runs would have gone
on after them (a packet instead of "your answer could not be used").

    .venv/bin/python bench/replay_unusable.py LEDGER [--arm A ...] [--show]

The ledger's runs must have been kept (`bench --keep`): their trails and task repositories.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import re
import sys
import tarfile
import tempfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import git  # noqa: E402

from engine.edits.apply import dropped_definitions  # noqa: E402
from engine.edits.parse import parse  # noqa: E402
from engine.edits.proposal import Proposal  # noqa: E402
from engine.errors import EditFormatError  # noqa: E402
from engine.feedback.tree import examine_tree  # noqa: E402
from engine.project.pins import is_test_file  # noqa: E402
from engine.run.answers import lone_block_file  # noqa: E402
from engine.verify.execute import Verifier  # noqa: E402
from engine.verify.results import StageKind  # noqa: E402
from engine.verify.stages import Stage  # noqa: E402

# A file as a prompt shows it: its path, labels such as "  (test file: read only)", a fence.
SHOWN = re.compile(r"^(?P<path>\S+?)(?P<labels>(?:  \([^)\n]*\))*)\n(?P<fence>`{3,})\w*\n", re.M)
OUTCOMES = ("passes", "fails", "fragment", "no change", "unusable")


@dataclass(frozen=True)
class Unusable:
    """One answer the loop could not read, and where its run stood."""

    arm: str
    item_id: str
    n: int
    answer: str
    prompt: str
    named: list[str]
    test_cmd: str
    repo: Path
    rev: str  # the run branch's commit the iteration started from


def unusable_answers(ledger: Path, arms: set[str]) -> Iterator[Unusable | str]:
    """Each unusable answer in the ledger's kept trails; a string for a run whose trail is gone."""
    for line in ledger.read_text(encoding="utf-8").splitlines():
        run = json.loads(line)
        arm = run["arm"]
        if arms and arm["arm"] not in arms:
            continue
        trail = Path(arm["run_dir"])
        if not (trail / "events.jsonl").is_file():
            yield f"{run['item_id']} [{arm['arm']}]: its trail is gone"
            continue
        events = [json.loads(e) for e in (trail / "events.jsonl").read_text().splitlines()]
        started = next(e for e in events if e["type"] == "RunStarted")
        test_cmd = next(e["cmd"] for e in events if e["type"] == "StageStarted")
        commits = {e["n"]: e["sha"] for e in events if e["type"] == "Committed"}
        for event in events:
            if event["type"] != "ProposalReady" or not event.get("format_error"):
                continue
            n = event["n"]
            iteration = trail / "iterations" / f"{n:02d}"
            messages = json.loads((iteration / "prompt.json").read_text())
            before = [sha for k, sha in sorted(commits.items()) if k < n]
            yield Unusable(
                arm=arm["arm"],
                item_id=run["item_id"],
                n=n,
                answer=(iteration / "response.txt").read_text(),
                prompt=messages[-1]["content"],
                named=list(started["config"].get("files") or []),
                test_cmd=test_cmd,
                repo=trail.parents[2],
                rev=before[-1] if before else started["baseline"],
            )


def writable_shown(prompt: str) -> list[str]:
    """The files the prompt let the model change (an excerpt too; no test file), as the loop's
    `Prompt.reply_paths`."""
    return [m["path"] for m in SHOWN.finditer(prompt) if "(test file" not in m["labels"]]


def checkout(repo: Path, rev: str, into: Path) -> None:
    """The tree at `rev`, readable by the sandbox's user (nobody)."""
    with git.Repo(repo) as handle:
        archive = io.BytesIO()
        handle.archive(archive, rev, format="tar")
    archive.seek(0)
    with tarfile.open(fileobj=archive) as tar:
        tar.extractall(into, filter="data")
    for path in [into, *into.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)


async def replay(case: Unusable, verifier: Verifier) -> tuple[str, str]:
    """(outcome, detail) of one answer read by today's code."""
    sole = lone_block_file(writable_shown(case.prompt), case.named)
    try:
        proposal = parse(case.answer, "whole", lone_block_path=sole)
    except EditFormatError as error:
        return "unusable", error.problems[0] if error.problems else str(error)
    code = [edit for edit in proposal.edits if not is_test_file(edit.path)]
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "tree"
        root.mkdir()
        checkout(case.repo, case.rev, root)
        lost = dropped_definitions(Proposal(explanation="", edits=code, format="whole"), root)
        if lost:
            return "fragment", lost[0]
        changed = [
            edit
            for edit in code
            if not (root / edit.path).is_file() or (root / edit.path).read_text() != edit.content
        ]
        if not changed:
            return "no change", ", ".join(edit.path for edit in proposal.edits)
        for edit in changed:
            (root / edit.path).parent.mkdir(parents=True, exist_ok=True)
            (root / edit.path).write_text(edit.content or "", encoding="utf-8")
            (root / edit.path).chmod(0o644)
        examined = await examine_tree(root, verifier, baseline=None)
    counts = examined.judgement.tests
    tests = f"{counts.passed} passed, {counts.failed} failed" if counts else ""
    verdict = examined.judgement.verdict
    return ("passes" if verdict == "ok" else "fails"), f"{verdict} {tests}".strip()


async def measure(ledger: Path, arms: set[str], show: bool) -> None:
    from sandbox.gvisor import GvisorSandbox

    sandbox = GvisorSandbox()
    tally: dict[str, Counter[str]] = {}
    gone = 0
    try:
        for case in unusable_answers(ledger, arms):
            if isinstance(case, str):
                gone += 1
                continue
            stage = Stage(name="tests", kind=StageKind.TESTS, cmd=case.test_cmd)
            outcome, detail = await replay(case, Verifier(sandbox, [stage]))
            tally.setdefault(case.arm, Counter())[outcome] += 1
            if show or outcome == "passes":
                print(f"{case.item_id} [{case.arm}] iteration {case.n}: {outcome}: {detail}"[:160])
    finally:
        await sandbox.close()
    print(f"\n{'arm':18} {'unusable':>8}" + "".join(f" {o:>10}" for o in OUTCOMES))
    for arm, counts in sorted(tally.items()):
        total = sum(counts.values())
        print(f"{arm:18} {total:8}" + "".join(f" {counts[o]:10}" for o in OUTCOMES))
    if gone:
        print(f"({gone} runs' trails are gone: measured without --keep, or cleaned up)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("ledger", type=Path, help="a bench --ledger file whose runs were kept")
    parser.add_argument("--arm", action="append", default=[], help="only this arm (repeatable)")
    parser.add_argument("--show", action="store_true", help="a line for every answer replayed")
    args = parser.parse_args()
    if not args.ledger.is_file():
        parser.exit(2, f"replay_unusable: {args.ledger}: no such ledger file\n")
    asyncio.run(measure(args.ledger, set(args.arm), args.show))


if __name__ == "__main__":
    main()
