"""Issue 17's levers end to end: the real CLI process, the scripted model server over HTTP
(through litellm), the real gVisor sandbox and real git. Candidates verified side by side, a
re-asked unchanged answer, and the escalation model after a stall."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import git
import pytest

from engine.run.run_directory import read_events
from tests.e2e.test_headless import (
    EXAMPLE,
    assert_trail_agrees,
    branch_commits,
    checkout_state,
    comment,
    core_edit,
    fixloop,
)
from tests.model_server import ScriptedModelServer, held, replies, reply
from tests.projects import MEAN_FIX, TOP_FIX, answer, committed_copy

pytestmark = [pytest.mark.sandbox, pytest.mark.usefixtures("needs_gvisor")]


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    """The buggy example as the user's checkout, which no run may change."""
    root = committed_copy(EXAMPLE, tmp_path, "the buggy example")
    before = checkout_state(root)
    yield root
    assert checkout_state(root) == before, "the run changed the user's checkout"


WRONG = answer("fix the mean only", MEAN_FIX)
UNCHANGED = answer("the regex is fine", core_edit("WORD = re.compile", "WORD = re.compile"))
RIGHT = answer("fix the mean and top_words", MEAN_FIX, TOP_FIX)


def test_three_candidates_wrong_unchanged_right_end_ok_on_iteration_1(
    model_server: ScriptedModelServer, project: Path
) -> None:
    # A server that ignores `n`: candidates 2 and 3, asked together, get one answer, and the
    # third is asked on its own. The requests are concurrent: which candidate gets which
    # answer may vary, the outcome may not.
    model_server.script(reply(WRONG), reply(UNCHANGED), reply(RIGHT))
    done, result = fixloop(model_server, project, "--candidates", "3")
    assert done.returncode == 0, done.stderr
    assert result["status"] == "ok"
    assert [it["status"] for it in result["iterations"]] == ["ok"]
    assert model_server.count == 3
    assert sorted(r.body.get("n", 1) for r in model_server.requests) == [1, 1, 2]
    temperatures = sorted(str(r.body.get("temperature")) for r in model_server.requests)
    assert temperatures == ["0.0", "0.8", "0.8"]
    # One commit on the branch, the right one.
    assert branch_commits(project, result)[0] == "fixloop[iter 1/4]: fix the mean and top_words"
    repo = git.Repo(project)
    assert len(list(repo.iter_commits(f"{result['branch']}", max_count=5))) == 2  # + baseline
    # All three in the trail, with their verdicts.
    trail = Path(result["run_dir"]) / "iterations" / "01" / "candidates"
    verdicts = {int(k.name): json.loads((k / "verdict.json").read_text()) for k in trail.iterdir()}
    assert sorted(verdicts) == [1, 2, 3]
    outcome = sorted(v["verdict"] or v["dropped"] for v in verdicts.values())
    assert outcome == ["changes no file", "failing", "ok"]
    events = read_events(Path(result["run_dir"]) / "events.jsonl")
    chosen = [e for e in events if e.type == "CandidateChosen"]
    assert len(chosen) == 1
    assert verdicts[chosen[0].k]["verdict"] == "ok"
    # The progress lines say whose answer each one is.
    for k in (1, 2, 3):
        assert f"[1/4] candidate {k} answered:" in done.stderr
    assert "model answered" not in done.stderr
    assert_trail_agrees(result)


def test_a_headless_run_does_not_wait_for_candidates_once_one_verified_ok(
    model_server: ScriptedModelServer, project: Path
) -> None:
    # The first request answered gets the fix; every other one is held until the server
    # stops. Which candidate's request comes first may vary: that one is ok, and the other two
    # are given up on (their requests cancelled through litellm) rather than waited for.
    never = threading.Event()
    model_server.script(reply(RIGHT), held(reply(WRONG), never), held(reply(WRONG), never))
    done, result = fixloop(model_server, project, "--candidates", "3")
    assert done.returncode == 0, done.stderr
    assert (result["status"], [it["status"] for it in result["iterations"]]) == ("ok", ["ok"])
    trail = Path(result["run_dir"]) / "iterations" / "01" / "candidates"
    verdicts = {int(k.name): json.loads((k / "verdict.json").read_text()) for k in trail.iterdir()}
    [ok] = [k for k, v in verdicts.items() if v["verdict"] == "ok"]
    given_up = {k: v["dropped"] for k, v in verdicts.items() if k != ok}
    assert given_up == dict.fromkeys(given_up, f"not waited for: candidate {ok} verified ok first")
    assert len(given_up) == 2
    events = read_events(Path(result["run_dir"]) / "events.jsonl")
    assert sorted(e.candidate for e in events if e.type == "ModelGivenUp") == sorted(given_up)
    assert [e.k for e in events if e.type == "CandidateChosen"] == [ok]
    assert done.stderr.count("not waited for: another verified ok") == 2
    assert branch_commits(project, result)[0] == "fixloop[iter 1/4]: fix the mean and top_words"
    assert_trail_agrees(result)


