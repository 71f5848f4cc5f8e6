"""What a repair prompt shows of a large project, and how it fits the model's window: the
traced functions whole (ast scopes, not fixed windows), the functions the failing lines call,
the whole prompt cut to the window minus the answer's room (least relevant parts dropped
first). An answer to a file shown in excerpts is read by `engine/feedback/excerpt_answers.py`.

Everything here reads project files through `project_text` (nothing outside the tree, no
`.git`, nothing over its size cap) and parses them with `ast` only: a hostile file can make a
prompt smaller, never run, never read elsewhere.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

from engine.edits.proposal import EditFormat
from engine.feedback import prompts
from engine.feedback.excerpt_answers import GAP
from engine.feedback.packet import RepairPacket
from engine.feedback.repo_map import repo_map
from engine.feedback.test_focus import failing_tests
from engine.model.local import PROVIDER as LOCAL_PROVIDER
from engine.model.types import Message
from engine.project.pins import is_test_file
from engine.project.reading import project_text, shown_file
from engine.project.strategy import Strategy
from engine.text.tokens import approximate_tokens

# The embedded model's window per generation (engine/model/local/server.py, N_CTX) and the
# answer room its client asks for (engine/run/start.py, make_client).
LOCAL_WINDOW_TOKENS = 4096
LOCAL_ANSWER_TOKENS = 1024
MESSAGE_OVERHEAD_TOKENS = 8  # a chat template's role markers, per message
SCOPE_LINES = 120  # a traced function longer than this is shown as a window around the line
SCOPE_RADIUS = 12  # the window around a line outside any function, or in a huge one
CALL_DEPTH = 5  # the functions a failing line calls, and so on down this many calls
CALLED_LIMIT = 10  # functions shown whole for the calls, in all
CUT_MARK = "\n[... cut to fit the model's window]"
F = TypeVar("F")  # a file as a prompt shows it


def prompt_budget(model: str) -> int | None:
    """The tokens a prompt may hold for `model`: its window minus the answer's room, or None
    when the window is not known (then only the prompt's own character budgets bound it)."""
    if model.startswith(f"{LOCAL_PROVIDER}/"):
        return LOCAL_WINDOW_TOKENS - LOCAL_ANSWER_TOKENS
    litellm = sys.modules.get("litellm")  # never imported here: it is slow to import
    if litellm is None:
        return None
    try:
        window = int(litellm.get_model_info(model).get("max_input_tokens") or 0)
    except Exception:  # an unknown model: no known window
        return None
    return window or None


def message_tokens(messages: Sequence[Message]) -> int:
    """An upper bound of the prompt's tokens (engine/text/tokens.py over-counts code)."""
    return sum(approximate_tokens(m.content) + MESSAGE_OVERHEAD_TOKENS for m in messages)


# --- excerpts by scope ------------------------------------------------------------------------


def scope_excerpt(text: str, lines: Sequence[int], max_scope: int = SCOPE_LINES) -> str:
    """Numbered excerpts of `text`: for each line of interest the whole innermost function
    (with its decorators, and its class's header line for a method), or a window around the
    line when it is in no function, in one over `max_scope` lines, or the file does not parse;
    `...` between excerpts. The numbers are the file's, so a search text copied from an
    excerpt (numbers dropped) is found in the file."""
    all_lines = text.splitlines()
    if not all_lines:
        return ""
    wanted = sorted({n for n in lines if 1 <= n <= len(all_lines)}) or [1]
    scopes = _scopes(text)
    spans: list[tuple[int, int]] = []
    for line in wanted:
        found = [s for s in scopes if s[0] <= line <= s[1] and s[1] - s[0] < max_scope]
        if found:
            start, end, header = min(found, key=lambda s: s[1] - s[0])
            spans.append((start, end))
            if header:
                spans.append((header, header))
        else:
            spans.append((max(1, line - SCOPE_RADIUS), min(len(all_lines), line + SCOPE_RADIUS)))
    return render_spans(all_lines, spans)


def _scopes(text: str) -> list[tuple[int, int, int]]:
    """(first line with decorators, last line, the enclosing class's line or 0) of every
    function of `text`; none when it does not parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    found: list[tuple[int, int, int]] = []

    def visit(node: ast.AST, klass: int) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                start = min([d.lineno for d in child.decorator_list] + [child.lineno])
                found.append((start, child.end_lineno or child.lineno, klass))
                visit(child, 0)
            elif isinstance(child, ast.ClassDef):
                visit(child, child.lineno)
            else:
                visit(child, klass)

    visit(tree, 0)
    return found


def render_spans(all_lines: Sequence[str], spans: Sequence[tuple[int, int]]) -> str:
    """The numbered lines of `spans` (1-based, inclusive), merged, `...` between them."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    chunks = [
        "\n".join(f"{n:5d}  {all_lines[n - 1]}" for n in range(start, end + 1))
        for start, end in merged
    ]
    return f"\n{GAP}\n".join(chunks)


