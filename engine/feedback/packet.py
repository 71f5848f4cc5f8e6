"""The repair packet (ARCHITECTURE.md, "The repair packet"): what the model is told after a
failed verification.

`render()` writes it as text under a hard token cap. The first failure is shown
in full, the others one line each; whatever does not fit is counted, never
silently dropped.
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel, ConfigDict, Field

from engine.text.tokens import approximate_tokens
from engine.verify.results import Diagnostic, Frame, RuntimeValues

DEFAULT_CAP = 2000
INSTRUCTIONS = (
    "Fix only the failures above. Keep public names and signatures. "
    "Do not edit, skip or delete tests."
)
# Caps on single fields, so one huge repr cannot eat the packet.
VALUE_CHARS = 400
MESSAGE_CHARS = 600
EXCERPT_CHARS = 1500
# The runtime line: the first names of the failing frame's locals, each value capped.
RUNTIME_NAMES = 8
RUNTIME_VALUE_CHARS = 80

TokenCounter = Callable[[str], int]


class Failure(BaseModel):
    """One failing test, collection error or failed command."""

    model_config = ConfigDict(frozen=True)

    test: str  # nodeid, or what failed ("collecting tests/test_x.py", "stage lint")
    kind: str = "failed"  # failed | error | collection error | xpassed | timeout | command
    file: str = ""
    line: int = 0
    assertion: str | None = None
    expected: str | None = None
    actual: str | None = None
    comparison: str | None = None  # not ==: "actual OP expected" was false ("<", "in" ...)
    exception: str | None = None  # "Type: message"
    frame: Frame | None = None  # the last frame inside the project
    runtime: RuntimeValues | None = None  # the locals where it failed (redacted)
    captured: str = ""
    excerpt: str = ""  # the generic parser's excerpt, when nothing better is known


class EditAnchor(BaseModel):
    """Where the last edit landed: files and new-side line ranges, from its diff."""

    model_config = ConfigDict(frozen=True)

    files: dict[str, list[tuple[int, int]]] = Field(default_factory=dict)

    def describe(self) -> str:
        parts = []
        for path, ranges in self.files.items():
            spans = ", ".join(f"{a}-{b}" if b > a else str(a) for a, b in ranges)
            parts.append(f"{path} (lines {spans})" if spans else path)
        return "; ".join(parts)


class RepairPacket(BaseModel):
    model_config = ConfigDict(frozen=True)

    iteration: int | None = None
    max_iterations: int | None = None
    summary: str
    progress: str | None = None
    error_class: str
    failures: list[Failure] = Field(default_factory=list)
    diagnostics: list[Diagnostic] = Field(default_factory=list)
    last_edit: EditAnchor | None = None
    repeat_note: str | None = None
    notes: list[str] = Field(default_factory=list)
    instructions: str = INSTRUCTIONS

    def render(self, cap: int = DEFAULT_CAP, count: TokenCounter = approximate_tokens) -> str:
        """The packet as prompt text of at most `cap` tokens (as `count` measures them)."""
        head = self._head()
        tail = self._tail()
        budget = cap - count(head + tail) - 8
        first_full: str | None = None
        if self.failures:
            # Output shrinks first, then the runtime line goes, then the failure is clipped.
            tries = [(limit, True) for limit in (EXCERPT_CHARS, 600, 200, 0)] + [(0, False)]
            for limit, runtime in tries:
                first_full = _failure_in_full(self.failures[0], limit, runtime=runtime)
                if count(first_full) <= budget:
                    break
            else:
                first_full = _clip(first_full or "", max(budget, 0) * 3)
            budget -= count(first_full)
        lines = [f"- {line}" for line in _grouped_lines(self.failures)]
        lines += [f"- {_diagnostic_line(d)}" for d in self.diagnostics]
        shown: list[str] = []
        for index, line in enumerate(lines):
            more = len(lines) - index - 1
            reserve = count(f"- ... and {more} more\n") if more else 0
            cost = count(line + "\n")
            if cost + reserve > budget:
                shown.append(f"- ... and {len(lines) - index} more not shown")
                break
            shown.append(line)
            budget -= cost
        body = []
        if first_full is not None:
            body.append(first_full)
        if shown:
            body.append(("Also failing:\n" if self.failures else "Findings:\n") + "\n".join(shown))
        text = "\n\n".join(part for part in (head, *body, tail) if part)
        if count(text) > cap:  # the fixed parts alone exceed a tiny cap
            text = _clip(text, cap * 3)
        return text

    def without_runtime_values(self) -> RepairPacket:
        """The packet with no failure's local variables (runtime values turned off)."""
        failures = [f.model_copy(update={"runtime": None}) for f in self.failures]
        return self.model_copy(update={"failures": failures})

    def title(self) -> str:
        """The rendered packet's opening words, up to its colon."""
        title = "Verification failed"
        if self.iteration is not None and self.max_iterations is not None:
            title += f" (iteration {self.iteration}/{self.max_iterations})"
        return title

    def _head(self) -> str:
        lines = [f"{self.title()}: {self.summary}. Error class: {self.error_class}."]
        if self.progress:
            lines.append(f"Progress: {self.progress}.")
        return "\n".join(lines)

    def _tail(self) -> str:
        lines = []
        if self.last_edit is not None and self.last_edit.files:
            lines.append(f"Your last edit changed: {self.last_edit.describe()}.")
        if self.repeat_note:
            lines.append(self.repeat_note)
        lines += self.notes
        lines.append(self.instructions)
        return "\n".join(lines)


