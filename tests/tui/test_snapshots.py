"""SVG snapshots of every screen and modal, in two themes (three for the main screen).

The screens are fed fixed data — a run's events with fixed times, fixed packets, patches and
file texts — so nothing in a snapshot depends on the clock, a temp path or a random run id.
Update with `pytest tests/tui/test_snapshots.py --snapshot-update`, then look at the SVGs.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Input, TextArea

from engine.edits.proposal import Edit, Proposal
from engine.feedback.distill import distill
from engine.feedback.tree import Verification
from engine.project.paths import run_path
from engine.project.settings import Settings
from engine.project.trust import refusal
from engine.run.artifacts import CodeFile, IterationArtifacts
from engine.run.events import (
    AnswerReasked,
    BaseEvent,
    CandidateChosen,
    CandidateVerified,
    Committed,
    EditsApplied,
    IterationStarted,
    ModelRequested,
    ModelResponded,
    PacketReady,
    ProposalReady,
    ReviewRequested,
    ReviewResolved,
    RunFinished,
    RunStarted,
    StageFinished,
    StageStarted,
    StrategyChanged,
)
from engine.run.finish import Finished
from engine.run.gate import CandidateView, Choice
from engine.run.preview import FilePreview, ProposalPreview, file_diff
from engine.run.run_directory import RunSummary
from engine.verify.classify import Classification, ErrorClass, classify
from engine.verify.results import StageKind, StageResult, TestCounts
from engine.verify.verdict import Judgement, Verdict, judge, pass_doubts
from tests.engine.test_corpus import stage as corpus_stage
from tui.app import FixloopApp
from tui.interactive_gate import (
    CandidatesRequest,
    LastCheck,
    PassReviewRequest,
    ProposalReviewRequest,
)
from tui.screens.candidates import CandidatesScreen
from tui.screens.editor import EditorFile, EditorScreen
from tui.screens.end import EndScreen, RunOutcome
from tui.screens.quit import QuitScreen
from tui.screens.replay import ReplayScreen
from tui.screens.report import ReportScreen
from tui.screens.review import ReviewScreen
from tui.screens.runs import RunsScreen
from tui.screens.suspicious import SuspiciousPassScreen
from tui.screens.task import TaskScreen
from tui.screens.watch import WatchScreen
from tui.widgets.model_problem import ModelProblem
from tui.widgets.run_view import RunView

SnapCompare = Callable[..., bool]

PROJECT = Path("/home/you/textstats")
RUN_ID = "20261202-141503-a1b2"
BRANCH = f"fixloop/{RUN_ID}"
T0 = 1_764_684_903.0
TESTS = "python -m pytest -q"
BIG = (120, 40)
MEDIUM = (120, 36)
SMALL = (80, 24)

CORE = '''import re
from collections import Counter

WORD = re.compile(r"[A-Za-z']+")


def words(text: str) -> list[str]:
    return [w.lower() for w in WORD.findall(text)]


def word_count(text: str) -> int:
    return len(words(text))


def mean_word_length(text: str) -> float:
    found = words(text)
    if not found:
        return 0.0
    return sum(len(w) for w in found) // len(found)


def top_words(text: str, n: int) -> list[tuple[str, int]]:
    """The n most common words, most common first, ties in order of first use."""
    counts = Counter(words(text))
    return counts.most_common(n - 1)
'''
CORE_1 = CORE.replace("// len(found)", "/ len(found)")
CORE_2 = CORE_1.replace("most_common(n - 1)", "most_common(n)")
TEST_CORE = """from textstats import mean_word_length, top_words, word_count


def test_word_count_ignores_punctuation():
    assert word_count("Hello, world! Hello again.") == 4


def test_mean_word_length_is_exact():
    assert mean_word_length("ab abc") == 2.5


def test_top_words_returns_n():
    assert top_words("a b a c b a", 2) == [("a", 3), ("b", 2)]
"""
TEST_SKIPPED = TEST_CORE.replace(
    "def test_top_words_returns_n():",
    "import pytest\n\n\n@pytest.mark.skip\ndef test_top_words_returns_n():",
)
TOP_EXPECTED = "expected `[('a', 3), ('b', 2)]`, got `[('a', 3)]`"
INSTRUCTIONS = (
    "Fix only the failures above. Keep public names and signatures. "
    "Do not edit, skip or delete tests."
)
PACKET_0 = f"""Verification failed (iteration 1/4): 2 of 5 tests failing. Error class: logic.

FAILED: tests/test_core.py::test_mean_word_length_is_exact (tests/test_core.py:13)
  failing line: assert mean_word_length("ab abc") == 2.5
  expected: `2.5`
  actual:   `2`

Also failing:
- failed: tests/test_core.py::test_top_words_returns_n — {TOP_EXPECTED}