def called_lines(
    root: Path, packet: RepairPacket | None, paths: Sequence[str]
) -> dict[str, list[int]]:
    """Per file of `paths`, the first lines of the project functions the failing lines call
    (the failing frame's line, or the failing assertion), those the failing test's own
    function calls, and those these call or pass on in turn (`CALL_DEPTH` levels,
    `CALLED_LIMIT` in all), so their excerpts show them whole: a test's failing line names
    the function it calls, the bug is often calls further. A class named is shown from its
    `__init__`."""
    if packet is None:
        return {}
    wanted: set[str] = set()
    in_tests: set[str] = set()  # what the failing tests call before their failing line
    for failure in packet.failures[:3]:
        statements = [failure.frame.source if failure.frame else "", failure.assertion or ""]
        for statement in statements:
            wanted |= _called_names(statement)
        if failure.frame is not None and failure.frame.function:
            wanted.add(failure.frame.function.rsplit(".", 1)[-1])
        where = failure.frame or failure
        in_tests |= _called_around(root, where.file, where.line)
    trees: dict[str, ast.Module] = {}
    for path in paths:
        if is_test_file(path) or not path.endswith(".py"):
            continue
        try:
            trees[path] = ast.parse(project_text(root, path))
        except (OSError, SyntaxError, UnicodeDecodeError, ValueError, RecursionError):
            continue
    found: dict[str, list[int]] = {}
    seen: set[str] = set()
    count = 0
    for _ in range(CALL_DEPTH):
        following: set[str] = set()
        for path, tree in trees.items():
            for node in ast.walk(tree):
                if (
                    isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
                    and node.name in wanted
                    and count < CALLED_LIMIT
                ):
                    line = _init_line(node) if isinstance(node, ast.ClassDef) else node.lineno
                    found.setdefault(path, []).append(line)
                    count += 1
                    if not isinstance(node, ast.ClassDef):
                        following |= _used_in(node)
        seen |= wanted
        wanted, in_tests = (following | in_tests) - seen, set()
    return found


def _init_line(klass: ast.ClassDef) -> int:
    """Where a class named by a call is shown: its `__init__`, else its header."""
    for node in klass.body:
        if isinstance(node, ast.FunctionDef) and node.name == "__init__":
            return node.lineno
    return klass.lineno


def _called_around(root: Path, path: str, line: int) -> set[str]:
    """The names the function around `path:line` calls (the failing test's own function,
    where the objects its failing line looks at were made)."""
    if not path.endswith(".py") or line <= 0:
        return set()
    try:
        tree = ast.parse(project_text(root, path))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError, RecursionError):
        return set()
    around = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.lineno <= line <= (node.end_lineno or node.lineno)
    ]
    return _called_in(max(around, key=lambda n: n.lineno)) if around else set()


