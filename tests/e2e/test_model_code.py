"""Model code never ends the run by itself, end to end: the real CLI, the scripted model
server over HTTP, the real gVisor sandbox and real git. A candidate that fills the sandbox's
disk is told so in its packet and the run goes on to the next answer."""

from __future__ import annotations

from pathlib import Path

import git
import pytest

from tests.e2e.test_headless import EXAMPLE, assert_trail_agrees, core_edit, fixloop
from tests.model_server import ScriptedModelServer, reply
from tests.projects import TOP_FIX, answer, committed_copy

pytestmark = [pytest.mark.sandbox, pytest.mark.usefixtures("needs_gvisor")]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return committed_copy(EXAMPLE, tmp_path, "the buggy example")


MEAN = "return sum(len(w) for w in found) // len(found)"
FILL = (
    'with open("cache.bin", "wb") as out:\n'
    "        while True:\n"
    '            out.write(b"0" * 2**20)\n'
    f"    {MEAN}"
)
TRUE_DIVISION = "return sum(len(w) for w in found) / len(found)"


def test_a_candidate_that_fills_the_disk_gets_a_packet_and_the_run_goes_on(
    model_server: ScriptedModelServer, project: Path
) -> None:
    model_server.script(
        reply(answer("cache the words on disk", core_edit(MEAN, FILL))),
        reply(answer("no cache; true division; n words", core_edit(FILL, TRUE_DIVISION), TOP_FIX)),
    )
    done, result = fixloop(model_server, project)
    assert done.returncode == 0, done.stderr
    assert result["status"] == "ok"
    assert [it["status"] for it in result["iterations"]] == ["failing", "ok"]
    assert result["iterations"][0]["error_class"] == "sandbox_limit"
    second_prompt = model_server.requests[1].body["messages"][-1]["content"]
    assert "your code filled the sandbox's disk (256 MiB tmpfs)" in second_prompt
    assert_trail_agrees(result)


def test_a_committed_link_loop_ends_the_run_at_the_baseline_naming_it(
    model_server: ScriptedModelServer, project: Path
) -> None:
    (project / "textstats" / "again").symlink_to("..")
    repo = git.Repo(project)
    repo.git.add("-A")
    repo.index.commit("a link back to the project")
    done, result = fixloop(model_server, project)
    assert done.returncode == 3, done.stderr
    assert result["status"] == "env_failure"
    assert result["reason"] == (
        "workspace link textstats/again -> .. leads back to a directory holding it (a loop): "
        "fixloop will not copy it into the sandbox; remove the link or point it at a file "
        "inside the project"
    )
    assert model_server.count == 0
    assert_trail_agrees(result)