{INSTRUCTIONS}"""
PACKET_1 = f"""Verification failed (iteration 2/4): 1 of 5 tests failing. Error class: logic.
Progress: 1 test now passes that failed before; 1 still fails.

FAILED: tests/test_core.py::test_top_words_returns_n (tests/test_core.py:21)
  failing line: assert top_words("a b a c b a", 2) == [("a", 3), ("b", 2)]
  expected: `[('a', 3), ('b', 2)]`
  actual:   `[('a', 3)]`

Your last edit changed: textstats/core.py (lines 16-22).
{INSTRUCTIONS}"""


def git_diff(path: str, before: str, after: str) -> str:
    text = file_diff(path, before, after)
    return f"diff --git a/{path} b/{path}\nindex 0c1acf0..4de0a93 100644\n{text}"


DIFF_1 = git_diff("textstats/core.py", CORE, CORE_1)
DIFF_2 = git_diff("textstats/core.py", CORE_1, CORE_2)
ARTIFACTS = {
    0: IterationArtifacts(
        packet_text=PACKET_0,
        files=[CodeFile(path="textstats/core.py", text=CORE)],
    ),
    1: IterationArtifacts(
        packet_text=PACKET_1,
        diff=DIFF_1,
        response='```json\n{"explanation": "use true division in mean_word_length"}\n```',
        files=[
            CodeFile(path="textstats/core.py", text=CORE_1),
            CodeFile(path="tests/test_core.py", text=TEST_CORE),
        ],
    ),
    2: IterationArtifacts(
        diff=DIFF_2,
        files=[
            CodeFile(path="textstats/core.py", text=CORE_2),
            CodeFile(path="tests/test_core.py", text=TEST_CORE),
        ],
    ),
}


def counts(passed: int, failed: int) -> dict[str, int]:
    return {"collected": 5, "passed": passed, "failed": failed, "errors": 0, "skipped": 0}


def verification(
    n: int, t: float, exit_code: int, verdict: str, counts: dict[str, int]
) -> list[BaseEvent]:
    return [
        StageStarted(ts=t, n=n, stage="tests", cmd=TESTS),
        StageFinished(ts=t + 0.9, n=n, stage="tests", exit_code=exit_code, duration_ms=870),
        PacketReady(
            ts=t + 1.0,
            n=n,
            verdict=verdict,
            error_class="logic" if verdict == "failing" else "none",
            tests=counts,
        ),
    ]


def iteration(n: int, t: float, explanation: str, files: list[str]) -> list[BaseEvent]:
    return [
        IterationStarted(ts=t, n=n, max_n=4),
        ModelRequested(ts=t + 0.1, n=n, model="openai/gpt-4o-mini", prompt_tokens=812),
        ModelResponded(ts=t + 2.1, n=n, prompt_tokens=790, completion_tokens=58, cost_usd=0.000153),
        ProposalReady(ts=t + 2.2, n=n, explanation=explanation, files=files),
        ReviewRequested(ts=t + 2.2, n=n, kind="proposal"),
    ]


def applied(n: int, t: float, files: list[str], sha: str, explanation: str) -> list[BaseEvent]:
    return [
        ReviewResolved(ts=t, n=n, kind="proposal", decision="approve", by="person"),
        EditsApplied(ts=t + 0.1, n=n, files=files),
        Committed(ts=t + 0.2, n=n, sha=sha, message=f"fixloop[iter {n}/4]: {explanation}"),
    ]


def started() -> list[BaseEvent]:
    return [
        RunStarted(
            ts=T0,
            run_id=RUN_ID,
            task="Make the failing tests pass.",
            project=str(PROJECT),
            model="openai/gpt-4o-mini",
            sandbox="gvisor",
            max_iterations=4,
            branch=BRANCH,
            baseline="b0a1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9",
            config={"budget": {"max_tokens": 20000, "max_cost_usd": 0.5}},
        ),
        *verification(0, T0 + 0.2, 1, "failing", counts(3, 2)),
    ]


CORE_PY = ["textstats/core.py"]
SHA_1 = "3f2c1b0a9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b"
SHA_2 = "9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b2a1f0e"


def until_second_review() -> list[BaseEvent]:
    return [
        *started(),
        *iteration(1, T0 + 1.5, "use true division in mean_word_length", CORE_PY),
        *applied(1, T0 + 7.0, CORE_PY, SHA_1, "use true division in mean_word_length"),
        *verification(1, T0 + 7.3, 1, "failing", counts(4, 1)),
        *iteration(2, T0 + 8.5, "return n words, not n - 1", CORE_PY),
    ]


def finished_run() -> list[BaseEvent]:
    return [
        *until_second_review(),
        *applied(2, T0 + 12.0, CORE_PY, SHA_2, "return n words, not n - 1"),
        *verification(2, T0 + 12.3, 0, "ok", counts(5, 0)),
        RunFinished(
            ts=T0 + 13.4,
            status="ok",
            reason="verified green on iteration 2",
            iterations=2,
            branch=BRANCH,
            final_commit=SHA_2,
            tokens=1696,
            cost_usd=0.000306,
            duration_s=13.4,
        ),
    ]


def until_suspicious_pass() -> list[BaseEvent]:
    files = ["textstats/core.py", "tests/test_core.py"]
    return [
        *started(),
        *iteration(1, T0 + 1.5, "fix the mean; that top_words test is wrong", files),
        *applied(1, T0 + 7.0, files, SHA_1, "fix the mean; that top_words test is wrong"),
        *verification(1, T0 + 7.3, 0, "suspicious_pass", {**counts(4, 0), "skipped": 1}),
        ReviewRequested(ts=T0 + 8.4, n=1, kind="pass", reasons=PASS_REASONS),
    ]


PASS_REASONS = [
    "test file tests/test_core.py was modified since the baseline",
    "added @pytest.mark.skip at tests/test_core.py:23",
]
SQUASH_DIFF = git_diff("textstats/core.py", CORE, CORE_2)
OUTCOME = RunOutcome(
    status="ok",
    reason="verified green on iteration 2",
    iterations=2,
    branch=BRANCH,
    tokens=1696,
    cost_usd=0.000306,
    duration_s=13.4,
    diff=SQUASH_DIFF,
)
MEDIUM = (120, 36)


def app_in(theme: str) -> FixloopApp:
    settings = Settings(model="openai/gpt-4o-mini", sandbox="gvisor", approve="step", theme=theme)
    return FixloopApp(PROJECT, settings, autostart=False)


def showing(
    events: list[BaseEvent],
    *,
    select: int | None = None,
    then: Any = None,
    artifacts: dict[int, IterationArtifacts] = ARTIFACTS,
):
    """A run_before that loads fixed events into the main screen, then pushes a screen."""

    async def run_before(pilot: Pilot[Any]) -> None:
        app = pilot.app
        assert isinstance(app, FixloopApp)
        await pilot.pause()
        if events:
            for event in events:
                app.main.view.apply(event)
            app.main.load_view(app.main.view, artifacts)
        if select is not None:
            app.main.select(select)
        await settle(pilot)
        if then is not None:
            await app.push_screen(then())
            for widget in [*app.screen.query(Input), *app.screen.query(TextArea)]:
                widget.cursor_blink = False
        await settle(pilot)

    return run_before


async def settle(pilot: Pilot[Any]) -> None:
    """Wait until the workers that load the panes are done and their results are shown."""
    while any(worker.is_running for worker in pilot.app.workers):
        await pilot.pause(0.01)
    await pilot.pause()


def review_request() -> ProposalReviewRequest:
    proposal = Proposal(
        explanation="return n words, not n - 1",
        edits=[
            Edit(path="textstats/core.py", search="most_common(n - 1)", replace="most_common(n)"),
            Edit(path="tests/test_core.py", content=TEST_SKIPPED),
        ],
        format="json",
    )
    files = [
        FilePreview(path="textstats/core.py", before=CORE_1, after=CORE_2),
        FilePreview(path="tests/test_core.py", before=TEST_CORE, after=TEST_SKIPPED, pinned=True),
    ]
    diff = "".join(file_diff(f.path, f.before, f.after) for f in files)
    return ProposalReviewRequest(
        n=2,
        max_n=4,
        proposal=proposal,
        held_back=["tests/test_core.py"],
        preview=ProposalPreview(files=files, diff=diff),
        future=Future(),
        last_check=LastCheck(1, counts(4, 1)),
    )


def pass_request() -> PassReviewRequest:
    return PassReviewRequest(
        n=1,
        reasons=PASS_REASONS,
        test_diff=git_diff("tests/test_core.py", TEST_CORE, TEST_SKIPPED),
        future=Future(),
    )


MEAN_EDIT = Edit(path="textstats/core.py", search="// len(found)", replace="/ len(found)")
TOP_EDIT = Edit(path="textstats/core.py", search="most_common(n - 1)", replace="most_common(n)")
CORE_MAP = CORE_2.replace("sum(len(w) for w in found)", "sum(map(len, found))")
MAP_EDIT = Edit(
    path="textstats/core.py",
    search="sum(len(w) for w in found) // len(found)",
    replace="sum(map(len, found)) / len(found)",
)


def candidate(
    k: int, verdict: str, tests: TestCounts, edits: list[Edit], after: dict[str, str], **more: Any
) -> tuple[CandidateView, ProposalPreview]:
    """A verified candidate of iteration 1 leaving the files `after`, and its preview."""
    before = {"textstats/core.py": CORE, "tests/test_core.py": TEST_CORE}
    files = [
        FilePreview(path=path, before=before[path], after=text) for path, text in after.items()
    ]
    diff = "".join(git_diff(f.path, f.before or "", f.after or "") for f in files)
    explanation = more.pop("explanation")
    view = CandidateView(
        k=k,
        verdict=verdict,
        tests=tests,
        explanation=explanation,
        files=list(after),
        diff=diff,
        proposal=Proposal(explanation=explanation, edits=edits, format="json"),
        **more,
    )
    return view, ProposalPreview(files=files, diff=diff)


def candidates_request() -> CandidatesRequest:
    """Iteration 1's three verified candidates, numbered from 1 as in the trail: the ranking's
    best, another green one, and a pass that skips a test."""
    verified = [
        candidate(
            1,
            "ok",
            TestCounts(collected=5, passed=5),
            [MEAN_EDIT, TOP_EDIT],
            {"textstats/core.py": CORE_2},
            explanation="true division; return n words, not n - 1",
            summary="tests: 5 passed",
        ),
        candidate(
            2,
            "ok",
            TestCounts(collected=5, passed=5),
            [MAP_EDIT, TOP_EDIT],
            {"textstats/core.py": CORE_MAP},
            explanation="sum the lengths with map, divide exactly; return n words",
            summary="tests: 5 passed",
        ),
        candidate(
            3,
            "suspicious_pass",
            TestCounts(collected=5, passed=4, skipped=1),
            [MEAN_EDIT, Edit(path="tests/test_core.py", content=TEST_SKIPPED)],
            {"textstats/core.py": CORE_1, "tests/test_core.py": TEST_SKIPPED},
            explanation="true division; the top_words test is wrong",
            summary="tests: 4 passed, 1 skipped",
            suspicious=PASS_REASONS,
        ),
    ]
    views = [view for view, _ in verified]
    previews = {view.k: preview for view, preview in verified}
    best = Choice(
        decision="pick", k=1, why="verified ok, the smallest diff of the ok ones (4 lines)"
    )
    return CandidatesRequest(
        n=1, max_n=4, candidates=views, best=best, previews=previews, future=Future()
    )


def until_the_candidates() -> list[BaseEvent]:
    return [*started(), IterationStarted(ts=T0 + 1.5, n=1, max_n=4)]


def check_result() -> Verification:
    stage = StageResult(
        name="tests", kind=StageKind.TESTS, cmd=TESTS, exit_code=1, duration_ms=1830
    )
    judgement = Judgement(
        verdict=Verdict.FAILING,
        classification=Classification(error_class=ErrorClass.LOGIC, primary="assertion"),
        tests=TestCounts(collected=5, passed=3, failed=2),
    )
    return Verification(judgement=judgement, stages=[stage], packet_text=PACKET_0)


def no_tests_check() -> Verification:
    """The checkout of a project without tests, verified: the real captured pytest exit 5."""
    stages = [corpus_stage("no_tests")]
    classification = classify(stages, project_modules=set())
    judgement = judge(stages, classification, doubts=pass_doubts(stages))
    packet = distill(stages, classification, iteration=1, max_iterations=4)
    return Verification(
        judgement=judgement, stages=stages, packet=packet, packet_text=packet.render()
    )


# -- the main screen --------------------------------------------------------------------------


@pytest.mark.parametrize("theme", ["dark", "light", "high-contrast"])
def test_main_screen_with_a_finished_run(snap_compare: SnapCompare, theme: str) -> None:
    app = app_in(theme)
    assert snap_compare(app, terminal_size=BIG, run_before=showing(finished_run(), select=1))


def test_main_screen_at_80x24(snap_compare: SnapCompare) -> None:
    app = app_in("dark")
    assert snap_compare(app, terminal_size=SMALL, run_before=showing(finished_run()))


def test_main_screen_header_at_80x24_with_long_names(snap_compare: SnapCompare) -> None:
    """Long names shorten the header's lines; neither wraps over the other."""
    events = until_second_review()
    first = events[0]
    assert isinstance(first, RunStarted)
    events[0] = first.model_copy(
        update={
            "model": "ollama_chat/qwen2.5-coder:1.5b-instruct-q4_K_M",
            "sandbox": "docker, runc allowed (not gVisor!)",
        }
    )
    app = app_in("dark")
    assert snap_compare(app, terminal_size=SMALL, run_before=showing(events))


