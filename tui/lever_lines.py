"""The strategy's moves in one short line each, said the same by the app's history pane and the
headless printer: a first answer sampled, sampled candidates asked in one request, an answer
asked again, a verified (or dropped) candidate, the chosen one, a change of strategy, and the
fix pass's formatting. No Textual here: the headless printer imports it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: the app's first frame loads no event model
    from engine.run.events import (
        AnswerReasked,
        CandidateChosen,
        CandidateVerified,
        Formatted,
        ModelRequested,
        StrategyChanged,
    )


def held_back_line(files: Sequence[str]) -> str:
    """`test edits held back: tests/test_x.py`: an answer's edits to pinned test files, not
    applied (the engine's wording, as in the iteration's record)."""
    from engine.run.no_change import held_back_summary  # loaded by then: events are folding

    return held_back_summary(files)


def sampled_line(event: ModelRequested) -> str | None:
    """`first answer sampled at temperature 0.7: an earlier answer changed nothing`; None for
    an answer asked as usual."""
    if not event.sampled_because or event.temperature is None:
        return None
    return f"first answer sampled at temperature {event.temperature:g}: {event.sampled_because}"


def together_line(event: ModelRequested) -> str | None:
    """`candidates 2-3 asked in one request (n = 2)`, said at the first of them; None for an
    answer asked on its own (a server that ignores `n` sends one answer: the rest are asked
    each on its own after it)."""
    if event.together < 2 or event.candidate != 2:  # the sampled candidates: 2 ... N
        return None
    last = event.candidate + event.together - 1
    return f"candidates {event.candidate}-{last} asked in one request (n = {event.together})"


def reasked_line(event: AnswerReasked) -> str:
    """`the answer changed no file: asked again`."""
    return f"{event.reason or 'the answer changed nothing'}: asked again"


def verified_line(event: CandidateVerified) -> str:
    """`candidate 1: failing (4 passed, 1 failed) · textstats/core.py`, or why it was dropped
    before any sandbox ran."""
    if event.dropped:
        return f"candidate {event.k} dropped: {event.dropped}"
    tests = event.tests or {}
    counts = (
        f"{tests.get('passed', 0)} passed, {tests.get('failed', 0) + tests.get('errors', 0)} failed"
        if tests
        else "no test report"
    )
    files = ", ".join(event.files) or "no file"
    return f"candidate {event.k}: {event.verdict.replace('_', ' ')} ({counts}) · {files}"


def chosen_line(event: CandidateChosen, of: int = 0) -> str:
    """`candidate 2 of 3 chosen: <the ranking's why>`, or `candidate 2 of 3 chosen by you`."""
    which = f"candidate {event.k}" + (f" of {of}" if of else "")
    if event.why.endswith("by you"):  # "chosen by you", "edited by you"
        return f"{which} {event.why}"
    return f"{which} chosen: {event.why}" if event.why else f"{which} chosen"


def strategy_line(event: StrategyChanged) -> str:
    """`restarted from the baseline: <reason>` or `escalated to <model>: <reason>`."""
    if event.kind == "escalate":
        return f"escalated to {event.model or 'the escalation model'}: {event.reason}"
    return f"restarted from the baseline: {event.reason}"


def formatted_line(event: Formatted) -> str | None:
    """`formatted: 2 files`, with the pinned test files it left alone, or that the fix
    command failed; None when it changed nothing (said every iteration, it would be noise)."""
    if event.failed:
        return "formatter failed: nothing applied"
    if event.truncated:
        return "formatter changed too much to bring back: nothing applied"
    said = []
    if event.files:
        said.append(f"formatted: {len(event.files)} file{'s' if len(event.files) != 1 else ''}")
    if event.held_back:
        said.append(f"not formatted (pinned tests): {', '.join(event.held_back)}")
    if event.refused:
        said.append(f"not formatted (a link in the way): {', '.join(event.refused)}")
    return "; ".join(said) or None
