"""The small prompt profile (`prompt_profile = "small"`): what a model of a few billion
parameters can use. The code under repair first, then what failed, then one line saying what
to send back; no test file, and no function shown twice.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from pathlib import Path

from engine.edits.instructions import reply_line
from engine.edits.proposal import EditFormat
from engine.feedback import prompts
from engine.feedback.packet import RepairPacket
from engine.feedback.test_focus import find_test
from engine.model.types import Message
from engine.project.pins import is_test_file
from engine.project.reading import project_text
from engine.project.strategy import DEFAULT_STRATEGY, Strategy

SYSTEM = "You fix bugs in Python code so that its tests pass. Never change the tests."
# The embedded model's window is 4,096 tokens and 1,024 of them are its answer: a file much
# larger than this could not be sent back whole anyway, so it is cut to excerpts.
FILES_BUDGET_CHARS = 8_000
TEST_LINES = 12  # the failing test function, or its last lines up to the failing one


def small_prompt(
    root: Path,
    packet: RepairPacket | None,
    told: str,
    task: str,
    named: Sequence[str],
    edit_format: EditFormat,
    notes: Sequence[str] = (),
    *,
    strategy: Strategy = DEFAULT_STRATEGY,
) -> prompts.Prompt:
    """The small profile's messages. `told` is what the model is told of the failure (the
    rendered packet, or the raw output's tail); the strategy's feedback and `called_code` as
    in the full profile."""
    pointers, called_code = strategy.feedback == "packet", strategy.called_code
    paths = code_paths(root, prompts.relevant_paths(root, packet, named=list(named)), named)
    files = prompts.load_files(
        root,
        paths,
        lines_of_interest=prompts.lines_of_interest(packet),
        budget_chars=FILES_BUDGET_CHARS,
    )
    parts = [prompts.render_file(file) for file in files]
    if test := failing_test(root, packet, told):
        parts.append(test)
    if told:
        parts.append(told)
    if pointers:  # a definition is worth repeating only where its file was cut to excerpts
        excerpted = [f.path for f in files if f.excerpt]
        parts += prompts.called_definitions(root, packet, excerpted, docstrings=not called_code)
    parts += list(notes)
    if task.strip() and task.strip() != prompts.DEFAULT_TASK:
        parts.append(f"Task: {task.strip()}")
    editable = [f.path for f in files if not f.read_only]
    parts.append(reply_line(edit_format, editable))
    messages = [
        Message(role="system", content=SYSTEM),
        Message(role="user", content="\n\n".join(parts)),
    ]
    excerpts = [f.path for f in files if f.excerpt]
    return prompts.Prompt(messages=messages, reply_paths=editable, excerpts=excerpts)


def code_paths(root: Path, paths: Sequence[str], named: Sequence[str]) -> list[str]:
    """The code among `paths`, in their order: no test file unless the person named it, and
    no module that only re-exports names (unless named, or nothing else is left)."""
    code = [p for p in paths if p in named or not is_test_file(p)]
    kept = [p for p in code if p in named or not _only_reexports(root, p)]
    return kept or code


def _only_reexports(root: Path, path: str) -> bool:
    """A module with nothing to fix in it: imports, a docstring and `__all__`, no code."""
    try:
        tree = ast.parse(project_text(root, path))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return False
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue
        targets = node.targets if isinstance(node, ast.Assign) else []
        if targets and all(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            continue
        return False
    return bool(tree.body)


def failing_test(root: Path, packet: RepairPacket | None, told: str) -> str | None:
    """The first failing test's own lines (at most `TEST_LINES`), unless what the model is
    told already quotes its failing assertion (a line that raised says nothing of what the
    test expects)."""
    if packet is None or not packet.failures:
        return None
    failure = packet.failures[0]
    quoted = (failure.assertion or "").strip()
    if quoted.startswith("assert") and quoted in told:
        return None
    path, _, inner = failure.test.partition("::")
    if not inner or not is_test_file(path):
        return None
    try:
        source = project_text(root, path)
        tree = ast.parse(source)
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return None
    found = find_test(tree, inner.split("[")[0].split("::"))
    if found is None:
        return None
    function = found[1]
    start = min([d.lineno for d in function.decorator_list] + [function.lineno])
    end = function.end_lineno or function.lineno
    if end - start >= TEST_LINES:  # a long test: its lines up to just after the failing one
        failing = failure.line if start <= failure.line <= end else end
        end = min(end, max(failing + 2, start + TEST_LINES - 1))
        start = end - TEST_LINES + 1
    body = "\n".join(source.splitlines()[start - 1 : end])
    return f"The failing test, {path} line {start} (read only):\n```python\n{body}\n```"