def rejected_run() -> list[BaseEvent]:
    """Iteration 2's proposal rejected with a note; iteration 3 asks again."""
    note = "no: top_words must keep ties in order of first use\nuse Counter.most_common"
    return [
        *until_second_review(),
        ReviewResolved(
            ts=T0 + 10.0,
            n=2,
            kind="proposal",
            decision="reject",
            note="rejected by you",
            comment=note,
            by="person",
        ),
        *iteration(3, T0 + 10.5, "return n words, ties in order of first use", CORE_PY),
    ]


def test_main_screen_with_a_rejected_proposal(snap_compare: SnapCompare) -> None:
    app = app_in("dark")
    nothing_applied = {**ARTIFACTS, 2: IterationArtifacts(files=ARTIFACTS[1].files)}
    run_before = showing(rejected_run(), select=2, artifacts=nothing_applied)
    assert snap_compare(app, terminal_size=BIG, run_before=run_before)


def levers_run() -> list[BaseEvent]:
    """Three candidates in iteration 1 (the person picks 1), a re-asked answer in iteration 2
    that fails the same way: the stronger model takes over and the run restarts; iteration 3
    waits for its review."""
    first = started()[0]
    assert isinstance(first, RunStarted)
    config = {**first.config, "candidates": 3}
    t = T0 + 1.5
    tests = counts(4, 1)
    chosen = "fixloop[iter 1/4]: sum the lengths with map; divide exactly"
    return [
        first.model_copy(update={"config": config}),
        *started()[1:],
        IterationStarted(ts=t, n=1, max_n=4),
        *[ModelRequested(ts=t, n=1, model="openai/gpt-4o-mini", candidate=k) for k in (1, 2, 3)],
        *[
            ModelResponded(ts=t + 2, n=1, prompt_tokens=790, completion_tokens=58, candidate=k)
            for k in (1, 2, 3)
        ],
        CandidateVerified(ts=t + 4, n=1, k=1, verdict="failing", tests=tests, files=CORE_PY),
        CandidateVerified(ts=t + 4, n=1, k=2, verdict="failing", tests=tests, files=CORE_PY),
        CandidateVerified(ts=t + 4, n=1, k=3, dropped="changes no file"),
        CandidateChosen(ts=t + 6, n=1, k=2, why="chosen by you", by="person"),
        *applied(1, t + 6.1, CORE_PY, SHA_1, chosen)[1:],
        *verification(1, t + 6.3, 1, "failing", tests),
        *iteration(2, t + 8, "divide exactly", CORE_PY)[:3],
        AnswerReasked(ts=t + 10, n=2, reason="the answer changed no file", temperature=0.7),
        *iteration(2, t + 10, "divide exactly", CORE_PY)[1:],
        *applied(2, t + 14, CORE_PY, SHA_2, "divide exactly"),
        *verification(2, t + 14.3, 1, "failing", tests),
        StrategyChanged(
            ts=t + 15.4,
            n=2,
            kind="escalate",
            reason="stalled: the same error 2 times in a row",
            model="openai/gpt-4o",
        ),
        StrategyChanged(
            ts=t + 15.5,
            n=2,
            kind="restart",
            reason="the same error 2 times in a row: the code is back as it was at the start",
        ),
        # Waiting for a review: no spinner in the header, so the frame does not depend on time.
        *iteration(3, t + 17, "the mean is exact; return n words", CORE_PY),
    ]


