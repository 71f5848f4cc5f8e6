"""One verification of a working tree, judged and distilled: what `fixloop-tui verify`
prints and what the loop reads after every iteration.

Runs the stages, classifies the root failure, checks the pass against the
baseline's pinned tests, and builds the repair packet.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from engine.feedback.distill import distill
from engine.feedback.packet import DEFAULT_CAP, RepairPacket
from engine.feedback.raw import raw_feedback
from engine.project.git_plumbing import open_repo
from engine.project.modules import modules_of, project_modules
from engine.project.pins import (
    AddedSkip,
    TestChange,
    TestPins,
    added_skips,
    changed_tests,
    config_changes,
)
from engine.text.tokens import count_tokens
from engine.verify.baseline_tests import BaselineTests, check_baseline_tests, no_tests_reason
from engine.verify.classify import classify, signature
from engine.verify.execute import StageCallback, Verifier
from engine.verify.fix import FixRun
from engine.verify.focus import narrowed_note, narrowing
from engine.verify.results import StageResult
from engine.verify.verdict import Judgement, Verdict, judge, pass_doubts


class Baseline(BaseModel):
    """What a pass is checked against: a git revision of the project and its test count."""

    model_config = ConfigDict(frozen=True)

    repo: Path
    rev: str = "HEAD"
    collected: int | None = None
    pins: TestPins | None = None  # the test files' fingerprints at `rev`, when already known
    tests: BaselineTests | None = None  # the test ids the run started with (a repair run)


class Verification(BaseModel):
    """Everything one verifier run produced."""

    model_config = ConfigDict(frozen=True)

    judgement: Judgement
    stages: list[StageResult]
    packet: RepairPacket | None = None
    packet_text: str = ""
    packet_tokens: int = 0
    changed_tests: list[TestChange] = Field(default_factory=list)
    added_skips: list[AddedSkip] = Field(default_factory=list)
    new_tests: list[str] = Field(default_factory=list)  # test ids the baseline did not have
    notes: list[str] = Field(default_factory=list)
    fixed: FixRun | None = None  # the fix pass (`fix_cmd`) that ran on the tree first


def working_tree_diff(repo: Path, rev: str = "HEAD") -> tuple[str, list[str]]:
    """(unified diff, changed paths) of the working tree against `rev`, untracked files included."""
    with open_repo(repo) as handle:
        diff = handle.git.diff(rev, "--no-color", "--no-ext-diff", "--no-textconv")
        paths = [p for p in handle.git.diff(rev, "--name-only").splitlines() if p]
        paths += handle.untracked_files
    return diff, sorted(set(paths))


async def examine_tree(
    root: Path,
    verifier: Verifier,
    *,
    baseline: Baseline | None,
    touched: Sequence[str] = (),
    last_diff: str | None = None,
    previous: Sequence[StageResult] | None = None,
    iteration: int | None = None,
    max_iterations: int | None = None,
    on_stage: StageCallback | None = None,
    fixed: FixRun | None = None,
    after_baseline: bool = False,
) -> Verification:
    """Run the stages, classify, judge and distill. The packet is not rendered yet: the loop
    adds its notes first; `rendered(examine_tree(...))` is the whole verification.

    `after_baseline`: `root` is a candidate's tree and the run's baseline passed its
    environment checks, so what the candidate's code does inside the sandbox (fill its disk,
    try the network) is a failure for the model to fix, not the environment's (`classify`).

    `fixed`: the fix pass that already ran on `root`; a failed one is a failing stage of
    this verification (a passing one is not: only the check pass's status counts), and
    what it held back is in the packet's notes.

    Failing tests first (`Verifier.failing_first`, `engine/verify/focus.py`): after a
    verification that failed (`previous`), the tests that failed then run first, alone; when
    they still fail, that is the verification (its packet says so), else the whole command
    runs, and only it can be ok."""
    judged = functools.partial(
        _judged,
        root,
        verifier,
        baseline=baseline,
        touched=touched,
        last_diff=last_diff,
        previous=previous,
        iteration=iteration,
        max_iterations=max_iterations,
        fixed=fixed,
        after_baseline=after_baseline,
    )
    plan = narrowing(verifier.stages, previous) if verifier.failing_first else None
    done: list[StageResult] = []
    if plan is not None:
        done = await verifier.run(root, on_stage, plan=plan)
        narrowed = judged(done)
        if stands(narrowed):
            return narrowed
    return judged(await verifier.run(root, on_stage, done=done))


def stands(narrowed: Verification) -> bool:
    """Whether a narrowed run is the verification: it failed on its own merits, and each
    narrowed stage ran no more tests than it was given (a plugin that could not narrow ran
    them all, and its counts would add what it carried twice)."""
    if narrowed.judgement.verdict is not Verdict.FAILING:
        return False
    return all(
        stage.report is None or stage.report.counts.collected <= len(stage.focus.tests)
        for stage in narrowed.stages
        if stage.focus is not None
    )


def _judged(
    root: Path,
    verifier: Verifier,
    stages: list[StageResult],
    *,
    baseline: Baseline | None,
    touched: Sequence[str],
    last_diff: str | None,
    previous: Sequence[StageResult] | None,
    iteration: int | None,
    max_iterations: int | None,
    fixed: FixRun | None,
    after_baseline: bool,
) -> Verification:
    """`stages`, run over `root`, classified, judged and distilled."""
    if fixed is not None and fixed.failed:
        stages = [fixed.stage, *stages]
    classification = classify(
        stages,
        project_modules=project_modules(root),
        touched_modules=modules_of(touched),
        after_baseline=after_baseline,
        tmpfs_mb=verifier.limits.tmpfs_mb,
        python=str(verifier.python) if verifier.python else None,
        project=str(verifier.project) if verifier.project else None,
    )
    changes: list[TestChange] = []
    skips: list[AddedSkip] = []
    notes: list[str] = []
    if baseline is not None:
        pins = baseline.pins or TestPins.from_commit(baseline.repo, baseline.rev)
        changes = changed_tests(pins, root)
        skips = added_skips(baseline.repo, baseline.rev, root)
        skips += config_changes(baseline.repo, baseline.rev, root)
    else:
        notes.append("no git baseline: test files could not be checked for edits or new skips")
    if (no_tests := no_tests_reason(stages)) is not None:
        notes.append(no_tests)  # a repair run refuses to start on this tree
    doubts = pass_doubts(
        stages,
        changed_tests=changes,
        added_skips=skips,
        baseline_collected=baseline.collected if baseline else None,
    )
    tests = check_baseline_tests(baseline.tests if baseline else None, stages)
    doubts += tests.doubts
    judgement = judge(
        stages, classification, doubts=doubts, signature=signature(stages, classification)
    )
    packet = None
    if judgement.verdict.value == "failing":
        packet = distill(
            stages,
            classification,
            iteration=iteration,
            max_iterations=max_iterations,
            previous=previous,
            last_diff=last_diff,
            notes=[
                *(fixed.notes() if fixed is not None else ()),
                *filter(None, [narrowed_note(stages)]),
            ],
        )
    return Verification(
        judgement=judgement,
        stages=stages,
        packet=packet,
        changed_tests=changes,
        added_skips=skips,
        new_tests=tests.new_tests,
        notes=notes,
        fixed=fixed,
    )


def rendered(
    verification: Verification,
    *,
    cap: int = DEFAULT_CAP,
    model: str | None = None,
    repeat_note: str | None = None,
    notes: Sequence[str] = (),
    runtime_values: bool = True,
) -> Verification:
    """The verification with its packet's text, the repeat note and `notes` added to it;
    without the failing frame's local variables unless `runtime_values`."""
    packet = verification.packet
    if packet is None:
        return verification
    if not runtime_values:
        packet = packet.without_runtime_values()
    if repeat_note or notes:
        packet = packet.model_copy(
            update={"repeat_note": repeat_note, "notes": [*packet.notes, *notes]}
        )
    text = packet.render(cap, lambda t: count_tokens(t, model))
    return verification.model_copy(
        update={
            "packet": packet,
            "packet_text": text,
            "packet_tokens": count_tokens(text, model) if text else 0,
        }
    )


def packet_for(
    examined: Verification,
    *,
    cap: int,
    model: str,
    raw: bool = False,
    runtime_values: bool = True,
    repeat_note: str | None = None,
    notes: Sequence[str] = (),
) -> Verification:
    """What the model is told of `examined`: its packet `rendered` with the repeat note and
    `notes`, or with `raw` the stages' output in its place, under the same cap (the packet
    stays in the verification, for the trail)."""
    result = rendered(
        examined,
        cap=cap,
        model=model,
        repeat_note=repeat_note,
        notes=notes,
        runtime_values=runtime_values,
    )
    if not raw or result.packet is None:
        return result
    text = raw_feedback(result.stages, cap, lambda t: count_tokens(t, model), notes)
    return result.model_copy(
        update={"packet_text": text, "packet_tokens": count_tokens(text, model)}
    )


def shown_again(
    verification: Verification, iteration: int, model: str | None = None
) -> Verification:
    """The verification with its packet's text naming `iteration`: a packet shown again (the
    iterations since changed nothing) would otherwise name the iteration it was first shown
    in. Raw feedback, or a note in the packet's place, has no such label and stays."""
    packet = verification.packet
    if packet is None or packet.iteration is None or packet.iteration == iteration:
        return verification
    head = packet.title() + ":"
    if not verification.packet_text.startswith(head):
        return verification
    packet = packet.model_copy(update={"iteration": iteration})
    text = packet.title() + ":" + verification.packet_text[len(head) :]
    return verification.model_copy(
        update={"packet": packet, "packet_text": text, "packet_tokens": count_tokens(text, model)}
    )
