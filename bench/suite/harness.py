"""A bench task as a project: `solution.py` (the prompt, or a mutant), the hidden tests made
from the task's `check(candidate)`, committed in a throwaway git repository for the loop; and
the one check outside the loop, whether a mutant fails its tests at all.

`check`'s top-level asserts become one test each when its body is nothing but asserts (most
HumanEval tasks), so a packet says how many of them fail; otherwise it is one test. Either
way a task passes only when every assert does.
"""

from __future__ import annotations

import ast
import asyncio
import shutil
import tempfile
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from bench.suite.tasks import BenchTask
from engine.feedback.distill import summarise
from engine.project.git_plumbing import git_bytes
from engine.verify.execute import Verifier
from engine.verify.results import StageKind
from engine.verify.stages import Stage
from engine.verify.tree import examine_tree
from engine.verify.verdict import Verdict
from sandbox import Limits, Sandbox

SOLUTION = "solution.py"
TEST_FILE = "test_solution.py"
TEST_CMD = f"python -m pytest -q {TEST_FILE}"
TEST_STAGE = Stage(name="tests", kind=StageKind.TESTS, cmd=TEST_CMD)
_AUTHOR = ("-c", "user.name=fixloop bench", "-c", "user.email=bench@fixloop.invalid")


# --- the files ------------------------------------------------------------------------------


def hidden_tests(task: BenchTask) -> str:
    """The pytest file for a task: its test code, then one test per assert of `check`."""
    asserts, argument = _split_check(task.test)
    header = (
        f"# fixloop bench: the hidden tests of {task.task_id}, from its check(candidate).\n"
        "# HumanEval runs prompt, completion and test in one namespace: so does this file.\n"
        "from solution import *  # noqa: F403\n"
        f"from solution import {task.entry_point}\n"
    )
    parts = [header, task.test.strip("\n"), ""]
    if asserts is None:
        parts.append(f"\ndef test_{task.entry_point}():\n    check({task.entry_point})\n")
    else:
        for number, statement in enumerate(asserts, start=1):
            parts.append(
                f"\ndef test_{task.entry_point}_{number}():\n"
                f"    {argument} = {task.entry_point}\n"
                f"    {statement}\n"  # continuation lines keep their indentation
            )
    return "\n".join(parts)


def _split_check(test: str) -> tuple[list[str] | None, str]:
    """The source of each assert in `check`, when its body is only asserts (and a docstring);
    else None. Asserts on a constant (`assert True, "..."`) test nothing and are left out."""
    try:
        tree = ast.parse(test)
    except SyntaxError:
        return None, "candidate"
    check = next(
        (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "check"), None
    )
    if check is None or len(check.args.args) != 1:
        return None, "candidate"
    argument = check.args.args[0].arg
    asserts = []
    for statement in check.body:
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
            continue  # a docstring or a stray string
        if not isinstance(statement, ast.Assert):
            return None, argument
        if isinstance(statement.test, ast.Constant):
            continue
        source = ast.get_source_segment(test, statement)
        if source is None:
            return None, argument
        asserts.append(source)
    return (asserts or None), argument


# --- the project the loop runs in -------------------------------------------------------------


def task_text(task: BenchTask, mode: Literal["generate", "repair"]) -> str:
    """What the loop is asked to do, as a person would put it."""
    if mode == "repair":
        return (
            f"The function `{task.entry_point}` in {SOLUTION} has a bug: its tests fail. "
            "Fix it. Keep its name and signature."
        )
    return (
        f"Complete the function `{task.entry_point}` in {SOLUTION} so that it does what its "
        "docstring says. Keep its name and signature."
    )


def write_files(root: Path, task: BenchTask, program: str) -> None:
    """solution.py and the hidden tests, readable by the sandbox's user (nobody)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / SOLUTION).write_text(program, encoding="utf-8")
    (root / TEST_FILE).write_text(hidden_tests(task), encoding="utf-8")
    for path in (root, *root.iterdir()):
        path.chmod(0o755 if path.is_dir() else 0o644)


def task_repo(root: Path, task: BenchTask, program: str) -> Path:
    """A git repository at `root` whose one commit holds the task's files: a project for the
    loop, with its own `.fixloop/` (ignored) once a run starts."""
    write_files(root, task, program)
    git_bytes(root, "init", "--quiet")
    git_bytes(root, "add", SOLUTION, TEST_FILE)
    git_bytes(root, *_AUTHOR, "commit", "--quiet", "-m", f"bench task {task.task_id}")
    return root


# --- a program against the hidden tests, outside the loop ------------------------------------


class Evaluation(BaseModel):
    """One run of a program against its task's hidden tests (to choose mutants)."""

    model_config = ConfigDict(frozen=True)

    passed: bool
    verdict: str
    summary: str
    timed_out: bool = False


class Evaluator:
    """Runs programs against hidden tests in the sandbox, one fresh directory per run."""

    def __init__(self, sandbox: Sandbox, *, timeout_s: float = 30.0) -> None:
        self.verifier = Verifier(sandbox, [TEST_STAGE], limits=Limits(timeout_s=timeout_s))

    async def evaluate(self, task: BenchTask, program: str) -> Evaluation:
        root = Path(await asyncio.to_thread(tempfile.mkdtemp, prefix="fixloop-bench-"))
        try:
            await asyncio.to_thread(write_files, root, task, program)
            examined = await examine_tree(root, self.verifier, baseline=None)
        finally:
            await asyncio.to_thread(shutil.rmtree, root, True)
        judgement = examined.judgement
        summary = summarise(examined.stages)
        if judgement.verdict not in (Verdict.OK, Verdict.FAILING):
            summary = "; ".join([summary, *judgement.reasons])
        return Evaluation(
            passed=judgement.verdict is Verdict.OK,
            verdict=judgement.verdict.value,
            summary=summary,
            timed_out=any(stage.timed_out for stage in examined.stages),
        )