@pytest.mark.parametrize("size", [SMALL, BIG], ids=["80x24", "120x40"])
def test_main_screen_shows_the_levers(snap_compare: SnapCompare, size: tuple[int, int]) -> None:
    app = app_in("dark")
    run_before = showing(levers_run(), select=2)
    assert snap_compare(app, terminal_size=size, run_before=run_before)


def test_main_screen_shows_the_next_file_after_f(snap_compare: SnapCompare) -> None:
    app = app_in("light")
    run_before = showing(finished_run(), select=1)
    assert snap_compare(app, terminal_size=BIG, run_before=run_before, press=["f"])


# -- the modals -------------------------------------------------------------------------------


@pytest.mark.parametrize("theme", ["dark", "light"])
def test_review_modal(snap_compare: SnapCompare, theme: str) -> None:
    app = app_in(theme)
    run_before = showing(until_second_review(), then=lambda: ReviewScreen(review_request()))
    assert snap_compare(app, terminal_size=BIG, run_before=run_before)


def test_review_modal_at_80x24_with_test_edits_allowed(snap_compare: SnapCompare) -> None:
    app = app_in("dark")
    run_before = showing(until_second_review(), then=lambda: ReviewScreen(review_request()))
    assert snap_compare(app, terminal_size=SMALL, run_before=run_before, press=["t"])


