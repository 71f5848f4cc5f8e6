"""The headless loop end to end: the real CLI process, the scripted model server over
HTTP (through litellm), the real gVisor sandbox and real git.

Each test asserts the exit code, the JSON result, how many model requests were made,
the commits on fixloop/<run>, that events.jsonl and report.md agree, and that the
user's checkout is unchanged.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import git
import pytest

from engine.project.paths import FIXLOOP_DIR, run_path, runs_dir
from engine.run.run_directory import read_events
from tests.model_server import ScriptedModelServer, hang, reply, status
from tests.projects import MEAN_FIX, PROJECTS, SKIP_TOP, TOP_FIX, answer, committed_copy

REPO = Path(__file__).parents[2]
EXAMPLE = REPO / "examples" / "textstats"
KEY = "sk-test-e2e-0123456789"
# The runs name the backend: the default, auto, would take the docker backend when an
# engine runs (as in CI), which costs ~30% more per job. The demo's run keeps auto.
GVISOR = ("--sandbox", "gvisor")


pytestmark = [pytest.mark.sandbox, pytest.mark.usefixtures("needs_gvisor")]


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    """The buggy example as the user's checkout, which no run may change."""
    root = committed_copy(EXAMPLE, tmp_path, "the buggy example")
    before = checkout_state(root)
    yield root
    assert checkout_state(root) == before, "the run changed the user's checkout"


def checkout_state(root: Path) -> dict[str, Any]:
    repo = git.Repo(root)
    files = {
        str(p.relative_to(root)): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and ".git" not in p.parts and FIXLOOP_DIR not in p.parts
    }
    return {
        "files": files,
        "index": (root / ".git" / "index").read_bytes(),
        "head": repo.head.commit.hexsha,
        "branch": repo.active_branch.name,
    }


def fixloop(
    server: ScriptedModelServer, root: Path, *extra: str
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tui.cli",
            str(root),
            "--headless",
            "--json",
            "--model",
            "openai/scripted",
            "--api-base",
            server.base_url,
            *GVISOR,
            *extra,
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={"PATH": "/usr/bin:/bin", "OPENAI_API_KEY": KEY, "HOME": str(root.parent)},
        timeout=600,
        check=False,
    )
    assert KEY not in done.stdout + done.stderr
    result = json.loads(done.stdout) if done.stdout.strip() else {}
    return done, result


def branch_commits(root: Path, result: dict[str, Any]) -> list[str]:
    repo = git.Repo(root)
    return [c.message.strip() for c in repo.iter_commits(result["branch"], max_count=20)][
        : len(result["iterations"]) + 1
    ]


def assert_trail_agrees(result: dict[str, Any]) -> None:
    run_dir = Path(result["run_dir"])
    events = read_events(run_dir / "events.jsonl")
    finished = events[-1]
    assert finished.type == "RunFinished"
    assert (finished.status, finished.iterations) == (result["status"], len(result["iterations"]))
    if result["status"] != "ok":
        report = Path(result["report"]).read_text()
        assert f": {result['status']}" in report.splitlines()[0]
        assert result["reason"] in report
        assert result["branch"] in report if result["branch"] else "no branch was kept" in report


def test_fixed_on_iteration_2_is_ok_with_two_commits(
    model_server: ScriptedModelServer,
    project: Path,
) -> None:
    before = checkout_state(project)
    model_server.script(
        reply(answer("use true division in mean_word_length", MEAN_FIX)),
        reply(answer("return n words, not n - 1", TOP_FIX)),
    )
    done, result = fixloop(model_server, project)
    assert done.returncode == 0, done.stderr
    assert result["status"] == "ok"
    assert model_server.count == 2
    assert [it["status"] for it in result["iterations"]] == ["failing", "ok"]
    assert result["iterations"][1]["tests"]["passed"] == 5
    messages = branch_commits(project, result)
    assert messages[:2] == [
        "fixloop[iter 2/4]: return n words, not n - 1",
        "fixloop[iter 1/4]: use true division in mean_word_length",
    ]
    second_prompt = model_server.requests[1].body["messages"][-1]["content"]
    assert "most_common" in second_prompt or "top_words" in second_prompt
    assert "1 test now passes that failed before" in second_prompt
    assert checkout_state(project) == before
    assert_trail_agrees(result)


