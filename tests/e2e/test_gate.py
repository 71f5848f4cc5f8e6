"""The gate protocol in the real loop: a person (here a scripted gate) who rejects a
suspicious pass keeps the run going, and the model is told why."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.edits.proposal import Proposal
from engine.project.settings import load_settings
from engine.run.gate import PassReview, Review
from engine.run.start import start_run
from tests.model_server import ScriptedModelServer, reply
from tests.projects import (
    EXAMPLES,
    MEAN_FIX,
    SKIP_TOP,
    TOP_FIX,
    UNSKIP_TOP,
    answer,
    committed_copy,
)

pytestmark = [pytest.mark.sandbox, pytest.mark.usefixtures("needs_gvisor")]


class RejectingGate:
    """Approves every proposal, lets its test edits through, rejects every doubtful pass."""

    def __init__(self) -> None:
        self.passes: list[list[str]] = []

    async def review(self, n: int, proposal: Proposal, held_back: list[str]) -> Review:
        return Review(decision="approve", allow_test_edits=True)

    async def review_pass(self, n: int, reasons: list[str]) -> PassReview:
        self.passes.append(reasons)
        return PassReview(accept=False, note="no skipping", keep_repairing=True)

    async def between(self, n: int) -> str | None:
        return None


async def test_a_rejected_pass_keeps_repairing_and_the_model_hears_why(
    model_server: ScriptedModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-gate-0123456789")
    root = committed_copy(EXAMPLES / "textstats", tmp_path)
    model_server.script(
        reply(answer("fix", MEAN_FIX, SKIP_TOP)), reply(answer("fix", UNSKIP_TOP, TOP_FIX))
    )
    settings = load_settings(
        root, {"model": "openai/scripted", "api_base": model_server.base_url, "sandbox": "gvisor"}
    )
    gate = RejectingGate()
    result = await start_run(root, settings, gate=gate)
    assert len(gate.passes) == 1
    assert any("added @pytest.mark.skip" in reason for reason in gate.passes[0])
    second_prompt = model_server.requests[1].body["messages"][-1]["content"]
    assert "the pass was rejected as not honest" in second_prompt
    assert "The reviewer said: no skipping" in second_prompt
    assert [r.status for r in result.iterations] == ["suspicious_pass", "ok"]
    assert result.status.value == "ok"
    assert model_server.count == 2