def test_sampled_candidates_share_one_request_where_the_server_takes_n(
    model_server: ScriptedModelServer, project: Path
) -> None:
    model_server.script(reply(WRONG), replies(UNCHANGED, RIGHT))
    done, result = fixloop(model_server, project, "--candidates", "3")
    assert done.returncode == 0, done.stderr
    assert (result["status"], len(result["iterations"])) == ("ok", 1)
    # Two requests, the prompt sent twice for three answers: the greedy one, and the sampled
    # two together.
    assert model_server.count == 2
    together = next(r.body for r in model_server.requests if r.body.get("n"))
    assert (together["n"], together["temperature"], together["seed"]) == (2, 0.8, 1)
    assert "[1/4] candidates 2-3 asked in one request (n = 2)" in done.stderr
    events = read_events(Path(result["run_dir"]) / "events.jsonl")
    asked = {e.candidate: e.together for e in events if e.type == "ModelRequested"}
    assert asked == {1: 1, 2: 2, 3: 2}
    prompts = {e.candidate: e.prompt_tokens for e in events if e.type == "ModelResponded"}
    assert prompts[1] > 0
    assert prompts[2] > 0
    assert prompts[3] == 0  # its prompt was billed with candidate 2's
    trail = Path(result["run_dir"]) / "iterations" / "01" / "candidates"
    assert (trail / "3" / "response.txt").read_text() == RIGHT
    chosen = [e for e in events if e.type == "CandidateChosen"]
    assert [e.k for e in chosen] == [3]
    assert_trail_agrees(result)


def test_an_unchanged_answer_is_asked_again_in_the_same_iteration(
    model_server: ScriptedModelServer, project: Path
) -> None:
    model_server.script(reply(UNCHANGED), reply(RIGHT))
    done, result = fixloop(model_server, project)
    assert done.returncode == 0, done.stderr
    assert (result["status"], len(result["iterations"])) == ("ok", 1)
    assert model_server.count == 2
    again = model_server.requests[1].body
    assert again["temperature"] == 0.7
    assert "Your last answer changed nothing" in again["messages"][-1]["content"]
    assert_trail_agrees(result)


def test_with_reask_candidates_two_unchanged_candidates_are_asked_once_more(
    model_server: ScriptedModelServer, project: Path
) -> None:
    model_server.script(reply(UNCHANGED), reply(UNCHANGED), reply(RIGHT))
    done, result = fixloop(model_server, project, "--candidates", "2", "--reask-candidates")
    assert done.returncode == 0, done.stderr
    assert (result["status"], len(result["iterations"])) == ("ok", 1)
    assert model_server.count == 3
    again = model_server.requests[2].body
    assert again["temperature"] == 0.7
    assert "Your last answer changed nothing" in again["messages"][-1]["content"]
    assert "[1/4] the answer changed no file: asked again at temperature 0.7" in done.stderr
    assert "[1/4] candidate 3 answered:" in done.stderr
    events = read_events(Path(result["run_dir"]) / "events.jsonl")
    assert [e.k for e in events if e.type == "CandidateChosen"] == [3]
    assert branch_commits(project, result)[0] == "fixloop[iter 1/4]: fix the mean and top_words"
    assert_trail_agrees(result)


def test_the_escalation_model_takes_over_after_a_stall(
    model_server: ScriptedModelServer, project: Path
) -> None:
    model_server.script(
        reply(answer("document the regex", comment("words are letters"))),
        reply(answer("document it more", comment("and apostrophes"))),
        reply(RIGHT),
    )
    done, result = fixloop(
        model_server,
        project,
        "--escalate-model",
        "openai/stronger",
        "--no-restart-on-stall",
        "--max-iters",
        "5",
    )
    assert done.returncode == 0, done.stderr
    assert result["status"] == "ok"
    assert [r.body["model"] for r in model_server.requests] == ["scripted", "scripted", "stronger"]
    events = read_events(Path(result["run_dir"]) / "events.jsonl")
    changed = [(e.kind, e.model) for e in events if e.type == "StrategyChanged"]
    assert changed == [("escalate", "openai/stronger")]
    assert_trail_agrees(result)
