"""Per-test limits from the suite's own times, in the real sandbox: what the baseline saw a test
take (with a margin) is a floor under its limit in later verifications of the run, so a test
that passed at the baseline is not cut for being slower under load, nor after an earlier
test's timeout shortened the limits."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.feedback.tree import Baseline, Verification, examine_tree
from engine.project.settings import Settings
from engine.verify.baseline_tests import BaselineTests
from engine.verify.classify import ErrorClass
from engine.verify.execute import Verifier
from engine.verify.stages import configured_stages
from engine.verify.time_needs import time_needs
from sandbox import Limits
from sandbox.gvisor import GvisorSandbox
from tests.engine.test_model_code import committed

pytestmark = pytest.mark.sandbox

STAGE_S = 120.0
TEST_S = 3.0


def sleeping(seconds: float) -> str:
    return f"import time\n\n\ndef test_slow_but_fine():\n    time.sleep({seconds})\n"


FINE = "def test_first():\n    assert True\n"
HANGS = "def test_first():\n    while True:\n        pass\n"


async def baseline_then(
    sandbox: GvisorSandbox, tmp_path: Path, before: dict[str, str], after: dict[str, str]
) -> Verification:
    """`before` verified as a run's baseline, then `after` written over it and verified with
    the limits the baseline's times give."""
    root = committed(tmp_path / "project", before)
    verifier = Verifier(
        sandbox,
        configured_stages(Settings()),
        limits=Limits(timeout_s=STAGE_S),
        test_timeout=TEST_S,
    )
    first = await examine_tree(root, verifier, baseline=Baseline(repo=root))
    recorded = BaselineTests.of(first.stages)
    assert recorded is not None
    verifier.time_needs = time_needs(recorded.durations, TEST_S, STAGE_S)
    for name, text in after.items():
        (root / name).write_text(text)
    return await examine_tree(root, verifier, baseline=Baseline(repo=root), after_baseline=True)


async def test_a_test_slower_than_the_plain_limit_under_load_still_passes(
    gvisor: GvisorSandbox, tmp_path: Path
) -> None:
    # 1.2 s at the baseline; 3.5 s now, past the plain 3 s, inside 3x its own time.
    later = await baseline_then(
        gvisor,
        tmp_path,
        {"tests/test_slow.py": sleeping(1.2)},
        {"tests/test_slow.py": sleeping(3.5)},
    )
    assert later.stages[0].report is not None
    assert later.stages[0].report.tests == []
    assert later.judgement.classification.error_class is ErrorClass.NONE


async def test_a_slow_test_after_a_timeout_keeps_its_baseline_need(
    gvisor: GvisorSandbox, tmp_path: Path
) -> None:
    # The hang shortens later limits to a fifth (1 s); the slow test needs 1.5 s.
    slow = {"tests/test_b_slow.py": sleeping(1.5)}
    later = await baseline_then(
        gvisor,
        tmp_path,
        {"tests/test_a_first.py": FINE, **slow},
        {"tests/test_a_first.py": HANGS},
    )
    report = later.stages[0].report
    assert report is not None
    assert [(case.nodeid, case.exception_type) for case in report.tests] == [
        ("tests/test_a_first.py::test_first", "TestTimeout")
    ]
    assert report.counts.passed == 1
    assert later.judgement.classification.error_class is ErrorClass.TIMEOUT
