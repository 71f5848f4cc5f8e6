"""What the model is asked: a short system prompt and one user message per iteration.

Each iteration's prompt stands alone (task, the files that matter, the repair
packet), so its size stays bounded — on a CPU model prompt size is latency.
Relevant files: those the user named, those in the failing tracebacks, the
failing tests and the project modules they import, and the last edit's files.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from engine.edits.instructions import FOCUSED_TEST_FILE_LABEL, TEST_FILE_LABEL, instructions
from engine.edits.proposal import EditFormat
from engine.feedback.packet import RepairPacket
from engine.feedback.test_focus import focus
from engine.model.types import Message
from engine.project.docstrings import docstring_of
from engine.project.pins import is_pinned, is_test_file
from engine.project.reading import project_text

DEFAULT_TASK = "Make the failing tests pass."
FILE_CHARS = 12_000  # a larger file is sent as excerpts around the lines that matter
FILES_BUDGET_CHARS = 24_000
EXCERPT_RADIUS = 25
CALLED_LINES = 15  # of a called function's source shown after the packet


class Prompt(BaseModel):
    """A prompt's messages, and the files it lets the model change (among which a lone answer
    block without its path line is placed: `engine/run/answers.py`'s `lone_block_file`)."""

    model_config = ConfigDict(frozen=True)

    messages: list[Message]
    reply_paths: list[str]
    excerpts: list[str] = []  # files shown only in excerpts: an answer to one is merged


class PromptFile(BaseModel):
    model_config = ConfigDict(frozen=True)

    path: str
    text: str
    excerpt: bool = False
    read_only: bool = False
    focused: bool = False  # a test file cut to its failing tests (engine/feedback/test_focus.py)


def system_prompt(format: EditFormat, example_path: str | None = None) -> str:
    if format == "whole":  # for small models: short, and nothing to copy or to chat about
        return (
            "You fix bugs in a Python project so that its failing tests pass. "
            "Never change the tests.\n\n" + instructions(format, example_path)
        )
    return (
        "You are fixloop's code repair model, working on a Python project. "
        "You get a task, the relevant files and what the project's verifier reported. "
        "Answer with edits only, in the format below. Change as little as needed. "
        "Never edit, skip or delete tests: they define what is correct.\n\n"
        + instructions(format, example_path)
    )


def user_prompt(
    task: str,
    files: Sequence[PromptFile],
    packet_text: str | None,
    notes: Sequence[str] = (),
    *,
    code_last: bool = False,
) -> str:
    """Task, files, packet, notes; with `code_last` the files to fix come after the packet,
    the test files (read only) before it."""
    parts = [f"Task: {task.strip() or DEFAULT_TASK}"]
    later = [f for f in files if not f.read_only] if code_last else []
    first = [f for f in files if f not in later]
    if first:
        label = "Tests" if later else "Files"
        parts.append(f"{label}:\n\n" + "\n\n".join(render_file(f) for f in first))
    if packet_text:
        parts.append(packet_text)
    if later:
        parts.append("The code to fix:\n\n" + "\n\n".join(render_file(f) for f in later))
    parts += list(notes)
    return "\n\n".join(parts)


def messages(
    task: str,
    files: Sequence[PromptFile],
    packet_text: str | None,
    format: EditFormat,
    notes: Sequence[str] = (),
    *,
    code_last: bool = False,
) -> list[Message]:
    # The example path is a real file the model may need to fix, not a re-exporting __init__.
    code = sorted(
        (f.path for f in files if not f.read_only), key=lambda p: p.endswith("__init__.py")
    )
    return [
        Message(role="system", content=system_prompt(format, code[0] if code else None)),
        Message(
            role="user", content=user_prompt(task, files, packet_text, notes, code_last=code_last)
        ),
    ]