@pytest.mark.parametrize("size", [SMALL, MEDIUM], ids=["80x24", "120x36"])
def test_review_modal_with_the_note_box_open(
    snap_compare: SnapCompare, size: tuple[int, int]
) -> None:
    app = app_in("dark")
    run_before = showing(until_second_review(), then=lambda: ReviewScreen(review_request()))
    typed = [*"use a Counter: it keeps", "enter", *"the order of first use"]
    assert snap_compare(app, terminal_size=size, run_before=run_before, press=["n", *typed])


def test_review_modal_with_the_diff_full_screen_at_80x24(snap_compare: SnapCompare) -> None:
    app = app_in("dark")
    run_before = showing(until_second_review(), then=lambda: ReviewScreen(review_request()))
    assert snap_compare(app, terminal_size=SMALL, run_before=run_before, press=["d", "end"])


def after_the_main_screen(run_before: Callable[[Pilot[Any]], Any]) -> Any:
    """Push modals only once the main screen is ready: the history table takes focus a refresh
    after mount, and the cell beneath a modal is drawn differently before and after."""

    async def ready_then(pilot: Pilot[Any]) -> None:
        app = pilot.app
        assert isinstance(app, FixloopApp)
        while not app.main.ready:
            await pilot.pause(0.01)
        await run_before(pilot)

    return ready_then


