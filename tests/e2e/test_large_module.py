"""A repair in a 3,000-line module end to end: the real loop, the real gVisor sandbox, the
scripted model server over HTTP and real git. The module is shown in excerpts, the model
answers in the `whole` format with only the function it fixed, and the run ends green with
every other line of the module as it was."""

from __future__ import annotations

from pathlib import Path

import git
import pytest

from engine.project.settings import load_settings
from engine.run.gate import PolicyGate
from engine.run.start import start_run
from tests.engine.test_context import FIXED_TRACED, TRACED, big_module, large_project
from tests.model_server import ScriptedModelServer, reply

pytestmark = [pytest.mark.sandbox, pytest.mark.usefixtures("needs_gvisor")]


async def test_a_whole_format_answer_with_one_function_repairs_a_module_shown_in_excerpts(
    model_server: ScriptedModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fixloop-canary-6d1f0c8e-large-module")
    root = large_project(tmp_path)
    model_server.script(
        reply(f"Multiply, not subtract.\n\nbigpkg/core.py\n```python\n{FIXED_TRACED}```\n")
    )
    settings = load_settings(
        root,
        {
            "model": "openai/scripted",
            "api_base": model_server.base_url,
            "sandbox": "gvisor",
            "edit_format": "whole",
            "strategy": {"preset": "traces"},
            "max_iters": 1,
        },
    )
    result = await start_run(root, settings, gate=PolicyGate())
    assert (result.status.value, result.reason) == ("ok", "verified green on iteration 1")
    prompt = model_server.requests[0].body["messages"][-1]["content"]
    assert "bigpkg/core.py  (excerpt" in prompt
    tip = git.Repo(root).commit(result.branch)
    core = (tip.tree / "bigpkg" / "core.py").data_stream.read().decode()
    assert core == big_module().replace(TRACED, FIXED_TRACED)