def _used_in(function: ast.AST) -> set[str]:
    """The names a function calls or passes on (`map(helper, xs)` uses `helper`)."""
    names = {n.id for n in ast.walk(function) if isinstance(n, ast.Name)}
    return names | _called_in(function)


def _called_in(function: ast.AST) -> set[str]:
    return {
        node.func.id if isinstance(node.func, ast.Name) else node.func.attr
        for node in ast.walk(function)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name | ast.Attribute)
    }


def _called_names(statement: str) -> set[str]:
    try:
        return _called_in(ast.parse(statement.strip()))
    except (SyntaxError, ValueError, RecursionError):
        return set()


def merged_lines(*sources: Mapping[str, Sequence[int]]) -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}
    for source in sources:
        for path, lines in source.items():
            found.setdefault(path, []).extend(lines)
    return found


# --- the prompt under the window --------------------------------------------------------------


def fitted(
    build: Callable[[Sequence[F], Sequence[str], str | None], list[Message]],
    files: Sequence[F],
    extras: Sequence[str],
    told: str | None,
    budget: int | None,
    shrink: Callable[[F], F | None],
) -> tuple[list[Message], list[F]]:
    """The messages `build(files, extras, told)` makes, cut until they hold at most `budget`
    tokens, least relevant first: the extras from the last (the repo map is last), then the
    files from the last but the first, each first cut smaller by `shrink` (None: cannot be),
    then the first file, then what the model is told of the failure; at worst the user
    message's head. Returns the messages and the files they show."""
    files, extras = list(files), list(extras)
    messages = build(files, extras, told)
    if budget is None or message_tokens(messages) <= budget:
        return messages, files

    def fits() -> bool:
        nonlocal messages
        messages = build(files, extras, told)
        return message_tokens(messages) <= budget

    while extras:
        extras.pop()
        if fits():
            return messages, files
    for index in range(len(files) - 1, -1, -1):
        while (smaller := shrink(files[index])) is not None:
            files[index] = smaller
            if fits():
                return messages, files
        if index > 0:
            del files[index]
            if fits():
                return messages, files
    if told:
        over = message_tokens(messages) - budget
        keep = max(0, len(told) - over * 3 - len(CUT_MARK))  # 3 bytes a token at most
        told = told[:keep] + CUT_MARK
        if fits():
            return messages, files
    return _cut_user_message(messages, budget), files


def _cut_user_message(messages: list[Message], budget: int) -> list[Message]:
    """The last resort: the user message's head, so the prompt is never over the window."""
    system = [m for m in messages if m.role != "user"]
    room = max(0, budget - message_tokens(system) - MESSAGE_OVERHEAD_TOKENS)
    user = next(m for m in messages if m.role == "user")
    data = user.content.encode("utf-8")[: max(0, room * 3 - len(CUT_MARK) - 4)]
    text = data.decode("utf-8", errors="ignore") + CUT_MARK
    return [*system, Message(role="user", content=text)]


# --- what the model is told of excerpts -------------------------------------------------------


def excerpt_note(paths: Sequence[str], format: str) -> str:
    """What the model is told when a file is shown only in excerpts."""
    names = ", ".join(paths)
    if format == "whole":
        return (
            f"{names}: shown in excerpts; the numbers on the left are line numbers, not part of "
            "the file. To fix it, reply with its path alone on a line, then a python code block "
            "holding only the functions you change, each complete."
        )
    return (
        f"{names}: shown in excerpts; the numbers on the left are line numbers, not part of the "
        'file: leave them out of "search". Never send such a file as "content".'
    )


# --- the repair prompt's files, notes and map, under the window ----------------------------

MAP_SHARE = 0.15  # of the prompt's budget, at most, for the repo map
MAP_TOKENS = 1024  # and never more than this