@pytest.mark.parametrize("size", [SMALL, MEDIUM], ids=["80x24", "120x36"])
def test_candidates_modal(snap_compare: SnapCompare, size: tuple[int, int]) -> None:
    app = app_in("dark")
    screen = lambda: CandidatesScreen(candidates_request())  # noqa: E731
    run_before = after_the_main_screen(showing(until_the_candidates(), then=screen))
    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", [SMALL, MEDIUM], ids=["80x24", "120x36"])
def test_candidates_modal_comparing_two(snap_compare: SnapCompare, size: tuple[int, int]) -> None:
    app = app_in("dark")
    screen = lambda: CandidatesScreen(candidates_request())  # noqa: E731
    run_before = after_the_main_screen(showing(until_the_candidates(), then=screen))
    assert snap_compare(app, terminal_size=size, run_before=run_before, press=["2", "c"])


def test_candidates_modal_with_one_dropped(snap_compare: SnapCompare) -> None:
    app = app_in("dark")
    dropped = ["candidate 4 dropped: unusable: your textstats/core.py leaves out top_words"]
    screen = lambda: CandidatesScreen(candidates_request(), dropped)  # noqa: E731
    run_before = after_the_main_screen(showing(until_the_candidates(), then=screen))
    assert snap_compare(app, terminal_size=SMALL, run_before=run_before)


def test_candidates_modal_writing_a_note_on_a_doubtful_one(snap_compare: SnapCompare) -> None:
    app = app_in("light")
    screen = lambda: CandidatesScreen(candidates_request())  # noqa: E731
    run_before = after_the_main_screen(showing(until_the_candidates(), then=screen))
    press = ["3", "n", *"why skip it?"]
    assert snap_compare(app, terminal_size=SMALL, run_before=run_before, press=press)


def test_candidates_modal_with_a_hunk_dropped_at_80x24(snap_compare: SnapCompare) -> None:
    app = app_in("dark")
    screen = lambda: CandidatesScreen(candidates_request())  # noqa: E731
    run_before = after_the_main_screen(showing(until_the_candidates(), then=screen))
    press = ["3", "right_square_bracket", "space"]  # its test file's hunk dropped
    assert snap_compare(app, terminal_size=SMALL, run_before=run_before, press=press)


@pytest.mark.parametrize("size", [SMALL, MEDIUM], ids=["80x24", "120x36"])
def test_quit_dialog(snap_compare: SnapCompare, size: tuple[int, int]) -> None:
    app = app_in("dark")
    run_before = showing(until_second_review(), then=lambda: QuitScreen(RUN_ID, str(PROJECT)))
    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("theme", ["dark", "light"])
def test_editor_modal(snap_compare: SnapCompare, theme: str) -> None:
    app = app_in(theme)
    files = [EditorFile("textstats/core.py", CORE_2), EditorFile("tests/test_core.py", TEST_CORE)]
    run_before = showing(until_second_review(), then=lambda: EditorScreen(files))
    assert snap_compare(app, terminal_size=BIG, run_before=run_before)


@pytest.mark.parametrize("theme", ["dark", "light"])
def test_suspicious_pass_modal(snap_compare: SnapCompare, theme: str) -> None:
    app = app_in(theme)
    run_before = showing(until_suspicious_pass(), then=lambda: SuspiciousPassScreen(pass_request()))
    assert snap_compare(app, terminal_size=BIG, run_before=run_before)


@pytest.mark.parametrize("theme", ["dark", "light"])
def test_end_modal(snap_compare: SnapCompare, theme: str) -> None:
    app = app_in(theme)
    run_before = showing(finished_run(), then=lambda: EndScreen(OUTCOME))
    assert snap_compare(app, terminal_size=BIG, run_before=run_before)


def test_end_modal_after_accept(snap_compare: SnapCompare) -> None:
    app = app_in("dark")
    accepted = Finished(
        choice="accept", done=True, commit=SHA_2, detail=f"accepted as {SHA_2[:10]} on main"
    )
    run_before = showing(finished_run(), then=lambda: EndScreen(OUTCOME, accepted))
    assert snap_compare(app, terminal_size=BIG, run_before=run_before)


