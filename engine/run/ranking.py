"""How an iteration's verified candidates are ranked, and the diffs they are ranked by
(ARCHITECTURE.md, "Candidates"): verified ok > most tests passing > fewest failing >
smallest diff; a suspicious pass only when nothing else was verified."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from engine.feedback.tree import Verification
from engine.run.gate import Choice
from engine.verify.verdict import Verdict


class Ranked(Protocol):
    """What the ranking reads of a candidate (`candidates.Candidate` is one): its number, its
    diff, and its verification if it got one."""

    @property
    def k(self) -> int: ...
    @property
    def diff(self) -> str: ...
    @property
    def verification(self) -> Verification | None: ...


def best_choice(candidates: Sequence[Ranked]) -> Choice | None:
    """The ranking's pick among the verified: verified ok > most tests passing > fewest
    failures > smallest diff; a suspicious pass only when nothing else was verified."""
    verified = [c for c in candidates if c.verification is not None]
    honest = [c for c in verified if c.verification and not suspicious(c.verification)]
    pool = honest or verified
    if not pool:
        return None
    best = max(pool, key=rank)
    return Choice(decision="pick", k=best.k, why=why_best(best, len(verified)))


def rank(candidate: Ranked) -> tuple[int, int, int, int, int]:
    assert candidate.verification is not None
    judgement = candidate.verification.judgement
    tests = judgement.tests
    passed = tests.passed if tests else -1
    failing = tests.failed + tests.errors if tests else 1 << 30
    ok = judgement.verdict is Verdict.OK
    return (int(ok), passed, -failing, -diff_size(candidate.diff), -candidate.k)


def why_best(best: Ranked, verified: int) -> str:
    assert best.verification is not None
    judgement = best.verification.judgement
    if verified == 1:
        return "the only candidate verified"
    if judgement.verdict is Verdict.OK:
        return f"verified ok, the smallest diff of the ok ones ({diff_size(best.diff)} lines)"
    tests = judgement.tests
    if tests is not None:
        return f"the most tests passing ({tests.passed}), then the fewest failing"
    return f"the best of {verified} verified ({judgement.verdict.value})"


def suspicious(verification: Verification) -> bool:
    return verification.judgement.verdict is Verdict.SUSPICIOUS_PASS


def tree_diff(before: Path, after: Path, paths: Sequence[str]) -> str:
    """A unified diff of `paths` between two trees, in git's a/ b/ form."""
    chunks: list[str] = []
    for path in sorted(paths):
        old, new = _lines(before / path), _lines(after / path)
        chunks += difflib.unified_diff(
            old, new, f"a/{path}" if old else "/dev/null", f"b/{path}" if new else "/dev/null"
        )
    return "".join(line if line.endswith("\n") else f"{line}\n" for line in chunks)


def diff_size(diff: str) -> int:
    """Lines added or removed."""
    return sum(
        1 for line in diff.splitlines() if line[:1] in "+-" and not line.startswith(("+++", "---"))
    )


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8").splitlines(keepends=True)
    except (OSError, UnicodeDecodeError):
        return []
