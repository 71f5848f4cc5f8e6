"""What the loop sends the model under each prompt profile, over real git: a scripted model
that keeps its prompts, and a sandbox whose one failing test calls the function under repair
(the case where the full prompt shows that function twice)."""

from __future__ import annotations

from pathlib import Path

import git
import pytest

from engine.project.workspace import Workspace
from engine.run.loop import Deps, FixLoop
from engine.run.outcome import RunConfig, RunResult
from engine.run.run_directory import RunDirectory
from engine.verify.execute import Verifier
from engine.verify.results import StageKind, TestCase, TestCounts, TestReport
from engine.verify.stages import Stage
from sandbox import ExecRequest, ExecResult
from tests.engine.test_loop import ScriptedGate, ScriptedModel, TreeSandbox, answer

BROKEN = "def double(x):\n    return x + 2\n"
WRONG = "def double(x):\n    return x + 3\n"
FIXED = "def double(x):\n    return x * 2\n"
# test_two passes with the bug: only test_double fails, and its file is not the prompt's.
TESTS = (
    "from calc import double\n\n\ndef test_double():\n    assert double(3) == 6\n\n\n"
    "def test_two():\n    assert double(2) == 4\n"
)

pytestmark = pytest.mark.usefixtures("git_as_tester")


class DoublingSandbox(TreeSandbox):
    """Green when calc.py doubles; else test_double fails on its assertion, quoting what
    double(3) returned, so a different wrong answer fails differently."""

    async def run(self, request: ExecRequest) -> ExecResult:
        self.jobs += 1
        code = (request.workdir / "calc.py").read_text()
        green = code == FIXED
        got = 3 + int(code.rsplit("+ ", 1)[1]) if "+ " in code else 0
        nodeid = "tests/test_calc.py::test_double"
        failed = TestCase(
            nodeid=nodeid,
            outcome="failed",
            file="tests/test_calc.py",
            line=5,
            assertion="assert double(3) == 6",
            exception_type="AssertionError",
            exception_message=f"assert {got} == 6",
            expected="6",
            actual=str(got),
        )
        counts = TestCounts(collected=2, passed=2 if green else 1, failed=0 if green else 1)
        report = TestReport(
            exitstatus=0 if green else 1,
            counts=counts,
            nodeids=[nodeid, "tests/test_calc.py::test_two"],
            tests=[] if green else [failed],
        )
        stdout = "" if green else f"FAILED {nodeid} - assert {got} == 6"
        return self.result(report, 0 if green else 1, stdout, request)


async def run_loop(
    tmp_path: Path,
    model: ScriptedModel,
    code: str = BROKEN,
    more: dict[str, str] | None = None,
    tests: str = TESTS,
    **config: object,
) -> RunResult:
    root = tmp_path / "project"
    (root / "tests").mkdir(parents=True)
    (root / "calc.py").write_text(code)
    for name, text in (more or {}).items():
        (root / name).write_text(text)
    (root / "tests" / "test_calc.py").write_text(tests)
    repo = git.Repo.init(root)
    repo.git.add(A=True)
    repo.index.commit("baseline")
    run_id = "20260101-000000-prompt"
    deps = Deps(
        model=model,
        verifier=Verifier(
            DoublingSandbox(), [Stage(name="test", kind=StageKind.TESTS, cmd="pytest")]
        ),
        workspace=Workspace.create(root, run_id),
        gate=ScriptedGate(),
        run_dir=RunDirectory.create(root, run_id),
        approval="step",
        versions={"fixloop-tui": "test"},
    )
    settings = RunConfig.model_validate({"model": model.model, "no_progress_limit": 9, **config})
    return await FixLoop(settings, deps).run()


def two_tries() -> ScriptedModel:
    return ScriptedModel(answer(("calc.py", WRONG)), answer(("calc.py", FIXED)))


async def test_the_small_profile_sends_no_test_file_and_no_function_twice(tmp_path: Path) -> None:
    model = two_tries()
    result = await run_loop(tmp_path, model, prompt_profile="small")
    assert [r.status for r in result.iterations] == ["failing", "ok"]
    for n, code in ((1, BROKEN), (2, WRONG)):
        told = model.prompt(n)
        assert told.startswith(f"calc.py\n```python\n{code}```")
        assert "def test_two" not in told
        assert told.count("def double(x):") == 1
        assert "The failing line calls double" not in told
        assert "failing line: assert double(3) == 6" in told
        last = told.rsplit("\n\n", 1)[1]  # what to send back: the json shape, the real path
        assert last.startswith("Answer with one JSON object")
        assert '{"path": "calc.py", "search"' in last
    assert model.prompts[0][0].content.startswith("You fix bugs in Python code")


async def test_the_full_profile_is_todays_prompt(tmp_path: Path) -> None:
    model = two_tries()
    result = await run_loop(tmp_path, model, prompt_profile="full")
    assert [r.status for r in result.iterations] == ["failing", "ok"]
    for n in (1, 2):
        told = model.prompt(n)
        assert told.startswith("Task: Make the failing tests pass.\n\nFiles:")
        assert "tests/test_calc.py  (test file: read only)" in told
        assert "def test_two" in told
        assert told.count("def double(x):") == 2


async def test_without_repeat_called_the_full_prompt_shows_the_function_once(
    tmp_path: Path,
) -> None:
    model = two_tries()
    result = await run_loop(tmp_path, model, prompt_profile="full", repeat_called=False)
    assert [r.status for r in result.iterations] == ["failing", "ok"]
    for n in (1, 2):
        told = model.prompt(n)
        assert "def test_two" in told  # the test file, as in the full prompt
        assert told.count("def double(x):") == 1
        assert "The failing line calls double" not in told
        assert "failing line: assert double(3) == 6" in told


