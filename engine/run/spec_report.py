"""The spec part of report.md (spec mode): which examples and constraints kept
failing, and which requirement looks ambiguous.

Examples map to fixloop's own tests by their ids (`example N:`); constraints map to the
model's tests by name (`test_constraint_N_...`, or shared words). The suggestions are
heuristics and say so: a person decides whether the spec or the model is wrong.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from engine.run.events import ReferencesChecked
from engine.run.outcome import IterationRecord
from engine.run.run_directory import read_events
from engine.spec.definition import Spec
from engine.spec.examples import example_number
from engine.verify.results import StageResult, TestCase

_CONSTRAINT_NAME = re.compile(r"test_constraint_?(\d+)")
_WORD = re.compile(r"[a-z0-9]+")
_COMMON = frozenset(
    {"the", "and", "for", "with", "that", "this", "are", "not", "test", "such", "when", "from"}
)
FAILING = frozenset({"failed", "error"})


class Miss(BaseModel):
    """One failure of a test in one verified iteration."""

    model_config = ConfigDict(frozen=True)

    n: int
    test: str  # the nodeid
    detail: str  # expected/actual, or the exception


class VerifiedIteration(BaseModel):
    """What one sandbox run said about the spec's tests."""

    model_config = ConfigDict(frozen=True)

    n: int
    failures: list[TestCase] = Field(default_factory=list)
    uncollected: list[str] = Field(default_factory=list)  # test files that did not import


class Requirement(BaseModel):
    """An example or a constraint, and the iterations it failed in."""

    model_config = ConfigDict(frozen=True)

    kind: str  # example | constraint
    number: int
    text: str
    misses: list[Miss] = Field(default_factory=list)


class SpecFindings(BaseModel):
    model_config = ConfigDict(frozen=True)

    verified: list[int]  # iterations that ran the tests
    examples: list[Requirement]
    constraints: list[Requirement]
    unmapped: list[Miss]  # failing model tests that name no constraint
    own_tests_passed: list[int]  # iterations where every model-written test passed


def verified_iterations(
    run_dir: Path, records: Sequence[IterationRecord]
) -> list[VerifiedIteration]:
    """The test reports of every iteration that reached the sandbox, from the run directory."""
    found = []
    for record in records:
        directory = run_dir / "iterations" / f"{record.n:02d}"
        stages = []
        for path in sorted(directory.glob("stage-*.json")):
            try:
                stages.append(StageResult.model_validate_json(path.read_text(encoding="utf-8")))
            except (OSError, ValidationError):
                continue
        reports = [stage.report for stage in stages if stage.report is not None]
        if not reports:
            continue
        found.append(
            VerifiedIteration(
                n=record.n,
                failures=[t for r in reports for t in r.tests if t.outcome in FAILING],
                uncollected=[e.nodeid for r in reports for e in r.collection_errors],
            )
        )
    return found


def spec_findings(spec: Spec, runs: Sequence[VerifiedIteration]) -> SpecFindings:
    examples = {
        n: Requirement(kind="example", number=n, text=e.line())
        for n, e in enumerate(spec.examples, start=1)
    }
    constraints = {
        n: Requirement(kind="constraint", number=n, text=c)
        for n, c in enumerate(spec.constraints, start=1)
    }
    misses: dict[tuple[str, int], list[Miss]] = {}
    unmapped: list[Miss] = []
    own_passed = []
    for run in runs:
        own_failed = False
        for case in run.failures:
            miss = Miss(n=run.n, test=case.nodeid, detail=_detail(case))
            path = case.nodeid.split("::")[0]
            if path == spec.examples_file:
                number = example_number(case.nodeid)
                if number in examples:
                    misses.setdefault(("example", number), []).append(miss)
                continue
            if path == spec.tests:
                own_failed = True
                found = constraint_of(case.nodeid, spec.constraints)
                if found is None:
                    unmapped.append(miss)
                else:
                    misses.setdefault(("constraint", found), []).append(miss)
        for nodeid in run.uncollected:
            if nodeid == spec.examples_file:
                for number in examples:
                    detail = "the examples' file did not import"
                    misses.setdefault(("example", number), []).append(
                        Miss(n=run.n, test=nodeid, detail=detail)
                    )
            elif nodeid == spec.tests:
                own_failed = True
                unmapped.append(Miss(n=run.n, test=nodeid, detail="the file did not import"))
        if not own_failed:
            own_passed.append(run.n)
    return SpecFindings(
        verified=[run.n for run in runs],
        examples=[
            r.model_copy(update={"misses": misses.get(("example", n), [])})
            for n, r in examples.items()
        ],
        constraints=[
            r.model_copy(update={"misses": misses.get(("constraint", n), [])})
            for n, r in constraints.items()
        ],
        unmapped=unmapped,
        own_tests_passed=own_passed,
    )


