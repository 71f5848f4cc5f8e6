"""The gate protocol in the real loop: a person (here a scripted gate) who rejects a
suspicious pass or a proposal keeps the run going, honestly, and the model is told why."""

from __future__ import annotations

from pathlib import Path

import git
import pytest

from engine.edits.proposal import Proposal
from engine.project.paths import run_path, runs_dir
from engine.project.settings import Settings, load_settings
from engine.run.gate import PassReview, Review
from engine.run.guards import RunInterrupted
from engine.run.run_directory import RunDirectory
from engine.run.start import resume_run, start_run
from tests.model_server import ScriptedModelServer, reply
from tests.projects import (
    EXAMPLES,
    MEAN_FIX,
    SKIP_TOP,
    TOP_FIX,
    answer,
    committed_copy,
)

pytestmark = [pytest.mark.sandbox, pytest.mark.usefixtures("needs_gvisor")]


class RejectingGate:
    """Gives the scripted reviews, then approves every proposal with its test edits; rejects
    every doubtful pass."""

    approval = "step"

    def __init__(self, reviews: list[Review] | None = None) -> None:
        self.reviews = reviews or []
        self.passes: list[list[str]] = []

    async def review(self, n: int, proposal: Proposal, held_back: list[str]) -> Review:
        if self.reviews:
            return self.reviews.pop(0)
        return Review(decision="approve", allow_test_edits=True)

    async def review_pass(self, n: int, reasons: list[str]) -> PassReview:
        self.passes.append(reasons)
        return PassReview(
            accept=False, note="rejected by you", comment="no skipping", keep_repairing=True
        )

    async def between(self, n: int) -> str | None:
        return None


async def test_a_rejected_pass_reverts_the_skip_and_the_model_gets_the_packet(
    model_server: ScriptedModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-gate-0123456789")
    root = committed_copy(EXAMPLES / "textstats", tmp_path)
    baseline_tests = (root / "tests" / "test_core.py").read_text()
    model_server.script(reply(answer("fix", MEAN_FIX, SKIP_TOP)), reply(answer("fix", TOP_FIX)))
    gate = RejectingGate()
    result = await start_run(root, scripted(root, model_server), gate=gate)
    assert len(gate.passes) == 1  # the honest fix after the reject raised no doubt again
    assert any("added @pytest.mark.skip" in reason for reason in gate.passes[0])
    # The skip was reverted on the branch, in a commit of its own...
    repo = git.Repo(root)
    subjects = repo.git.log("--format=%s", result.branch).splitlines()
    assert "fixloop[iter 1]: revert the test changes of a rejected pass" in subjects
    assert repo.git.show(f"{result.branch}:tests/test_core.py") == baseline_tests.rstrip("\n")
    # ...and the prompt after the reject is the normal one: files, the packet, the reason.
    second_prompt = model_server.requests[1].body["messages"][-1]["content"]
    assert "textstats/core.py" in second_prompt
    assert "test_top_words_returns_n" in second_prompt
    assert "the pass was rejected as not honest" in second_prompt
    assert "Your changes to tests/test_core.py were reverted." in second_prompt
    assert "The reviewer said: no skipping." in second_prompt
    assert [r.status for r in result.iterations] == ["failing", "ok"]
    assert result.status.value == "ok"
    assert model_server.count == 2


async def test_a_proposal_rejected_with_a_note_is_not_committed_and_the_model_hears_it(
    model_server: ScriptedModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-gate-0123456789")
    root = committed_copy(EXAMPLES / "textstats", tmp_path)
    model_server.script(
        reply(answer("half a fix", MEAN_FIX)), reply(answer("both", MEAN_FIX, TOP_FIX))
    )
    note = "fix top_words too, in the same change"
    gate = RejectingGate(
        [Review(decision="reject", comment=note, note="rejected by you", by="person")]
    )
    result = await start_run(root, scripted(root, model_server), gate=gate)
    assert result.status.value == "ok"
    assert [(r.status, r.commit is None) for r in result.iterations] == [
        ("rejected", True),
        ("ok", False),
    ]
    subjects = git.Repo(root).git.log("--format=%s", result.branch).splitlines()
    assert not any("half a fix" in subject for subject in subjects)
    second_prompt = model_server.requests[1].body["messages"][-1]["content"]
    assert f"The reviewer said: {note}." in second_prompt
    assert "was rejected by the reviewer and NOT applied" in second_prompt


def scripted(root: Path, model_server: ScriptedModelServer) -> Settings:
    return load_settings(
        root, {"model": "openai/scripted", "api_base": model_server.base_url, "sandbox": "gvisor"}
    )


class StoppingGate(RejectingGate):
    """The person stops the run while the first proposal waits for review."""

    async def review(self, n: int, proposal: Proposal, held_back: list[str]) -> Review:
        raise RunInterrupted()


async def test_a_stopped_run_resumes_where_it_stopped(
    model_server: ScriptedModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-gate-0123456789")
    root = committed_copy(EXAMPLES / "textstats", tmp_path)
    model_server.script(
        reply(answer("both", MEAN_FIX, TOP_FIX)), reply(answer("both", MEAN_FIX, TOP_FIX))
    )
    settings = scripted(root, model_server)
    with pytest.raises(RunInterrupted):
        await start_run(root, settings, gate=StoppingGate())
    (run_id,) = [path.name for path in runs_dir(root).iterdir()]
    events = RunDirectory(run_path(root, run_id)).events()
    assert [type(e).__name__ for e in events][-1] == "RunStopped"
    result = await resume_run(root, run_id, gate=RejectingGate())
    assert result.status.value == "ok"
    assert [r.status for r in result.iterations] == ["ok"]
    assert model_server.count == 2  # the stopped proposal was asked again