async def test_with_called_code_the_repeat_leaves_the_docstring_out(tmp_path: Path) -> None:
    documented = BROKEN.replace(":\n", ':\n    """Double x."""\n', 1)
    model = ScriptedModel(answer(("calc.py", FIXED)))
    result = await run_loop(tmp_path, model, documented, prompt_profile="full", called_code=True)
    assert result.status.value == "ok"
    told = model.prompt(1)
    assert f"calc.py\n```python\n{documented}```" in told  # the file whole, docstring and all
    assert (
        "The failing line calls double, defined at calc.py:1 (its docstring left out):\n"
        "```python\ndef double(x):\n    return x + 2\n```"
    ) in told


async def test_code_last_shows_the_tests_then_the_failure_then_the_code(tmp_path: Path) -> None:
    model = two_tries()
    levers = {"prompt_profile": "full", "repeat_called": False, "code_last": True}
    result = await run_loop(tmp_path, model, **levers)
    assert [r.status for r in result.iterations] == ["failing", "ok"]
    for n, code in ((1, BROKEN), (2, WRONG)):
        told = model.prompt(n)
        assert told.startswith("Task: Make the failing tests pass.\n\nTests:\n\ntests/test_calc")
        tests = told.index("def test_two")
        failure = told.index("failing line: assert double(3) == 6")
        code_at = told.index(f"The code to fix:\n\ncalc.py\n```python\n{code}```")
        assert tests < failure < code_at
        assert told.count("def double(x):") == 1


async def test_test_focus_shows_the_failing_test_not_the_passing_one(tmp_path: Path) -> None:
    model = two_tries()
    result = await run_loop(tmp_path, model, prompt_profile="full", test_focus=True)
    assert [r.status for r in result.iterations] == ["failing", "ok"]
    for n in (1, 2):
        told = model.prompt(n)
        assert told.startswith("Task: Make the failing tests pass.\n\nFiles:")
        assert "tests/test_calc.py  (test file, read only: its failing tests" in told
        assert "from calc import double\n...\ndef test_double():" in told
        assert "def test_two" not in told
        assert told.count("def double(x):") == 2


async def test_raw_feedback_shows_the_whole_test_file_even_with_test_focus(
    tmp_path: Path,
) -> None:
    model = two_tries()
    await run_loop(tmp_path, model, prompt_profile="full", feedback="raw", test_focus=True)
    assert "def test_two" in model.prompt(1)


async def test_raw_feedback_under_the_small_profile_tells_the_output_after_the_code(
    tmp_path: Path,
) -> None:
    model = two_tries()
    result = await run_loop(tmp_path, model, prompt_profile="small", feedback="raw")
    assert result.status.value == "ok"
    for n, got in ((1, 5), (2, 6)):
        told = model.prompt(n)
        assert told.startswith("calc.py\n```python")
        failed = f"FAILED tests/test_calc.py::test_double - assert {got} == 6"
        assert f"$ pytest  (exit 1)\n{failed}\n\nPlease fix it." in told
        assert "Verification failed" not in told
        # The raw tail does not quote the assertion: the failing test's own lines stand in.
        assert "def test_double():\n    assert double(3) == 6\n```" in told
        assert "def test_two" not in told


@pytest.mark.parametrize("profile", ["small", "full"])
async def test_a_bare_block_is_taken_for_the_one_file_the_prompt_lets_the_model_change(
    tmp_path: Path, profile: str
) -> None:
    """The embedded model, shown calc.py to fix, often sends the block without the path line."""
    bare = f"```python\n{FIXED}```\n"
    model = ScriptedModel(bare)
    result = await run_loop(tmp_path, model, edit_format="whole", prompt_profile=profile)
    assert [r.status for r in result.iterations] == ["ok"]
    assert len(model.prompts) == 1


async def test_a_bare_block_is_the_file_named_when_the_prompt_shows_a_helper_too(
    tmp_path: Path,
) -> None:
    bare = f"```python\n{FIXED}```\n"
    model = ScriptedModel(bare)
    result = await run_loop(
        tmp_path,
        model,
        more={"helper.py": "ONE = 1\n"},
        tests=f"import helper\n{TESTS}",  # the helper the tests import is shown, writable
        edit_format="whole",
        prompt_profile="full",
        files=["calc.py"],
    )
    assert "helper.py\n```python\nONE = 1\n```" in model.prompt(1)
    assert [r.status for r in result.iterations] == ["ok"]


def test_the_replay_script_reads_the_files_a_prompt_let_the_model_change() -> None:
    """bench/replay_unusable.py finds them in a prompt as the loop renders it."""
    from bench.replay_unusable import writable_shown
    from engine.feedback.prompts import PromptFile, messages

    files = [
        PromptFile(path="calc.py", text=BROKEN),
        PromptFile(path="tests/test_calc.py", text=TESTS, read_only=True),
        PromptFile(path="big.py", text="X = 1\n", excerpt=True),
    ]
    prompt = messages("Fix it.", files, "Verification failed.", "whole")[-1].content
    assert writable_shown(prompt) == ["calc.py", "big.py"]


async def test_a_bare_block_is_unusable_when_the_prompt_shows_two_files_to_change(
    tmp_path: Path,
) -> None:
    bare = f"```python\n{FIXED}```\n"
    result = await run_loop(
        tmp_path,
        ScriptedModel(bare),
        more={"helper.py": "def helper():\n    return 1\n"},
        edit_format="whole",
        prompt_profile="full",
        files=["calc.py", "helper.py"],
        max_iterations=1,
    )
    assert [r.status for r in result.iterations] == ["format_error"]
