"""The runtime line of the repair packet: the first failure's locals, capped, redacted, cut
before the failure itself when space is short, and left out when runtime values are off."""

from __future__ import annotations

import json
from typing import Any

from engine.feedback.distill import distill
from engine.feedback.tree import Verification, rendered
from engine.text.tokens import approximate_tokens
from engine.verify.classify import Classification, ErrorClass
from engine.verify.parsers import extract_report
from engine.verify.results import StageKind, StageResult, TestReport
from engine.verify.verdict import Judgement, Verdict

LOGIC = Classification(error_class=ErrorClass.LOGIC, primary="x")
NONCE = "FIXLOOP-0123:"
SECRET = "sk-live-abcdefghijklmnopqrstuvwx"
AWS_KEY = "AKIAIOSFODNN7EXAMPLE"


def plugin_report(values: list[dict[str, str]], omitted: int = 0) -> TestReport:
    """A report as the plugin writes it, read back the way the verifier reads it."""
    case: dict[str, Any] = {
        "nodeid": "tests/test_bits.py::test_word_of_127",
        "outcome": "failed",
        "file": "tests/test_bits.py",
        "line": 4,
        "exception_type": "IndexError",
        "exception_message": "tuple index out of range",
        "test_frame": {"file": "tests/test_bits.py", "line": 6, "function": "test_word_of_127"},
        "frame": {
            "file": "src/bits.py",
            "line": 6,
            "function": "bitcount_word",
            "source": "return WORDS[count]",
        },
        "runtime": {
            "frame": {"file": "src/bits.py", "line": 6, "function": "bitcount_word"},
            "values": values,
            "omitted": omitted,
        },
    }
    payload = {
        "exitstatus": 1,
        "counts": {"collected": 1, "failed": 1},
        "nodeids": [case["nodeid"]],
        "tests": [case],
    }
    report, _ = extract_report(f"noise\n{NONCE}{json.dumps(payload)}\n", NONCE)
    assert report is not None
    return report


def stage(report: TestReport) -> StageResult:
    return StageResult(
        name="tests", kind=StageKind.TESTS, cmd="pytest", exit_code=1, duration_ms=1, report=report
    )


def packet_text(values: list[dict[str, str]], omitted: int = 0, cap: int = 2000) -> str:
    return distill([stage(plugin_report(values, omitted))], LOGIC).render(cap)


BITS_VALUES = [{"name": "n", "value": "127"}, {"name": "count", "value": "7"}]


def test_the_first_failure_shows_its_locals_on_one_line() -> None:
    text = packet_text(BITS_VALUES)
    lines = text.split("\n")
    at = lines.index("  at src/bits.py:6 in bitcount_word: return WORDS[count]")
    assert lines[at + 1] == "  locals at src/bits.py:6 in bitcount_word: n = 127, count = 7"


def test_the_runtime_line_is_capped_in_names_and_characters() -> None:
    many = [{"name": f"v{i}", "value": f"'{i}" + "x" * 300 + "'"} for i in range(12)]
    line = next(x for x in packet_text(many, omitted=3).split("\n") if "locals at" in x)
    pairs = line.split(": ", 1)[1].split(", ")
    assert [pair.split(" = ")[0] for pair in pairs[:8]] == [f"v{i}" for i in range(8)]
    assert pairs[8] == "(and 7 more)"  # 4 past the packet's cap, 3 past the plugin's
    assert all(len(pair.split(" = ", 1)[1]) == 80 for pair in pairs[:8])
    assert all(pair.endswith("...") for pair in pairs[:8])


def test_secret_looking_values_and_names_are_redacted() -> None:
    report = plugin_report(
        [
            {"name": "n", "value": "127"},
            {"name": "header", "value": f"'Bearer {SECRET}'"},
            {"name": "aws", "value": f"'{AWS_KEY}'"},
            {"name": "api_key", "value": "'correct-horse-battery'"},
            {"name": "dbPassword", "value": "'hunter2'"},
        ]
    )
    text = distill([stage(report)], LOGIC).render()
    assert (
        "n = 127, header = 'Bearer [REDACTED]', aws = '[REDACTED]', "
        "api_key = [REDACTED], dbPassword = [REDACTED]"
    ) in text
    stored = stage(report).model_dump_json()  # what the trail's stage file holds
    for secret in (SECRET, AWS_KEY, "correct-horse-battery", "hunter2"):
        assert secret not in text
        assert secret not in stored


def test_the_runtime_line_goes_before_the_failure_itself_is_cut() -> None:
    full = packet_text(BITS_VALUES)
    cap = approximate_tokens(full) - 5
    tight = packet_text(BITS_VALUES, cap=cap)
    assert "locals at" not in tight
    assert "  at src/bits.py:6 in bitcount_word: return WORDS[count]" in tight
    assert "raised: IndexError: tuple index out of range" in tight
    assert approximate_tokens(tight) <= cap


def verification(report: TestReport) -> Verification:
    stages = [stage(report)]
    judgement = Judgement(verdict=Verdict.FAILING, classification=LOGIC)
    return Verification(judgement=judgement, stages=stages, packet=distill(stages, LOGIC))


def test_runtime_values_off_leaves_the_line_out_of_the_packet_and_its_text() -> None:
    examined = verification(plugin_report(BITS_VALUES))
    on = rendered(examined)
    off = rendered(examined, runtime_values=False)
    assert "n = 127, count = 7" in on.packet_text
    assert "locals at" not in off.packet_text
    assert off.packet is not None
    assert all(failure.runtime is None for failure in off.packet.failures)
    assert off.packet_tokens < on.packet_tokens
