"""The repair packet: hard token cap, first failure in full, edit anchors, progress."""

from __future__ import annotations

import subprocess
from pathlib import Path

from engine.feedback.distill import anchor_from_diff, distill, progress_between
from engine.feedback.packet import Failure, RepairPacket
from engine.feedback.tree import Verification, rendered, shown_again
from engine.text.tokens import approximate_tokens
from engine.verify.classify import Classification, ErrorClass
from engine.verify.results import StageKind, StageResult, TestCase, TestCounts, TestReport
from engine.verify.verdict import Judgement, Verdict

LOGIC = Classification(error_class=ErrorClass.LOGIC, primary="x")


def failing(n: int, message: str = "boom") -> list[Failure]:
    return [
        Failure(
            test=f"tests/test_m.py::test_{i}",
            file="tests/test_m.py",
            line=10 + i,
            exception=f"ValueError: {message} {i}",
        )
        for i in range(n)
    ]


def test_the_render_never_exceeds_the_cap() -> None:
    packet = RepairPacket(summary="s", error_class="logic", failures=failing(400, "x" * 300))
    for cap in (300, 800, 2000):
        assert approximate_tokens(packet.render(cap)) <= cap


def test_the_first_failure_is_in_full_and_the_rest_one_line_each() -> None:
    packet = RepairPacket(summary="s", error_class="logic", failures=failing(3))
    text = packet.render()
    assert (
        "FAILED: tests/test_m.py::test_0 (tests/test_m.py:10)\n  raised: ValueError: boom 0" in text
    )
    assert "- failed: tests/test_m.py::test_1 — ValueError: boom 1" in text
    assert "- failed: tests/test_m.py::test_2 — ValueError: boom 2" in text


def test_what_does_not_fit_is_counted_not_dropped_silently() -> None:
    packet = RepairPacket(summary="s", error_class="logic", failures=failing(300, "y" * 200))
    text = packet.render(1000)
    assert "more not shown" in text


def test_huge_values_are_clipped_so_the_first_failure_still_fits() -> None:
    big = Failure(test="t::a", expected="1" * 20000, actual="2" * 20000, captured="z" * 50000)
    text = RepairPacket(summary="s", error_class="logic", failures=[big]).render(2000)
    assert approximate_tokens(text) <= 2000
    assert "expected: `111" in text
    assert "actual:   `222" in text


def test_an_ordering_assert_says_what_was_false_not_an_expected_value() -> None:
    bound = Failure(test="t::close", actual="6.0", expected="0.0001", comparison="<")
    equal = Failure(test="t::eq", actual="2", expected="3")
    text = RepairPacket(summary="s", error_class="logic", failures=[bound, equal]).render()
    assert "  false: `6.0` < `0.0001`" in text
    assert "expected: `0.0001`" not in text
    assert "- failed: t::eq — expected `3`, got `2`" in text
    again = RepairPacket(summary="s", error_class="logic", failures=[equal, bound]).render()
    assert "- failed: t::close — false: `6.0` < `0.0001`" in again


def test_an_edit_anchor_comes_from_a_real_git_diff(tmp_path: Path) -> None:
    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(tmp_path), *args], capture_output=True, text=True, check=True
        ).stdout

    git("init", "-q")
    (tmp_path / "mod.py").write_text("".join(f"line {i}\n" for i in range(1, 31)))
    git("add", "-A")
    git("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "base")
    lines = (tmp_path / "mod.py").read_text().splitlines(keepends=True)
    lines[4] = "changed 5\n"
    lines[24] = "changed 25\n"
    (tmp_path / "mod.py").write_text("".join(lines))
    (tmp_path / "new.py").write_text("a\nb\n")
    git("add", "-A")
    anchor = anchor_from_diff(git("diff", "--cached", "-U0"))
    assert anchor.files == {"mod.py": [(5, 5), (25, 25)], "new.py": [(1, 2)]}
    assert anchor.describe() == "mod.py (lines 5, 25); new.py (lines 1-2)"


def pytest_stage(nodeids: list[str], failed: list[str]) -> StageResult:
    report = TestReport(
        exitstatus=1 if failed else 0,
        counts=TestCounts(
            collected=len(nodeids), passed=len(nodeids) - len(failed), failed=len(failed)
        ),
        nodeids=nodeids,
        tests=[TestCase(nodeid=n, outcome="failed") for n in failed],
    )
    return StageResult(
        name="tests",
        kind=StageKind.TESTS,
        cmd="pytest",
        exit_code=1 if failed else 0,
        duration_ms=1,
        report=report,
    )


def test_progress_names_what_now_passes_and_what_still_fails() -> None:
    ids = [f"t::{c}" for c in "abcdef"]
    before = pytest_stage(ids, ["t::a", "t::b", "t::c", "t::d", "t::e"])
    after = pytest_stage(ids, ["t::d", "t::e", "t::f"])
    assert progress_between([before], [after]) == (
        "3 tests now pass that failed before; 2 still fail; 1 new failure; "
        "1 of them passed before your edit"
    )


def test_the_packet_carries_progress_and_the_last_edit() -> None:
    ids = ["t::a", "t::b"]
    diff = "diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -3,2 +3,4 @@\n"
    packet = distill(
        [pytest_stage(ids, ["t::b"])],
        LOGIC,
        iteration=2,
        max_iterations=4,
        previous=[pytest_stage(ids, ids)],
        last_diff=diff,
    )
    text = packet.render()
    assert text.startswith("Verification failed (iteration 2/4): 1 of 2 tests failing.")
    assert "Progress: 1 test now passes that failed before; 1 still fails." in text
    assert "Your last edit changed: m.py (lines 3-6)." in text


def test_a_packet_shown_again_names_the_iteration_it_is_shown_in() -> None:
    packet = RepairPacket(
        iteration=1, max_iterations=3, summary="1 failed", error_class="logic", failures=failing(1)
    )
    judgement = Judgement(verdict=Verdict.FAILING, classification=LOGIC)
    shown = rendered(Verification(judgement=judgement, stages=[], packet=packet))
    again = shown_again(shown, 3)
    assert shown.packet_text.startswith("Verification failed (iteration 1/3): 1 failed.")
    assert again.packet_text == shown.packet_text.replace("(iteration 1/3)", "(iteration 3/3)")
    assert again.packet is not None
    assert again.packet.iteration == 3
    assert shown_again(again, 3) == again
    # Raw feedback (or a note) in the packet's place has no label to mend.
    raw = shown.model_copy(update={"packet_text": "FAILED tests/test_m.py::test_0 (iteration 1/3)"})
    assert shown_again(raw, 2) == raw
