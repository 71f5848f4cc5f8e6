"""How a task's program meets its hidden tests: the answer's code becomes `solution.py`, the
task's `check(candidate)` becomes a pytest file, and fixloop's verifier runs them in the
sandbox with its pytest plugin, so one run yields both the raw log and the repair packet.

`check`'s top-level asserts become one test each when its body is nothing but asserts (most
HumanEval tasks), so a report says how many of them fail; otherwise it is one test. Either
way a task passes only when every assert does.
"""

from __future__ import annotations

import ast
import asyncio
import difflib
import re
import shutil
import tempfile
import textwrap
import time
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from bench.suite.tasks import BenchTask
from engine.feedback.distill import summarise
from engine.feedback.packet import DEFAULT_CAP, RepairPacket
from engine.feedback.tokens import count_tokens
from engine.verify.execute import Verifier
from engine.verify.results import StageKind, StageResult, TestCounts
from engine.verify.stages import Stage
from engine.verify.tree import examine_tree, rendered
from engine.verify.verdict import Verdict
from sandbox import Limits, Sandbox

SOLUTION = "solution.py"
TEST_FILE = "test_solution.py"
TEST_STAGE = Stage(name="tests", kind=StageKind.TESTS, cmd=f"python -m pytest -q {TEST_FILE}")
# What a naive loop feeds back: the end of the raw test log, where pytest puts the failures
# and the summary, about 1,000 tokens of it.
RAW_LOG_CHARS = 4000

_FENCE = re.compile(r"^(`{3,}|~{3,})[ \t]*([\w+.-]*)[^\n]*\n(.*?)^\1[ \t]*$", re.M | re.S)


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


def extract_code(answer: str, entry_point: str) -> str | None:
    """The program in a model's answer: the fenced block that defines `entry_point`, else the
    first python block, else the answer itself when it is plain Python; None when there is no
    usable code (an unclosed fence, prose only)."""
    blocks = [(m.group(2).lower(), m.group(3)) for m in _FENCE.finditer(answer)]
    defining = [code for _, code in blocks if _defines(code, entry_point)]
    if defining:
        return defining[0]
    python = [code for language, code in blocks if language in ("python", "py", "python3", "")]
    if python:
        return python[0]
    if "```" not in answer and _defines(answer, entry_point):
        return answer
    return None


def _defines(code: str, name: str) -> bool:
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return re.search(rf"^\s*def\s+{re.escape(name)}\s*\(", code, re.M) is not None
    return any(
        isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name
        for node in tree.body
    )