def _clip(text: str, chars: int) -> str:
    if len(text) <= chars:
        return text
    return text[: max(chars - 14, 0)] + " ...[clipped]"


def _where(file: str, line: int) -> str:
    return f"{file}:{line}" if file and line else file


def _failure_in_full(failure: Failure, excerpt_chars: int, *, runtime: bool = True) -> str:
    location = _where(failure.file, failure.line)
    lines = [f"{failure.kind.upper()}: {failure.test}" + (f" ({location})" if location else "")]
    if failure.assertion:
        lines.append(f"  failing line: {_clip(failure.assertion, MESSAGE_CHARS)}")
    if failure.comparison:
        lines.append(f"  false: {_comparison(failure, VALUE_CHARS)}")
    elif failure.expected is not None or failure.actual is not None:
        lines.append(f"  expected: `{_clip(failure.expected or '', VALUE_CHARS)}`")
        lines.append(f"  actual:   `{_clip(failure.actual or '', VALUE_CHARS)}`")
    if failure.exception:
        lines.append(f"  raised: {_clip(failure.exception, MESSAGE_CHARS)}")
    if failure.frame is not None:
        frame = failure.frame
        where = _where(frame.file, frame.line)
        function = f" in {frame.function}" if frame.function else ""
        source = f": {frame.source.strip()}" if frame.source.strip() else ""
        lines.append(f"  at {where}{function}{_clip(source, MESSAGE_CHARS)}")
    if failure.runtime is not None and failure.runtime.values and runtime:
        lines.append(f"  {runtime_line(failure.runtime)}")
    if failure.captured and excerpt_chars:
        lines.append("  output:\n" + _indent(_clip(failure.captured, excerpt_chars // 2)))
    if failure.excerpt and excerpt_chars:
        lines.append("  output excerpt:\n" + _indent(_clip(failure.excerpt, excerpt_chars)))
    return "\n".join(lines)


def runtime_line(runtime: RuntimeValues) -> str:
    """ "locals at src/bits.py:5 in bitcount: n = 127, count = 3" (at most RUNTIME_NAMES)."""
    frame = runtime.frame
    function = f" in {frame.function}" if frame.function else ""
    shown = runtime.values[:RUNTIME_NAMES]
    pairs = [f"{v.name} = {_cut(v.value, RUNTIME_VALUE_CHARS)}" for v in shown]
    more = runtime.omitted + len(runtime.values) - len(shown)
    if more:
        pairs.append(f"(and {more} more)")
    return f"locals at {_where(frame.file, frame.line)}{function}: {', '.join(pairs)}"


def _cut(text: str, chars: int) -> str:
    """One line of at most `chars` characters, ending in "..." where cut."""
    text = " ".join(text.split("\n"))
    return text if len(text) <= chars else text[: chars - 3] + "..."


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.strip("\n").split("\n"))


def _comparison(failure: Failure, chars: int) -> str:
    """`6.0` < `0.0001`: an ordering or membership assert, whose right side is a bound or a
    container, not the value the test expected."""
    actual, expected = _clip(failure.actual or "", chars), _clip(failure.expected or "", chars)
    return f"`{actual}` {failure.comparison} `{expected}`"


def _failure_line(failure: Failure) -> str:
    parts = [f"{failure.kind}: {failure.test}"]
    if failure.comparison:
        parts.append(f"false: {_comparison(failure, 60)}")
    elif failure.expected is not None or failure.actual is not None:
        expected = _clip(failure.expected or "", 60)
        actual = _clip(failure.actual or "", 60)
        parts.append(f"expected `{expected}`, got `{actual}`")
    elif failure.exception:
        parts.append(_clip(failure.exception.split("\n")[0], 120))
    if failure.frame is not None:
        parts.append(f"at {_where(failure.frame.file, failure.frame.line)}")
    return " — ".join(parts)


def _group_key(failure: Failure) -> tuple[str, str, str, str]:
    """Failures with one cause share a key: raised the same way at the same project line,
    or (with no project frame) the same test function failing the same way."""
    if failure.exception:
        exception = failure.exception.split(":")[0]
    else:
        compared = failure.expected is not None or failure.actual is not None
        exception = "AssertionError" if compared else ""
    frame = failure.frame
    if frame is not None:
        return ("frame", failure.kind, exception, f"{frame.file}:{frame.line}")
    return ("test", failure.kind, exception, failure.test.split("[")[0])


def _grouped_lines(failures: list[Failure]) -> list[str]:
    """One line per failure after the first; failures that share a cause (parametrized
    cases, many tests dying on the same project line) share a line with a few examples."""
    if not failures:
        return []
    groups: dict[tuple[str, str, str, str], list[Failure]] = {}
    for failure in failures:
        groups.setdefault(_group_key(failure), []).append(failure)
    lines = []
    first_key = _group_key(failures[0])
    for key, members in groups.items():
        if key == first_key:
            members = members[1:]
        if not members:
            continue
        if len(members) == 1:
            lines.append(_failure_line(members[0]))
            continue
        how, kind, exception, where = key
        more = " more" if key == first_key else ""
        examples = "; ".join(_example(member, how) for member in members[:3])
        if how == "frame":
            raised = f" raising {exception}" if exception else ""
            head = f"{kind} ×{len(members)}{more}{raised} at {where}"
        else:
            head = f"{kind} ×{len(members)}{more} {where}[...]"
        lines.append(f"{head} — e.g. {examples}")
    return lines


def _example(failure: Failure, how: str) -> str:
    base = failure.test.split("[")[0]
    name = failure.test.rsplit("::", 1)[-1] if how == "frame" else failure.test[len(base) :]
    if failure.expected is not None or failure.actual is not None:
        expected = _clip(failure.expected or "", 40)
        return f"{name} expected `{expected}`, got `{_clip(failure.actual or '', 40)}`"
    if failure.exception:
        message = failure.exception.split("\n")[0].partition(": ")[2] or failure.exception
        return f"{name}: {_clip(message, 80)}"
    return name


def _diagnostic_line(diagnostic: Diagnostic) -> str:
    where = _where(diagnostic.file, diagnostic.line)
    if diagnostic.col and diagnostic.line:
        where += f":{diagnostic.col}"
    code = f" {diagnostic.code}" if diagnostic.code else ""
    return f"{diagnostic.tool}{code} {where}: {_clip(diagnostic.message, 200)}"