def test_the_json_says_the_time_to_the_verdict_and_per_iteration(
    model_server: ScriptedModelServer,
    project: Path,
) -> None:
    model_server.script(
        reply(answer("use true division in mean_word_length", MEAN_FIX)),
        reply(answer("return n words, not n - 1", TOP_FIX)),
    )
    done, result = fixloop(model_server, project)
    assert done.returncode == 0, done.stderr
    iterations = [it["duration_s"] for it in result["iterations"]]
    assert len(iterations) == 2
    assert all(seconds > 0 for seconds in iterations)
    assert result["time_per_iteration_s"] == pytest.approx(sum(iterations) / 2, abs=0.002)
    # From the run's start to its verdict: the baseline's verification and both iterations.
    assert result["duration_s"] >= sum(iterations)


def test_feedback_raw_tells_the_model_pytests_own_output(
    model_server: ScriptedModelServer, project: Path
) -> None:
    """The A/B arm against distillation, as a run option: the same loop, the raw tail."""
    model_server.script(
        reply(answer("use true division in mean_word_length", MEAN_FIX)),
        reply(answer("return n words, not n - 1", TOP_FIX)),
    )
    done, result = fixloop(model_server, project, "--feedback", "raw")
    assert done.returncode == 0, done.stderr
    assert result["status"] == "ok"
    for request in model_server.requests:
        told = request.body["messages"][-1]["content"]
        assert "$ python -m pytest -q  (exit 1)" in told
        assert "short test summary info" in told  # pytest's own words
        assert "Please fix it." in told
        assert "Verification failed" not in told
    second = model_server.requests[1].body["messages"][-1]["content"]
    assert "FAILED tests/test_core.py::test_top_words_returns_n" in second


