"""`--feedback raw`: the failing stages' own output, cut to the cap from the end."""

from __future__ import annotations

from engine.feedback.raw import RAW_ASK, raw_feedback
from engine.text.tokens import approximate_tokens
from engine.verify.results import StageKind, StageResult


def stage(name: str, exit_code: int, stdout: str, stderr: str = "") -> StageResult:
    return StageResult(
        name=name,
        kind=StageKind.TESTS if name == "tests" else StageKind.LINT,
        cmd=f"run {name}",
        exit_code=exit_code,
        duration_ms=1,
        stdout=stdout,
        stderr=stderr,
    )


def test_only_the_failing_stages_are_told_with_their_command_and_exit() -> None:
    text = raw_feedback(
        [stage("lint", 0, "all good"), stage("tests", 1, "F\nFAILED t.py::test_x - boom", "warn")],
        2000,
        approximate_tokens,
        ["Your edits to t.py were NOT applied."],
    )
    assert text == (
        "$ run tests  (exit 1)\nF\nFAILED t.py::test_x - boom\nwarn\n\n"
        f"Your edits to t.py were NOT applied.\n\n{RAW_ASK}"
    )
    assert "all good" not in text


def test_a_long_output_keeps_its_tail_within_the_cap() -> None:
    lines = [f"line {i} " + "x" * 40 for i in range(400)]
    text = raw_feedback([stage("tests", 1, "\n".join(lines))], 300, approximate_tokens)
    assert lines[-1] in text
    assert lines[0] not in text
    assert "earlier lines cut]" in text
    assert approximate_tokens(text) <= 300 + 40