def test_end_modal_when_the_run_could_not_start(snap_compare: SnapCompare) -> None:
    app = app_in("light")
    outcome = RunOutcome(
        status="error",
        reason="/home/you/textstats is not a git repository; run `git init` and commit",
        decidable=False,
        started=False,
    )
    run_before = showing([], then=lambda: EndScreen(outcome))
    assert snap_compare(app, terminal_size=SMALL, run_before=run_before)


@pytest.mark.parametrize("size", [SMALL, MEDIUM], ids=["80x24", "120x36"])
def test_end_modal_with_the_squash_diff(snap_compare: SnapCompare, size: tuple[int, int]) -> None:
    app = app_in("dark")
    run_before = showing(finished_run(), then=lambda: EndScreen(OUTCOME))
    assert snap_compare(app, terminal_size=size, run_before=run_before)


def test_end_modal_after_an_accepted_suspicious_pass(snap_compare: SnapCompare) -> None:
    app = app_in("dark")
    # The reason as the engine words it: the pass's reasons, which the modal lists once.
    reason = f"suspicious pass accepted (accepted by you): {'; '.join(PASS_REASONS)}"
    outcome = replace(OUTCOME, reason=reason, accepted_suspicious=tuple(PASS_REASONS))
    run_before = showing(until_suspicious_pass(), then=lambda: EndScreen(outcome))
    assert snap_compare(app, terminal_size=SMALL, run_before=run_before)


def test_end_modal_when_the_run_changed_nothing(snap_compare: SnapCompare) -> None:
    app = app_in("dark")
    ended = RunFinished(
        ts=T0 + 4.2,
        status="error",
        reason="the model openai/nosuch is not known to litellm",
        iterations=1,
        branch="",
        tokens=0,
        duration_s=4.2,
    )
    outcome = RunOutcome(
        status=ended.status,
        reason=ended.reason,
        iterations=ended.iterations,
        duration_s=ended.duration_s,
        decidable=False,
    )
    run_before = showing([*started(), ended], then=lambda: EndScreen(outcome))
    assert snap_compare(app, terminal_size=SMALL, run_before=run_before)


REPORT = """# fixloop report: exhausted

**Task:** Make the failing tests pass.
**Why it stopped:** 1 proposal did not pass (the iteration cap).

| iteration | status | tests | error class |
|---|---|---|---|
| start | failing | 3 passed, 2 failed | logic |
| 1 | failing | 4 passed, 1 failed | logic |

## Still failing

- `tests/test_core.py::test_top_words_returns_n` — expected `[('a', 3), ('b', 2)]`, got `[('a', 3)]`

## Next steps

Keep the branch `fixloop/20261202-141503-a1b2` and fix `top_words` by hand, or run again
with more iterations (`--max-iters 6`).
"""


@pytest.mark.parametrize("theme", ["dark", "light"])
def test_report_modal(snap_compare: SnapCompare, theme: str) -> None:
    app = app_in(theme)
    path = run_path(PROJECT, RUN_ID) / "report.md"
    run_before = showing(finished_run(), then=lambda: ReportScreen(path, REPORT))
    assert snap_compare(app, terminal_size=BIG, run_before=run_before)


# -- past runs ------------------------------------------------------------------------------


PAST_RUNS = [
    RunSummary(
        id=RUN_ID,
        task="Make the failing tests pass.",
        status="ok",
        iterations=2,
        started="2026-12-02 14:15:03",
        path="",
        branch=BRANCH,
        finish="accept",
    ),
    RunSummary(
        id="20261202-121005-b7c8",
        task="Fix top_words",
        status="ok",
        iterations=1,
        started="2026-12-02 12:10:05",
        path="",
        accepted_suspicious=True,
        branch="fixloop/20261202-121005-b7c8",
        finish="keep",
    ),
    RunSummary(
        id="20261202-093311-c3d4",
        task="Handle an empty text in mean_word_length without dividing by zero, and say so",
        status="suspicious_pass",
        iterations=1,
        started="2026-12-02 09:33:11",
        path="",
        branch="fixloop/20261202-093311-c3d4",
    ),
    RunSummary(
        id="20261201-170245-e5f6",
        task="Fix the word stats",
        status="exhausted",
        iterations=4,
        started="2026-12-01 17:02:45",
        path="",
        branch="fixloop/20261201-170245-e5f6",
        finish="discard",
    ),
    RunSummary(
        id="20261201-110012-a9b0",
        task="Fix the word stats",
        status="error",
        iterations=1,
        started="2026-12-01 11:00:12",
        path="",
    ),
]