def test_a_model_down_stops_the_run_resumable_and_resume_finishes_it(
    model_server: ScriptedModelServer,
    project: Path,
) -> None:
    """An outage is a pause: after the retries the run stops (exit 6, resumable, the cause in
    its trail), and `resume` once the server answers again ends it ok."""
    before = checkout_state(project)
    model_server.script(*[status(500)] * 4)
    done, result = fixloop(model_server, project)
    assert done.returncode == 6, done.stderr
    assert model_server.count == 4  # the client's retry budget
    assert result["status"] == "stopped", result
    assert "could not be reached" in result["reason"]
    assert "HTTP 500" in result["reason"]
    assert "fixloop-tui resume" in done.stderr
    assert "--api-base" in done.stderr
    run_dir = run_path(project, result["run_id"])
    assert read_events(run_dir / "events.jsonl")[-1].type == "RunStopped"
    listed = subprocess.run(
        [sys.executable, "-m", "tui.cli", "runs", str(project), "--json"],
        capture_output=True, text=True, cwd=REPO, check=True,
    )  # fmt: skip
    assert [run["status"] for run in json.loads(listed.stdout)] == ["stopped"]

    model_server.script(
        reply(answer("use true division in mean_word_length", MEAN_FIX)),
        reply(answer("return n words, not n - 1", TOP_FIX)),
    )
    resumed = subprocess.run(
        [
            sys.executable, "-m", "tui.cli", "resume", result["run_id"], str(project), "--json",
            "--api-base", model_server.base_url,
        ],
        capture_output=True, text=True, cwd=REPO, timeout=600, check=False,
        env={"PATH": "/usr/bin:/bin", "OPENAI_API_KEY": KEY, "HOME": str(project.parent)},
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["status"] == "ok"
    events = read_events(run_dir / "events.jsonl")
    resumed_at = [event for event in events if event.type == "RunResumed"]
    assert [(e.model, e.endpoint_changed) for e in resumed_at] == [("openai/scripted", True)]
    assert checkout_state(project) == before


def test_a_test_edit_is_held_back_and_the_next_packet_says_so(
    model_server: ScriptedModelServer, project: Path
) -> None:
    model_server.script(
        reply(answer("fix the mean; that top_words test is wrong", MEAN_FIX, SKIP_TOP)),
        reply(answer("return n words, not n - 1", TOP_FIX)),
    )
    done, result = fixloop(model_server, project)
    assert done.returncode == 0, done.stderr
    assert result["status"] == "ok"
    assert model_server.count == 2
    second_prompt = model_server.requests[1].body["messages"][-1]["content"]
    assert "Your edits to tests/test_core.py were NOT applied" in second_prompt
    tip = git.Repo(project).commit(result["branch"])
    assert "mark.skip" not in (tip.tree / "tests" / "test_core.py").data_stream.read().decode()
    assert_trail_agrees(result)


def test_an_edit_to_the_tests_data_is_held_back_like_a_test_edit(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    """Tests that read their cases from a file: rewriting the expected values is no fix."""
    source = tmp_path / "source" / "calc"
    (source / "tests" / "data").mkdir(parents=True)
    (source / "calc.py").write_text("def double(x):\n    return x + 2\n")
    (source / "tests" / "data" / "cases.json").write_text("[[3, 6], [5, 10]]\n")
    (source / "tests" / "test_calc.py").write_text(
        "import json\nfrom pathlib import Path\n\nimport pytest\n\nfrom calc import double\n"
        'CASES = json.loads((Path(__file__).parent / "data" / "cases.json").read_text())\n\n\n'
        '@pytest.mark.parametrize("x, expected", CASES)\n'
        "def test_double(x, expected):\n    assert double(x) == expected\n"
    )
    root = committed_copy(source, tmp_path, "tests from recorded cases")
    cheat = {"path": "tests/data/cases.json", "content": "[[3, 5], [5, 7]]\n"}
    fix = {"path": "calc.py", "content": "def double(x):\n    return x * 2\n"}
    model_server.script(reply(answer("the cases are wrong", cheat)), reply(answer("x * 2", fix)))
    done, result = fixloop(model_server, root, "--max-iters", "2")
    assert done.returncode == 0, done.stderr
    assert [it["status"] for it in result["iterations"]] == ["no_change", "ok"]
    second_prompt = model_server.requests[1].body["messages"][-1]["content"]
    assert "Your edits to tests/data/cases.json were NOT applied" in second_prompt
    tip = git.Repo(root).commit(result["branch"])
    assert (tip.tree / "tests" / "data" / "cases.json").data_stream.read() == b"[[3, 6], [5, 10]]\n"
    assert_trail_agrees(result)


def test_allowed_test_edits_turn_the_pass_suspicious_and_exit_4(
    model_server: ScriptedModelServer, project: Path
) -> None:
    model_server.script(reply(answer("fix the mean, skip the other", MEAN_FIX, SKIP_TOP)))
    done, result = fixloop(model_server, project, "--allow-test-edits")
    assert done.returncode == 4, done.stderr
    assert result["status"] == "suspicious_pass"
    assert "added @pytest.mark.skip at tests/test_core.py" in result["reason"]
    assert model_server.count == 1
    assert_trail_agrees(result)


# A conftest.py that turns every failed report into a pass: green with the bug still there.
FLIP_CONFTEST = {
    "path": "conftest.py",
    "content": "import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\n"
    "def pytest_runtest_makereport(item, call):\n    outcome = yield\n"
    '    outcome.get_result().outcome = "passed"\n',
}


def test_a_conftest_that_fakes_green_is_held_back_and_said_with_why(
    model_server: ScriptedModelServer, project: Path
) -> None:
    model_server.script(
        reply(answer("the tests are flaky", FLIP_CONFTEST)),
        reply(answer("fix both", MEAN_FIX, TOP_FIX)),
    )
    done, result = fixloop(model_server, project, "--max-iters", "2")
    assert done.returncode == 0, done.stderr
    assert [it["status"] for it in result["iterations"]] == ["no_change", "ok"]
    assert (
        "fixloop: [1/2] test edits held back: conftest.py (its hooks and fixtures decide how "
        "tests run and what they report): nothing else to commit" in done.stderr.splitlines()
    )
    second_prompt = model_server.requests[1].body["messages"][-1]["content"]
    assert "Your edits to conftest.py were NOT applied" in second_prompt
    assert "conftest.py" not in git.Repo(project).commit(result["branch"]).tree
    assert_trail_agrees(result)


def test_a_conftest_let_through_that_fakes_green_is_a_suspicious_pass_exit_4(
    model_server: ScriptedModelServer, project: Path
) -> None:
    model_server.script(reply(answer("the tests are flaky", FLIP_CONFTEST)))
    done, result = fixloop(model_server, project, "--allow-test-edits")
    assert done.returncode == 4, done.stderr
    assert result["status"] == "suspicious_pass"
    assert "test infrastructure conftest.py was added since the baseline" in result["reason"]
    assert "pytest_runtest_makereport in conftest.py:4" in result["reason"]
    assert model_server.count == 1
    assert_trail_agrees(result)


def test_a_test_file_repeated_unchanged_is_ignored_without_comment(
    model_server: ScriptedModelServer, project: Path
) -> None:
    core = (project / "textstats" / "core.py").read_text()
    fixed = core.replace("// len(found)", "/ len(found)").replace("(n - 1)", "(n)")
    tests = (project / "tests" / "test_core.py").read_text()
    whole = (
        "Fixed the division and the count.\n\ntextstats/core.py\n```python\n"
        f"{fixed}```\n\ntests/test_core.py\n```python\n{tests}```\n"
    )
    model_server.script(reply(whole))
    done, result = fixloop(model_server, project, "--edit-format", "whole")
    assert done.returncode == 0, done.stderr
    assert result["status"] == "ok"
    repo = git.Repo(project)
    changed = repo.git.diff("--name-only", f"{result['branch']}~1", result["branch"]).split()
    assert changed == ["textstats/core.py"]


def test_a_missing_module_is_env_failure_without_asking_the_model(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    root = committed_copy(PROJECTS / "missing_module", tmp_path)
    before = checkout_state(root)
    done, result = fixloop(model_server, root)
    assert done.returncode == 3, done.stderr
    assert result["status"] == "env_failure"
    assert "yaml_fixloop_missing" in result["reason"]
    assert model_server.count == 0
    assert checkout_state(root) == before
    assert_trail_agrees(result)


def test_the_projects_own_package_not_importing_at_the_baseline_is_env_failure(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    root = committed_copy(PROJECTS / "src_not_installed", tmp_path)
    done, result = fixloop(model_server, root)
    assert done.returncode == 3, done.stderr
    assert result["status"] == "env_failure"
    assert "own package 'tallies' does not import" in result["reason"]
    assert f"-m pip install -e {root}`" in result["reason"]
    assert model_server.count == 0
    assert_trail_agrees(result)


def core_edit(search: str, replace: str) -> dict[str, str]:
    """One search/replace edit of the example's textstats/core.py."""
    return {"path": "textstats/core.py", "search": search, "replace": replace}


def comment(text: str) -> dict[str, str]:
    return core_edit("WORD = re.compile", f"# {text}\nWORD = re.compile")


def test_the_same_failure_twice_is_stalled(
    model_server: ScriptedModelServer, project: Path
) -> None:
    model_server.script(
        reply(answer("document the regex", comment("words are letters"))),
        reply(answer("document it more", comment("and apostrophes"))),
    )
    # Comments that change no code are edits only without --code-noop (on by default).
    done, result = fixloop(model_server, project, "--no-restart-on-stall", "--no-code-noop")
    assert done.returncode == 1, done.stderr
    assert result["status"] == "stalled"
    assert model_server.count == 2
    second_prompt = model_server.requests[1].body["messages"][-1]["content"]
    assert "This is the 2nd time you see this exact error" in second_prompt
    assert len(branch_commits(project, result)) >= 2
    assert_trail_agrees(result)


def test_answers_that_change_no_file_twice_are_stalled(
    model_server: ScriptedModelServer, project: Path
) -> None:
    same = core_edit("WORD = re.compile", "WORD = re.compile")
    model_server.script(
        reply(answer("the regex is fine", same)),
        reply(answer("the regex is still fine", same)),
        reply(answer("a third answer nobody should ask for", comment("unused"))),
    )
    done, result = fixloop(model_server, project, "--no-noop-retry", "--no-restart-on-stall")
    assert done.returncode == 1, done.stderr
    assert result["status"] == "stalled"
    assert result["reason"] == "2 answers in a row changed no code"
    assert model_server.count == 2
    second_prompt = model_server.requests[1].body["messages"][-1]["content"]
    assert "Your last answer changed no file" in second_prompt
    assert [r["status"] for r in result["iterations"]] == ["no_change", "no_change"]
    # Nothing was committed, so no branch was left behind.
    assert result["branch"] == ""
    assert git.Repo(project).git.branch("--list", "fixloop/*") == ""
    events = read_events(Path(result["run_dir"]) / "events.jsonl")
    tripped = [e for e in events if e.type == "GuardTripped"]
    assert [(e.guard, e.n) for e in tripped] == [("stalled", 2)]
    assert_trail_agrees(result)


def divide_by(before: str, after: str) -> dict[str, str]:
    return core_edit(f"// {before}", f"// {after}")


def test_no_rise_in_passed_tests_is_no_progress(
    model_server: ScriptedModelServer, project: Path
) -> None:
    model_server.script(
        reply(answer("guard the length", divide_by("len(found)", "(len(found) + 1)"))),
        reply(answer("guard it again", divide_by("(len(found) + 1)", "(len(found) + 4)"))),
    )
    done, result = fixloop(model_server, project)
    assert done.returncode == 1, done.stderr
    assert result["status"] == "no_progress"
    assert model_server.count == 2
    assert_trail_agrees(result)


def test_the_iteration_cap_is_exhausted(model_server: ScriptedModelServer, project: Path) -> None:
    fewer = core_edit("(n - 1)", "(n - 2)")
    model_server.script(
        reply(answer("fix the mean", MEAN_FIX)),
        reply(answer("one fewer word", fewer)),
    )
    done, result = fixloop(model_server, project, "--max-iters", "2")
    assert done.returncode == 1, done.stderr
    assert result["status"] == "exhausted"
    assert model_server.count == 2
    assert len(result["iterations"]) == 2
    assert_trail_agrees(result)


def test_an_infinite_loop_is_a_timeout_and_the_loop_goes_on(
    model_server: ScriptedModelServer, project: Path
) -> None:
    hang = core_edit("return sum(len(w) for w in found) // len(found)", "while True:\n        pass")
    unhang = core_edit(
        "while True:\n        pass", "return sum(len(w) for w in found) / len(found)"
    )
    model_server.script(
        reply(answer("loop until done", hang)),
        reply(answer("no loop; true division; n words", unhang, TOP_FIX)),
    )
    # The stage's own timeout (a hang the per-test limit cannot stop; test_hang.py has that).
    done, result = fixloop(model_server, project, "--exec-timeout", "10", "--test-timeout", "0")
    assert done.returncode == 0, done.stderr
    assert result["iterations"][0]["error_class"] == "timeout"
    assert result["status"] == "ok"
    second_prompt = model_server.requests[1].body["messages"][-1]["content"]
    assert "timed out" in second_prompt


def test_malformed_output_is_fed_back_and_the_loop_goes_on(
    model_server: ScriptedModelServer, project: Path
) -> None:
    model_server.script(
        reply("I think the bug is in the division, {but I am not sure"),
        reply(answer("true division; n words", MEAN_FIX, TOP_FIX)),
    )
    done, result = fixloop(model_server, project)
    assert done.returncode == 0, done.stderr
    assert [it["status"] for it in result["iterations"]] == ["format_error", "ok"]
    second_prompt = model_server.requests[1].body["messages"][-1]["content"]
    assert "Your answer could not be used" in second_prompt


def test_a_token_budget_ends_budget_exceeded(
    model_server: ScriptedModelServer, project: Path
) -> None:
    model_server.script(reply(answer("fix the mean", MEAN_FIX)))
    done, result = fixloop(model_server, project, "--max-tokens", "50")
    assert done.returncode == 5, done.stderr
    assert result["status"] == "budget_exceeded"
    assert model_server.count == 1
    assert_trail_agrees(result)


def test_no_tests_at_the_baseline_is_refused_before_the_model_is_asked(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    """The model would add `assert True` and call it green: the run never gets there."""
    root = committed_copy(PROJECTS / "no_tests", tmp_path)
    smoke = {"path": "tests/test_smoke.py", "content": "def test_smoke():\n    assert True\n"}
    model_server.script(reply(answer("a test", smoke)))
    done, result = fixloop(model_server, root, "--max-iters", "2")
    assert done.returncode == 2, done.stderr
    assert result["status"] == "no_tests"
    assert "write a test that shows the bug, or build from a spec" in result["reason"]
    assert model_server.count == 0
    assert result["branch"] == ""
    assert git.Repo(root).git.branch("--list", "fixloop/*") == ""


def headless_command(
    server: ScriptedModelServer, root: Path, *extra: str
) -> tuple[list[str], dict[str, str]]:
    """The command and environment of a headless run started by hand (to be signalled)."""
    env = {"PATH": "/usr/bin:/bin", "OPENAI_API_KEY": KEY, "HOME": str(root.parent)}
    command = [sys.executable, "-m", "tui.cli", str(root), "--headless", *extra]
    command += ["--model", "openai/scripted", "--api-base", server.base_url, *GVISOR]
    return command, env


def wait_for_requests(
    server: ScriptedModelServer, process: subprocess.Popen[str] | subprocess.Popen[bytes], n: int
) -> None:
    """Until the run has asked the model `n` times (and is still running)."""
    deadline = time.monotonic() + 300
    while server.count < n:
        assert process.poll() is None, "the run ended before it could be signalled"
        assert time.monotonic() < deadline
        time.sleep(0.2)


def test_kill_9_between_iterations_then_resume_loses_no_commit(
    model_server: ScriptedModelServer, project: Path
) -> None:
    model_server.script(
        reply(answer("use true division in mean_word_length", MEAN_FIX)),
        hang(120),  # the process is killed while it waits for this answer
        reply(answer("return n words, not n - 1", TOP_FIX)),
    )
    command, env = headless_command(model_server, project)
    process = subprocess.Popen(
        command, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_for_requests(model_server, process, 2)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    [run_dir] = runs_dir(project).iterdir()
    committed = [e for e in read_events(run_dir / "events.jsonl") if e.type == "Committed"]
    assert [e.n for e in committed] == [1]
    done = subprocess.run(
        [sys.executable, "-m", "tui.cli", "resume", run_dir.name, str(project), "--json"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "[2/4] model answered" in done.stderr  # the resumed run knows its iteration cap
    result = json.loads(done.stdout)
    assert result["status"] == "ok"
    assert [it["n"] for it in result["iterations"]] == [1, 2]
    assert result["iterations"][0]["commit"] == committed[0].sha
    repo = git.Repo(project)
    assert repo.is_ancestor(committed[0].sha, result["final_commit"])
    assert model_server.count == 3
    assert_trail_agrees(result)


def test_sigterm_ends_the_run_as_ctrl_c_does_with_its_end_in_the_trail(
    model_server: ScriptedModelServer, project: Path
) -> None:
    """`timeout`, `kill` or a cancelled CI job: the run's trail says how it ended."""
    model_server.script(hang(120))
    command, env = headless_command(model_server, project, "--json")
    process = subprocess.Popen(
        command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        wait_for_requests(model_server, process, 1)
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, stderr
    assert stderr.rstrip().endswith("fixloop-tui: terminated (SIGTERM)")
    [run_dir] = runs_dir(project).iterdir()
    finished = read_events(run_dir / "events.jsonl")[-1]
    assert finished.type == "RunFinished"
    assert (finished.status, finished.reason) == ("aborted", "terminated (SIGTERM)")


def test_the_demo_repairs_a_fresh_copy_of_the_example(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    tmp_path.chmod(0o755)
    model_server.script(reply(answer("true division; n words", MEAN_FIX, TOP_FIX)))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tui.cli",
            "demo",
            "--headless",
            "--json",
            "--dir",
            str(tmp_path),
            "--model",
            "openai/scripted",
            "--api-base",
            model_server.base_url,
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={"PATH": "/usr/bin:/bin", "OPENAI_API_KEY": KEY, "HOME": str(tmp_path)},
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "ok"
    demo = tmp_path / "textstats"
    assert (run_path(demo, result["run_id"]) / "events.jsonl").is_file()
    assert git.Repo(demo).commit(result["branch"]).hexsha == result["final_commit"]
    assert "// len(found)" in (EXAMPLE / "textstats" / "core.py").read_text()  # untouched
    events = read_events(Path(result["run_dir"]) / "events.jsonl")
    started = next(e for e in events if e.type == "RunStarted")
    if os.geteuid() != 0:  # a normal user (.ci/rootless): auto took a rootless backend,
        # the user's rootless engine if it answers (.ci/rootless starts one), else runsc
        assert started.sandbox.startswith("gvisor (runsc --rootless") or (
            started.sandbox.startswith("docker (")
            and started.sandbox.endswith(", gVisor, rootless: rlimits and a memory watch)")
        ), started.sandbox
    elif os.environ.get("FIXLOOP_DOCKER_URL"):  # CI runs an engine: auto must have taken it
        assert started.sandbox.startswith("docker ("), started.sandbox
        assert ", gVisor" in started.sandbox


def test_answers_that_only_edit_tests_are_named_held_back_and_stall_saying_so(
    model_server: ScriptedModelServer, project: Path
) -> None:
    model_server.script(
        reply(answer("", SKIP_TOP)),
        reply(answer("that test is wrong", SKIP_TOP)),
    )
    done, result = fixloop(model_server, project, "--max-iters", "2")
    assert result["status"] == "stalled", done.stderr
    assert result["reason"] == "2 answers in a row changed only test files, which are held back"
    lines = done.stderr.splitlines()
    held = "test edits held back: tests/test_core.py: nothing else to commit"
    assert [f"fixloop: [{n}/2] {held}" in lines for n in (1, 2)] == [True, True]
    report = Path(result["report"]).read_text()
    assert report.count("Verifier: test edits held back: tests/test_core.py") == 2
    second_prompt = model_server.requests[1].body["messages"][-1]["content"]
    assert "Your edits to tests/test_core.py were NOT applied" in second_prompt
    assert_trail_agrees(result)
