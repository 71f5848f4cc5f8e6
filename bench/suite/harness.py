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
from typing import Literal, NamedTuple

from pydantic import BaseModel, ConfigDict

from bench.suite.tasks import BenchTask
from engine.feedback.distill import summarise
from engine.feedback.tree import examine_tree
from engine.project.git_plumbing import git_bytes
from engine.verify.execute import Verifier
from engine.verify.results import StageKind
from engine.verify.stages import Stage
from engine.verify.verdict import Verdict
from sandbox import Limits, Sandbox

SOLUTION = "solution.py"
TEST_FILE = "test_solution.py"
TEST_CMD = f"python -m pytest -q {TEST_FILE}"
TEST_STAGE = Stage(name="tests", kind=StageKind.TESTS, cmd=TEST_CMD)
# How the hidden tests are written: HumanEval's own shape, one test per assert with the
# arguments in its failing line (`literal`), or the table-driven shape of many projects, one
# test parametrized over (arguments, expected) where the failing line names no input (`table`),
# or that test with its table in a data file beside it (`data`), as projects that test from
# recorded cases do: then neither the test file nor its failing line shows an input.
TestLayout = Literal["literal", "table", "data"]
CASES_FILE = "test_solution_cases.txt"
_AUTHOR = ("-c", "user.name=fixloop bench", "-c", "user.email=bench@fixloop.invalid")


# --- the files ------------------------------------------------------------------------------


def hidden_files(task: BenchTask, layout: TestLayout = "literal") -> dict[str, str]:
    """The hidden tests by file name. `TEST_FILE`: the task's test code, then one test per
    assert of `check` (`literal`), or (`table`, `data`) one test parametrized over a table of
    the asserts that call the function and compare its result, each other assert a test of
    its own. Under `data` the table is `CASES_FILE`: Python text (tuples, floats and
    expressions such as `2**20`, which JSON would not keep) that the test module evaluates in
    its namespace, as the `table` layout's rows are."""
    asserts, argument = _split_check(task.test)
    tabled = layout != "literal" and asserts
    header = (
        f"# fixloop bench: the hidden tests of {task.task_id}, from its check(candidate).\n"
        "# HumanEval runs prompt, completion and test in one namespace: so does this file.\n"
        + ("from pathlib import Path\n\n" if tabled and layout == "data" else "")
        + ("import pytest\n\n" if tabled else "")
        + "from solution import *  # noqa: F403\n"
        f"from solution import {task.entry_point}\n"
    )
    if asserts is None:
        body = f"\ndef test_{task.entry_point}():\n    check({task.entry_point})\n"
        return {TEST_FILE: "\n".join([header, task.test.strip("\n"), "", body])}
    if layout == "literal":
        parts = [header, task.test.strip("\n"), ""]
        for number, (statement, _) in enumerate(asserts, start=1):
            parts.append(_literal_test(task.entry_point, number, argument, statement))
        return {TEST_FILE: "\n".join(parts)}
    cases, others = _cases(task, asserts, argument)
    in_file = layout == "data" and bool(cases)
    code = _without_check(task.test)
    tests = [_table_test(task, cases, in_file=in_file), *others] if cases else others
    files = {TEST_FILE: "\n".join([header, *([code, ""] if code else []), *tests])}
    if in_file:
        files[CASES_FILE] = "[  # (arguments, expected)\n" + "\n".join(cases) + "\n]\n"
    return files


def _literal_test(entry_point: str, number: int, argument: str, statement: str) -> str:
    return (
        f"\ndef test_{entry_point}_{number}():\n"
        f"    {argument} = {entry_point}\n"
        f"    {statement}\n"  # continuation lines keep their indentation
    )


def _table_test(task: BenchTask, cases: list[str], *, in_file: bool) -> str:
    """`CASES` (or, `in_file`, the line that reads it from `CASES_FILE`) and the one test that
    runs them."""
    table = (
        f'\nCASES = eval(Path(__file__).with_name("{CASES_FILE}").read_text())\n'
        if in_file
        else "\nCASES = [  # (arguments, expected)\n" + "\n".join(cases) + "\n]\n"
    )
    return (
        table + '\n\n@pytest.mark.parametrize("args, expected", CASES)\n'
        f"def test_{task.entry_point}(args, expected):\n"
        f"    assert {task.entry_point}(*args) == expected\n"
    )