def repair_prompt(
    root: Path,
    packet: RepairPacket | None,
    told: str | None,
    paths: Sequence[str],
    task: str,
    notes: Sequence[str],
    edit_format: EditFormat,
    strategy: Strategy,
    budget: int | None,
) -> prompts.Prompt:
    """The full profile's prompt on `paths` (most relevant first): their text (a large file
    cut by the strategy's `context`), what the model is told, the definitions the failure
    calls, `notes`, and with `context = "map"` the map of the other modules, the whole cut to
    `budget` tokens (`fitted`)."""
    pointers = strategy.feedback == "packet"  # raw feedback: nothing distilled
    traced, focus = strategy.context != "files", strategy.test_focus
    interest = prompts.lines_of_interest(packet)
    if traced:  # the traced files first: the least relevant are cut first
        interest = merged_lines(interest, called_lines(root, packet, paths))
        code = [p for p in paths if p in interest and not is_test_file(p)]
        others = [p for p in paths if p not in code and (is_test_file(p) or _small(root, p))]
        paths = [*code, *others]  # a large file the traces do not reach would show its head only
    chars = prompts.FILES_BUDGET_CHARS
    if budget is not None:  # the files' share: what the rest of the prompt leaves
        rest = approximate_tokens((told or "") + task + "".join(notes)) + 400
        chars = max(1_000, min(chars, (budget - rest) * 3))
    files = prompts.load_files(
        root,
        paths,
        lines_of_interest=interest,
        budget_chars=chars,
        failing_tests=failing_tests(packet) if pointers and (focus or traced) else None,
        excerpter=scope_excerpt if traced else None,
    )
    whole = set() if strategy.repeat_called else {f.path for f in files if not f.excerpt}
    unseen = [path for path in paths if path not in whole]  # cut to excerpts, or not shown
    called = (
        prompts.called_definitions(root, packet, unseen, docstrings=not strategy.called_code)
        if pointers
        else []
    )
    shown_paths = [f.path for f in files]
    extras = list(called)
    if strategy.context == "map":
        room = min(MAP_TOKENS, int((budget or MAP_TOKENS / MAP_SHARE) * MAP_SHARE))
        shown_whole = [f.path for f in files if not f.excerpt]
        if text := repo_map(root, shown_paths, room, shown=shown_whole):
            extras.append(text)

    def build(
        shown_files: Sequence[prompts.PromptFile], kept_extras: Sequence[str], said: str | None
    ) -> list[Message]:
        cut = [f.path for f in shown_files if f.excerpt and not f.read_only]
        excerpted = [excerpt_note(cut, edit_format)] if cut else []
        return prompts.messages(
            task,
            shown_files,
            said,
            edit_format,
            [*kept_extras[: len(called)], *notes, *excerpted, *kept_extras[len(called) :]],
            code_last=strategy.code_last,
        )

    def shrink(file: prompts.PromptFile) -> prompts.PromptFile | None:
        return _smaller(root, file, interest.get(file.path, []))

    messages, shown_files = fitted(build, files, extras, told, budget, shrink)
    return prompts.Prompt(
        messages=messages,
        reply_paths=[f.path for f in shown_files if not f.read_only],
        excerpts=[f.path for f in shown_files if f.excerpt],
    )


def _small(root: Path, path: str) -> bool:
    try:
        return shown_file(root, path).stat().st_size <= prompts.FILE_CHARS
    except OSError:
        return False


def _smaller(
    root: Path, file: prompts.PromptFile, lines: Sequence[int]
) -> prompts.PromptFile | None:
    """The file cut one step smaller: whole to its traced functions, those to windows of
    `SCOPE_RADIUS` lines; None once it is that small."""
    try:
        text = project_text(root, file.path)
    except (OSError, UnicodeDecodeError):
        return None
    for cut in (scope_excerpt(text, lines), scope_excerpt(text, lines, max_scope=0)):
        if len(cut) < len(file.text):
            return file.model_copy(update={"text": cut, "excerpt": True, "focused": False})
    return None