def render_file(file: PromptFile) -> str:
    """Like the `whole` edit format: the path alone on a line, then a fenced block."""
    label = file.path
    if file.focused:
        label += f"  {FOCUSED_TEST_FILE_LABEL}"
    elif file.read_only:
        label += f"  {TEST_FILE_LABEL}"
    if file.excerpt:
        label += "  (excerpt; line numbers on the left)"
    fence = "````" if "```" in file.text else "```"
    language = "python" if file.path.endswith(".py") else ""
    return f"{label}\n{fence}{language}\n{file.text.rstrip(chr(10))}\n{fence}"


def person_note(text: str) -> str:
    """A note the person typed while the run went on, for the next prompt: their words as
    data, appended as typed (never formatted into a template)."""
    return "The person watching this run says:\n" + text


def shown_files_note(files: Sequence[str]) -> str:
    """Names the files the person added to every prompt (shown above with the others)."""
    return "The person asked that you see these files: " + ", ".join(files) + "."


def said_lines(notes: Sequence[str], shown: Sequence[str]) -> list[str]:
    """The lines what the person said adds to the next prompt: each note, then the files
    every prompt shows."""
    return [person_note(text) for text in notes] + ([shown_files_note(shown)] if shown else [])


def relevant_paths(
    root: Path,
    packet: RepairPacket | None,
    *,
    named: Sequence[str] = (),
    touched: Sequence[str] = (),
) -> list[str]:
    """Project files worth showing, most important first, each once."""
    found: dict[str, None] = {}

    def add(paths: Iterable[str]) -> None:
        for path in paths:
            clean = path.split("::")[0]
            if clean and clean not in found and (root / clean).is_file():
                found[clean] = None

    add(named)
    if packet is None:
        add(touched)
        return list(found)
    for failure in packet.failures:
        if failure.frame is not None:
            add([failure.frame.file])
    add(touched)
    add(packet.last_edit.files if packet.last_edit else [])
    tests = list(dict.fromkeys((f.file or f.test).split("::")[0] for f in packet.failures))
    # The code under test before the tests that show it is wrong.
    imported = [p for test in tests for p in imported_project_files(root, test)]
    add(p for p in imported if not is_test_file(p))
    add(tests)
    add(d.file for d in packet.diagnostics)
    return list(found)


def imported_project_files(root: Path, path: str, depth: int = 2) -> list[str]:
    """Project files a module imports, following re-exports `depth` levels deep
    (a test imports `pkg`, whose `__init__` imports `pkg.core`: the code is in core)."""
    found: dict[str, None] = {}
    frontier = [path]
    for _ in range(depth):
        following: list[str] = []
        for current in frontier:
            for imported in _direct_imports(root, current):
                if imported not in found and imported != path:
                    found[imported] = None
                    following.append(imported)
        frontier = following
    return list(found)


def _direct_imports(root: Path, path: str) -> list[str]:
    try:
        tree = ast.parse(project_text(root, path))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return []
    package = Path(path).parent
    modules: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package
                for _ in range(node.level - 1):
                    anchor = anchor.parent
                prefix = ".".join(anchor.parts)
                base = ".".join(part for part in (prefix, base) if part)
            if base:
                modules.append(base)
            modules += [f"{base}.{alias.name}" if base else alias.name for alias in node.names]
    files = []
    for module in modules:
        relative = Path(*module.split("."))
        for base_dir in (root, root / "src"):
            for candidate in (
                base_dir / relative.with_suffix(".py"),
                base_dir / relative / "__init__.py",
            ):
                if candidate.is_file():
                    files.append(candidate.relative_to(root).as_posix())
    return list(dict.fromkeys(files))