def _cases(task: BenchTask, asserts: list[_Assert], argument: str) -> tuple[list[str], list[str]]:
    """The table's rows (`    ((arguments), expected),`) and the other asserts' tests."""
    cases: list[str] = []
    others: list[str] = []
    for number, (statement, node) in enumerate(asserts, start=1):
        case = _case(node, argument, task.test)
        if case is None:
            others.append(_literal_test(task.entry_point, number, argument, statement))
        else:
            cases.append(f"    ({case[0]}, {case[1]}),")
    return cases, others


def _case(node: ast.Assert, argument: str, test: str) -> tuple[str, str] | None:
    """`assert candidate(a, b) == e` (a node of `test`) as the sources `(a, b)` and `e`; None
    for any other assert (a tolerance, `is`, keywords, a call of anything else)."""
    if not isinstance(node.test, ast.Compare):
        return None
    compare = node.test
    if len(compare.ops) != 1 or not isinstance(compare.ops[0], ast.Eq):
        return None
    call, expected = compare.left, compare.comparators[0]
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)):
        return None
    if call.func.id != argument or call.keywords:
        return None
    if any(isinstance(arg, ast.Starred) for arg in call.args):
        return None
    args = [source for arg in call.args if (source := ast.get_source_segment(test, arg))]
    expected_source = ast.get_source_segment(test, expected)
    if expected_source is None or len(args) != len(call.args):
        return None
    # The table is built when the module loads, where the function's parameter is unknown.
    if any(_mentions(part, argument) for part in (expected, *call.args)):
        return None
    return f"({args[0]},)" if len(args) == 1 else f"({', '.join(args)})", expected_source


def _mentions(node: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node))


def _without_check(test: str) -> str:
    """The test code with its `check` left out: the table and the tests say it all."""
    tree = ast.parse(test)
    lines = test.splitlines()
    for node in reversed(tree.body):
        if isinstance(node, ast.FunctionDef) and node.name == "check":
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
            assert node.end_lineno is not None
            del lines[start : node.end_lineno]
    return "\n".join(lines).strip("\n")


class _Assert(NamedTuple):
    source: str
    node: ast.Assert


def _split_check(test: str) -> tuple[list[_Assert] | None, str]:
    """Each assert in `check` (its source and node), when its body is only asserts (and a
    docstring); else None. Asserts on a constant (`assert True, "..."`) test nothing and are
    left out."""
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
        asserts.append(_Assert(source, statement))
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


def write_files(
    root: Path, task: BenchTask, program: str, layout: TestLayout = "literal"
) -> list[str]:
    """solution.py and the hidden tests, readable by the sandbox's user (nobody); the names
    written."""
    root.mkdir(parents=True, exist_ok=True)
    files = {SOLUTION: program, **hidden_files(task, layout)}
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")
    for path in (root, *root.iterdir()):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return list(files)


def task_repo(root: Path, task: BenchTask, program: str, layout: TestLayout = "literal") -> Path:
    """A git repository at `root` whose one commit holds the task's files: a project for the
    loop, with its own `.fixloop/` (ignored) once a run starts."""
    names = write_files(root, task, program, layout)
    git_bytes(root, "init", "--quiet")
    git_bytes(root, "add", *names)
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

    def __init__(
        self, sandbox: Sandbox, *, timeout_s: float = 30.0, layout: TestLayout = "literal"
    ) -> None:
        self.verifier = Verifier(sandbox, [TEST_STAGE], limits=Limits(timeout_s=timeout_s))
        self.layout = layout

    async def evaluate(self, task: BenchTask, program: str) -> Evaluation:
        root = Path(await asyncio.to_thread(tempfile.mkdtemp, prefix="fixloop-bench-"))
        try:
            await asyncio.to_thread(write_files, root, task, program, self.layout)
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
