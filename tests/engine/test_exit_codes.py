"""The exit codes' tables cover every ending and every verdict (the verdicts' table is keyed by
their values, so that reading an exit code does not import the verifier)."""

from __future__ import annotations

from engine.run.exit_codes import RUN_EXIT_CODES, VERDICT_EXIT_CODES
from engine.run.guards import RunStatus
from engine.verify.verdict import Verdict


def test_every_verdict_has_its_exit_code() -> None:
    assert set(VERDICT_EXIT_CODES) == {verdict.value for verdict in Verdict}
    assert VERDICT_EXIT_CODES[Verdict.SUSPICIOUS_PASS] == 4  # a Verdict looks itself up


def test_every_run_status_has_its_exit_code() -> None:
    assert set(RUN_EXIT_CODES) == set(RunStatus)