def load_files(
    root: Path,
    paths: Sequence[str],
    *,
    lines_of_interest: dict[str, list[int]] | None = None,
    budget_chars: int = FILES_BUDGET_CHARS,
    failing_tests: Mapping[str, Sequence[Sequence[str]]] | None = None,
    file_chars: int = FILE_CHARS,
    excerpter: Callable[[str, Sequence[int]], str] | None = None,
) -> list[PromptFile]:
    """The files' text within a total budget; a file over `file_chars` becomes excerpts (by
    `excerpter`, default `excerpt_of`), and a test file named in `failing_tests`
    (test_focus.failing_tests) only its failing tests."""
    excerpter = excerpter or excerpt_of
    result = []
    left = budget_chars
    for path in paths:
        try:
            text = project_text(root, path)
        except (OSError, UnicodeDecodeError):
            continue
        excerpt = focused = False
        tests = (failing_tests or {}).get(path)
        if tests and is_test_file(path) and (cut := focus(text, tests)) is not None:
            text, focused = cut, True
        if not focused and len(text) > min(file_chars, left):
            text = excerpter(text, (lines_of_interest or {}).get(path, []))
            excerpt = True
        if len(text) > left:
            break
        left -= len(text)
        result.append(
            PromptFile(
                path=path,
                text=text,
                excerpt=excerpt,
                read_only=is_pinned(path),
                focused=focused,
            )
        )
    return result


def excerpt_of(text: str, lines: Sequence[int], radius: int = EXCERPT_RADIUS) -> str:
    """Numbered windows around `lines` (1-based); the file's head when none are known."""
    all_lines = text.splitlines()
    centres = sorted(set(lines)) or [1]
    windows: list[tuple[int, int]] = []
    for centre in centres:
        start, end = max(1, centre - radius), min(len(all_lines), centre + radius)
        if windows and start <= windows[-1][1] + 1:
            windows[-1] = (windows[-1][0], max(end, windows[-1][1]))
        else:
            windows.append((start, end))
    chunks = []
    for start, end in windows:
        chunks.append("\n".join(f"{n:5d}  {all_lines[n - 1]}" for n in range(start, end + 1)))
    return "\n  ...\n".join(chunks)


def lines_of_interest(packet: RepairPacket | None) -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}
    if packet is None:
        return found
    for failure in packet.failures:
        if failure.file and failure.line:
            found.setdefault(failure.file, []).append(failure.line)
        if failure.frame is not None:
            found.setdefault(failure.frame.file, []).append(failure.frame.line)
    for diagnostic in packet.diagnostics:
        found.setdefault(diagnostic.file, []).append(diagnostic.line)
    if packet.last_edit is not None:
        for path, ranges in packet.last_edit.files.items():
            found.setdefault(path, []).extend(start for start, _ in ranges)
    return found


def called_definitions(
    root: Path, packet: RepairPacket | None, paths: Sequence[str], *, docstrings: bool = True
) -> list[str]:
    """Where the project functions the first failing line calls are defined, with their
    source (its first `CALLED_LINES` lines): a failing assertion in a test has no project
    frame, so point at the code. Without `docstrings` (`called_code`) a function's docstring
    is left out of its lines, so a long one does not push its code past the cut."""
    if packet is None or not packet.failures or not packet.failures[0].assertion:
        return []
    if packet.failures[0].frame is not None:
        return []  # the traceback already points into the project
    try:
        statement = ast.parse(packet.failures[0].assertion.strip())
    except SyntaxError:
        return []
    called = {
        node.func.id if isinstance(node.func, ast.Name) else node.func.attr
        for node in ast.walk(statement)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name | ast.Attribute)
    }
    notes = []
    for path in paths:
        if is_test_file(path) or not path.endswith(".py"):
            continue
        try:
            source = project_text(root, path)
            tree = ast.parse(source)
        except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
            continue
        lines = source.splitlines()
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in called:
                numbers = list(range(node.lineno, (node.end_lineno or node.lineno) + 1))
                doc = None if docstrings else docstring_of(node)
                left_out = ""
                if doc is not None and len(node.body) > 1:
                    numbers = [k for k in numbers if not doc.lineno <= k <= (doc.end_lineno or 0)]
                    left_out = " (its docstring left out)"
                body = "\n".join(lines[k - 1] for k in numbers[:CALLED_LINES])
                notes.append(
                    f"The failing line calls {node.name}, defined at {path}:{node.lineno}"
                    f"{left_out}:\n```python\n{body}\n```"
                )
    return notes[:3]