@pytest.mark.parametrize("theme", ["dark", "light"])
def test_runs_screen(snap_compare: SnapCompare, theme: str) -> None:
    app = app_in(theme)
    run_before = showing([], then=lambda: RunsScreen(PROJECT, PAST_RUNS))
    assert snap_compare(app, terminal_size=BIG, run_before=run_before)


def replay_screen() -> ReplayScreen:
    view = RunView()
    for event in finished_run():
        view.apply(event)
    loader = lambda n, *_: ARTIFACTS.get(n, IterationArtifacts())  # noqa: E731
    return ReplayScreen(PROJECT, RUN_ID, view=view, loader=loader)


@pytest.mark.parametrize("theme", ["dark", "high-contrast"])
def test_replay_screen_stepped_to_iteration_1(snap_compare: SnapCompare, theme: str) -> None:
    app = app_in(theme)
    run_before = showing([], then=replay_screen)
    assert snap_compare(app, terminal_size=BIG, run_before=run_before, press=["]"])


# -- watch mode -------------------------------------------------------------------------------


@pytest.mark.parametrize("theme", ["dark", "light"])
def test_watch_screen_after_a_save(snap_compare: SnapCompare, theme: str) -> None:
    app = app_in(theme)

    def watch_screen() -> WatchScreen:
        screen = WatchScreen(
            PROJECT, model="openai/gpt-4o-mini", sandbox="gvisor", watch_files=False
        )
        screen.clock = lambda: "14:15:03"
        screen.cause = "a save of textstats/core.py"
        screen.call_after_refresh(screen.show_check, check_result())
        return screen

    run_before = showing([], then=watch_screen)
    assert snap_compare(app, terminal_size=BIG, run_before=run_before)


# -- the task screen --------------------------------------------------------------------------


@pytest.mark.parametrize("theme", ["dark", "light"])
def test_task_screen_with_the_checkout_verified(snap_compare: SnapCompare, theme: str) -> None:
    app = app_in(theme)

    def task_screen() -> TaskScreen:
        screen = TaskScreen(project=str(PROJECT), model="openai/gpt-4o-mini", sandbox="gvisor")
        screen.call_after_refresh(screen.show_check, check_result())
        return screen

    run_before = showing([], then=task_screen)
    assert snap_compare(app, terminal_size=BIG, run_before=run_before)


def test_task_screen_says_the_model_cannot_be_called_at_80x24(snap_compare: SnapCompare) -> None:
    app = app_in("dark")
    problem = "no API key for openai (openai/gpt-4o-mini): set OPENAI_API_KEY"

    def task_screen() -> TaskScreen:
        screen = TaskScreen(project=str(PROJECT), model="openai/gpt-4o-mini", sandbox="gvisor")
        screen.call_after_refresh(screen.show_check, check_result())
        screen.call_after_refresh(lambda: screen.query_one(ModelProblem).show(problem))
        return screen

    run_before = showing([], then=task_screen)
    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_task_screen_says_the_projects_security_settings_were_not_obeyed_at_80x24(
    snap_compare: SnapCompare,
) -> None:
    app = app_in("dark")
    refused = refusal(PROJECT / "pyproject.toml", ["sandbox"], f"fixloop-tui trust {PROJECT}")

    def task_screen() -> TaskScreen:
        screen = TaskScreen(
            project=str(PROJECT),
            model="openai/gpt-4o-mini",
            sandbox="gvisor",
            config_refused=refused,
        )
        screen.call_after_refresh(screen.show_check, check_result())
        return screen

    run_before = showing([], then=task_screen)
    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def task_screen_showing(check: Verification) -> Callable[[], TaskScreen]:
    def task_screen() -> TaskScreen:
        screen = TaskScreen(project=str(PROJECT), model="openai/gpt-4o-mini", sandbox="gvisor")
        screen.call_after_refresh(screen.show_check, check)
        return screen

    return task_screen


@pytest.mark.parametrize("size", [SMALL, MEDIUM], ids=["80x24", "120x36"])
def test_task_screen_refuses_a_repair_without_tests(
    snap_compare: SnapCompare, size: tuple[int, int]
) -> None:
    app = app_in("dark")
    run_before = showing([], then=task_screen_showing(no_tests_check()))
    assert snap_compare(app, terminal_size=size, run_before=run_before)


def test_task_screen_in_a_subdirectory_at_80x24(snap_compare: SnapCompare) -> None:
    app = app_in("dark")
    reason = (
        f"{PROJECT}/tests is not the top level of its git work tree; point fixloop at {PROJECT}"
    )

    def task_screen() -> TaskScreen:
        screen = TaskScreen(
            project=f"{PROJECT}/tests", model="openai/gpt-4o-mini", sandbox="gvisor"
        )
        screen.call_after_refresh(screen.show_unusable, reason)
        return screen

    run_before = showing([], then=task_screen)
    assert snap_compare(app, terminal_size=SMALL, run_before=run_before)