def assemble(task: BenchTask, code: str) -> str:
    """`solution.py` from the model's code. Code that defines the entry point is used whole,
    after the prompt's imports and helper functions that it leaves out; code that does not is
    taken for the function's body and appended to the prompt (HumanEval's own completion)."""
    if not _defines(code, task.entry_point):
        for body in (code, textwrap.indent(textwrap.dedent(code), "    ")):
            candidate = task.prompt + body
            if _parses(candidate):
                return _ending_newline(candidate)
        return _ending_newline(task.prompt + code)
    try:
        ours, theirs = ast.parse(code), ast.parse(task.prompt)
    except SyntaxError:
        return _ending_newline(code)
    have_imports = {ast.unparse(n) for n in ours.body if isinstance(n, ast.Import | ast.ImportFrom)}
    have_names = {n.name for n in ours.body if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    preamble = []
    for node in theirs.body:
        if isinstance(node, ast.Import | ast.ImportFrom) and ast.unparse(node) not in have_imports:
            preamble.append(ast.get_source_segment(task.prompt, node) or ast.unparse(node))
        elif (
            isinstance(node, ast.FunctionDef | ast.ClassDef)
            and node.name != task.entry_point
            and node.name not in have_names
        ):
            preamble.append(_source_with_decorators(task.prompt, node))
    if not preamble:
        return _ending_newline(code)
    return _ending_newline("\n".join(preamble) + "\n\n\n" + code.lstrip("\n"))


def _source_with_decorators(source: str, node: ast.FunctionDef | ast.ClassDef) -> str:
    lines = source.splitlines()
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    return "\n".join(lines[first - 1 : node.end_lineno])


def _parses(code: str) -> bool:
    try:  # compile, not just parse: a `return` outside a function must not pass
        compile(code, SOLUTION, "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


def _ending_newline(text: str) -> str:
    return text.rstrip("\n") + "\n"


def has_docstring(program: str, entry_point: str) -> bool:
    try:
        tree = ast.parse(program)
    except SyntaxError:
        return False
    return any(
        isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.name == entry_point
        and bool(ast.get_docstring(node))
        for node in ast.walk(tree)
    )


def program_diff(before: str, after: str) -> str:
    """A git-style diff of solution.py, so the packet can say where the last edit landed."""
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=f"a/{SOLUTION}",
        tofile=f"b/{SOLUTION}",
    )
    return "".join(lines)


def raw_log(stages: list[StageResult], chars: int = RAW_LOG_CHARS) -> str:
    """The test stage's output as a naive tool would pass it on: stdout and stderr, the tail."""
    text = "\n".join(part for s in stages for part in (s.stdout, s.stderr) if part.strip())
    text = text.strip("\n")
    return text if len(text) <= chars else "...\n" + text[-chars:]


# --- running them ----------------------------------------------------------------------------


def _project(task: BenchTask, program: str) -> Path:
    """A fresh directory with solution.py and the hidden tests, readable by the sandbox."""
    root = Path(tempfile.mkdtemp(prefix="fixloop-bench-"))
    (root / SOLUTION).write_text(program, encoding="utf-8")
    (root / TEST_FILE).write_text(hidden_tests(task), encoding="utf-8")
    for path in (root, *root.iterdir()):  # the sandbox runs as nobody
        path.chmod(0o755 if path.is_dir() else 0o644)
    return root


class Evaluation(BaseModel):
    """One run of a program against its task's hidden tests."""

    model_config = ConfigDict(frozen=True)

    passed: bool
    verdict: str
    summary: str
    error_class: str
    signature: str
    tests: TestCounts | None
    packet_text: str = ""
    raw_log: str = ""
    timed_out: bool = False
    duration_s: float
    packet: RepairPacket | None = Field(default=None, exclude=True)
    stages: list[StageResult] = Field(default_factory=list, exclude=True)


class Evaluator:
    """Runs programs against hidden tests in the sandbox, one fresh directory per run."""

    def __init__(
        self,
        sandbox: Sandbox,
        *,
        timeout_s: float = 30.0,
        python: Path | None = None,
        model: str | None = None,
        packet_cap: int = DEFAULT_CAP,
    ) -> None:
        self.verifier = Verifier(
            sandbox, [TEST_STAGE], python=python, limits=Limits(timeout_s=timeout_s)
        )
        self.model = model
        self.packet_cap = packet_cap

    async def evaluate(
        self,
        task: BenchTask,
        program: str,
        *,
        round: int | None = None,
        max_rounds: int | None = None,
        previous: Evaluation | None = None,
        last_program: str | None = None,
    ) -> Evaluation:
        started = time.monotonic()
        root = await asyncio.to_thread(_project, task, program)
        try:
            diff = program_diff(last_program, program) if last_program is not None else ""
            examined = await examine_tree(
                root,
                self.verifier,
                baseline=None,
                touched=[SOLUTION] if diff else [],
                last_diff=diff or None,
                previous=previous.stages if previous is not None else None,
                iteration=round,
                max_iterations=max_rounds,
            )
        finally:
            await asyncio.to_thread(shutil.rmtree, root, True)
        verification = rendered(examined, cap=self.packet_cap, model=self.model)
        judgement = verification.judgement
        summary = summarise(verification.stages)
        if judgement.verdict not in (Verdict.OK, Verdict.FAILING):
            summary = "; ".join([summary, *judgement.reasons])
        return Evaluation(
            passed=judgement.verdict is Verdict.OK,
            verdict=judgement.verdict.value,
            summary=summary,
            error_class=judgement.classification.error_class.value,
            signature=judgement.signature,
            tests=judgement.tests,
            packet_text=verification.packet_text,
            raw_log=raw_log(verification.stages),
            timed_out=any(stage.timed_out for stage in verification.stages),
            packet=verification.packet,
            duration_s=time.monotonic() - started,
            stages=verification.stages,
        )

    def tokens(self, text: str) -> int:
        return count_tokens(text, self.model) if text else 0

    def render(self, packet: RepairPacket) -> str:
        return packet.render(self.packet_cap, lambda text: count_tokens(text, self.model))