def constraint_of(nodeid: str, constraints: Sequence[str]) -> int | None:
    """The constraint a model-written test checks: its `test_constraint_N` name, or the one
    constraint sharing at least two words with the test's name."""
    name = nodeid.split("::")[-1].split("[")[0].lower()
    match = _CONSTRAINT_NAME.search(name)
    if match and 1 <= int(match[1]) <= len(constraints):
        return int(match[1])
    words = _words(name.replace("_", " "))
    scores = [(len(words & _words(c)), n) for n, c in enumerate(constraints, start=1)]
    best = max(scores, default=(0, 0))
    if best[0] >= 2 and [s for s, _ in scores].count(best[0]) == 1:
        return best[1]
    return None


def ambiguities(findings: SpecFindings) -> list[str]:
    """Which requirement looks ambiguous, and why — most telling first."""
    if not findings.verified:
        return []
    last = findings.verified[-1]
    several = len(findings.verified) > 1  # "every iteration" means little after only one
    found = []
    failing_now = [e for e in findings.examples if e.misses and e.misses[-1].n == last]
    if len(failing_now) * 2 > len(findings.examples):
        found.append(
            f"{len(failing_now)} of {len(findings.examples)} examples fail in the last verified "
            f"iteration ({last}): the module looks wrong as a whole, not one requirement "
            "ambiguous; read its code against the description"
        )
    for example in findings.examples:
        if not example.misses:
            continue
        shown = f"example {example.number} (`{example.text}`)"
        failed_last = example.misses[-1].n == last
        details = list(dict.fromkeys(m.detail for m in example.misses))
        if failed_last and last in findings.own_tests_passed:
            found.append(
                f"{shown}: still failing while every test the model wrote from the description "
                "passed — the model reads the description differently; does the description "
                "say what this example shows?"
            )
        elif len(details) > 1:
            tried = "; then ".join(details[:3])
            found.append(
                f"{shown}: the model's answers kept changing ({tried}) — the description may "
                "not pin this case down"
            )
        elif several and len(example.misses) == len(findings.verified):
            found.append(f"{shown}: failed in every verified iteration the same way")
    for constraint in findings.constraints:
        failed_in = {m.n for m in constraint.misses}
        if several and len(failed_in) == len(findings.verified):
            found.append(
                f'constraint {constraint.number} ("{constraint.text}"): the model\'s own test '
                "of it failed in every verified iteration — it may contradict an example or "
                "leave the expected behaviour open"
            )
    return found


def report_lines(spec: Spec, run_dir: Path, records: Sequence[IterationRecord]) -> list[str]:
    """The spec section, from what the run directory holds."""
    references = [
        f"iteration {event.n}: {problem}"
        for event in read_events(run_dir / "events.jsonl")
        if isinstance(event, ReferencesChecked)
        for problem in event.problems
    ]
    findings = spec_findings(spec, verified_iterations(run_dir, records))
    return spec_section(spec, findings, references)


def spec_section(spec: Spec, findings: SpecFindings, references: Sequence[str] = ()) -> list[str]:
    """report.md's lines for spec mode."""
    lines = ["## The spec: what kept failing", ""]
    verified = ", ".join(str(n) for n in findings.verified) or "none"
    lines += [
        f"Spec `{spec.name}`: {spec.module} (`{spec.function.text}`), tests {spec.tests}, "
        f"examples as tests in {spec.examples_file}. Iterations that ran the tests: {verified}.",
        "",
        "| requirement | failed in iterations | last failure |",
        "| --- | --- | --- |",
    ]
    for requirement in [*findings.examples, *findings.constraints]:
        label = f"{requirement.kind} {requirement.number}: {requirement.text}"
        if requirement.misses:
            iterations = ", ".join(str(n) for n in dict.fromkeys(m.n for m in requirement.misses))
            last = requirement.misses[-1].detail
        else:
            iterations, last = "—", "passed" if findings.verified else "never ran"
        lines.append(f"| {_cell(label)} | {iterations} | {_cell(last)} |")
    lines.append("")
    if findings.unmapped:
        lines += ["Failing tests of the model that name no constraint:", ""]
        lines += [f"- iteration {m.n}: `{m.test}` — {m.detail}" for m in findings.unmapped[-6:]]
        lines.append("")
    if references:
        lines += ["Reference errors (the tests did not fit the module; nothing ran):", ""]
        lines += [f"- {line}" for line in references[-6:]]
        lines.append("")
    lines += ["### Which requirement looks ambiguous", ""]
    suggestions = ambiguities(findings)
    if suggestions:
        lines += [f"- {s}" for s in suggestions]
    elif not findings.verified:
        lines.append(
            "- No iteration ran the tests, so no requirement can be blamed: the run ended "
            "before (see the reason above)."
        )
    else:
        lines.append(
            "- No example or constraint failed consistently; look at the last packet and "
            "the reason above."
        )
    lines.append("")
    return lines


def _detail(case: TestCase) -> str:
    if case.comparison:
        return f"false: {_short(case.actual)} {case.comparison} {_short(case.expected)}"
    if case.expected is not None or case.actual is not None:
        return f"expected {_short(case.expected)}, got {_short(case.actual)}"
    if case.exception_type:
        message = (case.exception_message or "").splitlines()[0] if case.exception_message else ""
        return f"{case.exception_type}: {_short(message)}" if message else case.exception_type
    return _short(case.explanation or case.outcome)


def _short(text: str | None, limit: int = 80) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) >= 3 and w not in _COMMON}
