"""The repair packet (ARCHITECTURE.md, "The repair packet"): what the model is told after a
failed verification, distilled from the parsed stage results (`distill`, pure functions, no
I/O).

`render()` writes it as text under a hard token cap. The first failure is shown
in full, the others one line each; whatever does not fit is counted, never
silently dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pydantic import BaseModel, ConfigDict, Field

from engine.edits.diff import parse_diff
from engine.text.tokens import approximate_tokens
from engine.verify.classify import Classification, ErrorClass
from engine.verify.parsers import hung_frames
from engine.verify.results import (
    Diagnostic,
    Frame,
    RuntimeValues,
    StageKind,
    StageResult,
    TestCase,
)

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


FAILING = ("failed", "error")


def distill(
    stages: Sequence[StageResult],
    classification: Classification,
    *,
    iteration: int | None = None,
    max_iterations: int | None = None,
    previous: Sequence[StageResult] | None = None,
    last_diff: str | None = None,
    notes: Sequence[str] = (),
) -> RepairPacket:
    """The packet for one verification; the loop adds the repeat note when it renders it."""
    return RepairPacket(
        iteration=iteration,
        max_iterations=max_iterations,
        summary=summarise(stages),
        progress=progress_between(previous, stages) if previous is not None else None,
        error_class=classification.error_class.value,
        failures=failures_of(stages),
        diagnostics=[d for stage in stages if not stage.succeeded for d in stage.diagnostics],
        last_edit=anchor_from_diff(last_diff) if last_diff else None,
        notes=[*_what_your_code_did(classification), *notes],
    )


def _what_your_code_did(classification: Classification) -> list[str]:
    """The one line that says the candidate's code hit a limit of the sandbox (its disk, the
    network): the failing test alone would read like a bug in the test or the machine."""
    if classification.error_class is ErrorClass.SANDBOX_LIMIT:
        return [classification.primary]
    return []


def failures_of(stages: Sequence[StageResult]) -> list[Failure]:
    """Root causes first: what broke collection, then failing tests in run order, then
    stages that failed without saying more."""
    collection: list[Failure] = []
    tests: list[Failure] = []
    other: list[Failure] = []
    for stage in stages:
        report = stage.report
        if report is not None:
            for error in report.collection_errors:
                exception = _exception(error.exception_type, error.exception_message)
                frame = error.frame
                collection.append(
                    Failure(
                        test=f"collecting {error.nodeid}",
                        kind="collection error",
                        file=frame.file if frame else error.nodeid,
                        line=frame.line if frame else 0,
                        exception=exception,
                        frame=frame,
                        excerpt="" if exception else error.text,
                    )
                )
            tests += [_test_failure(case) for case in report.tests if _fails(case)]
            if report.stopped:
                other.append(
                    Failure(
                        test=f"stage {stage.name}: {stage.cmd}",
                        kind="timeout",
                        exception=report.stopped,
                    )
                )
                continue
        if stage.succeeded or stage.diagnostics:
            continue
        reported = report is not None and bool(report.tests or report.collection_errors)
        if reported and not (stage.timed_out or stage.oom_killed):
            continue
        other.append(_stage_failure(stage))
    return collection + tests + other


def _fails(case: TestCase) -> bool:
    return case.outcome in FAILING


def _exception(kind: str | None, message: str | None) -> str | None:
    if not kind:
        return message or None
    return f"{kind}: {message}" if message else kind


def _test_failure(case: TestCase) -> Failure:
    comparison = case.expected is not None or case.actual is not None
    exception = _exception(case.exception_type, case.exception_message)
    if comparison and case.exception_type == "AssertionError":
        exception = None  # expected/actual say it better than "assert 2 == 2.5"
    elif case.exception_type == "AssertionError" and case.explanation:
        exception = f"AssertionError: {case.explanation}"
    elif exception is None and case.explanation:
        exception = case.explanation
        if "XPASS(strict)" in exception:
            exception += " (the test passed but is marked xfail(strict=True))"
    frame = case.frame
    if frame is not None and case.test_frame is not None and frame == case.test_frame:
        frame = None  # the failing line already says where
    location = case.test_frame
    return Failure(
        test=case.nodeid,
        kind=_kind(case),
        file=location.file if location else case.file,
        line=location.line if location else case.line,
        assertion=case.assertion,
        expected=case.expected,
        actual=case.actual,
        comparison=case.comparison,
        exception=exception,
        frame=frame,
        runtime=case.runtime,
        captured=case.captured,
    )


def _kind(case: TestCase) -> str:
    if case.exception_type == "TestTimeout":  # the plugin stopped it at its time limit
        return "timeout"
    return "error" if case.outcome == "error" else "failed"


def _stage_failure(stage: StageResult) -> Failure:
    # A faulthandler dump names the test that hung: the stage's timeout, or the plugin's
    # last resort against a test that held the interpreter past its limit (no report then).
    hung = _hung_test(stage)
    if hung is not None:
        return hung
    if stage.infrastructure_error:
        why = f"the sandbox failed: {stage.infrastructure_error}"
        kind = "command"
    elif stage.timed_out:
        why, kind = "timed out (a test may hang or loop forever)", "timeout"
    elif stage.oom_killed:
        why, kind = "killed for exceeding the memory limit", "command"
    else:
        why, kind = f"exited {stage.exit_code}", "command"
    return Failure(
        test=f"stage {stage.name}: {stage.cmd}", kind=kind, exception=why, excerpt=stage.excerpt
    )


def _hung_test(stage: StageResult) -> Failure | None:
    frames = hung_frames(stage.excerpt or stage.stderr)
    tests = [f for f in frames if f.function.startswith("test")]
    if not tests:
        return None
    test = tests[0]
    innermost = frames[0]
    why = (
        "still running when the stage timed out: it hangs or loops forever"
        if stage.timed_out
        else "did not stop at its time limit and the session was ended: it hangs or loops "
        "forever in code that never returns to Python"
    )
    return Failure(
        test=f"{test.file}::{test.function}",
        kind="timeout",
        file=test.file,
        line=test.line,
        exception=why,
        frame=innermost if innermost != test else None,
    )


def summarise(stages: Sequence[StageResult]) -> str:
    """ "2 of 5 tests failing; 1 lint error" — counts, never prose."""
    parts = []
    for stage in stages:
        report = stage.report
        if report is not None:
            counts = report.counts
            # Collection errors are counted as errors by pytest, but they are not tests.
            bad = counts.failed + max(counts.errors - len(report.collection_errors), 0)
            if report.collection_errors:
                n = len(report.collection_errors)
                parts.append(f"{n} file{'s' if n != 1 else ''} failed to collect")
            if counts.collected == 0 and not report.collection_errors:
                parts.append("no tests were collected")
            elif bad and counts.collected:
                parts.append(f"{bad} of {counts.collected} tests failing")
            elif stage.succeeded:
                parts.append(f"{counts.passed} of {counts.collected} tests pass")
            if report.not_run:
                parts.append(f"{report.not_run} not run (time nearly up)")
            if stage.timed_out:
                parts.append(f"{stage.name} timed out")
        elif stage.diagnostics and not stage.succeeded:
            n = len(stage.diagnostics)
            noun = {StageKind.TYPES: "type error", StageKind.FORMAT: "unformatted file"}.get(
                stage.kind, f"{stage.name} error"
            )
            parts.append(f"{n} {noun}{'s' if n != 1 else ''}")
        elif not stage.succeeded:
            if stage.timed_out:
                parts.append(f"{stage.name} timed out")
            elif stage.oom_killed:
                parts.append(f"{stage.name} ran out of memory")
            else:
                parts.append(f"{stage.name} failed (exit {stage.exit_code})")
    return "; ".join(parts) or "all stages passed"


def _outcomes(stages: Sequence[StageResult]) -> tuple[set[str], set[str], bool]:
    """(passing, failing) nodeids of every pytest report, and whether they are the whole
    suite: no collection error hid tests, no report dropped entries to fit its size (then a
    test absent from its entries is not known to have passed: it is in neither set)."""
    passing: set[str] = set()
    failing: set[str] = set()
    whole = True
    for stage in stages:
        if stage.report is None:
            continue
        not_passed = {case.nodeid for case in stage.report.tests}
        failing |= {case.nodeid for case in stage.report.tests if _fails(case)}
        if stage.report.truncated:
            whole = False
        else:
            passing |= set(stage.report.nodeids) - not_passed
        whole = whole and not stage.report.collection_errors
    return passing, failing, whole


def progress_between(
    previous: Sequence[StageResult] | None, current: Sequence[StageResult]
) -> str | None:
    """ "3 tests now pass that failed before; 2 still fail; 1 new failure". A new failure
    is a test failing now that the previous verification saw pass, or that it did not have
    while it saw the whole suite; a test it could not see (a collection error, a report cut
    to fit) is never called new: it may have failed all along."""
    if previous is None:
        return None
    before_pass, before_fail, before_whole = _outcomes(previous)
    now_pass, now_fail, _ = _outcomes(current)
    fixed = len(before_fail & now_pass)
    still = len(before_fail & now_fail)
    new_failures = now_fail - before_fail
    if not before_whole:
        new_failures &= before_pass
    broke = len(new_failures)
    parts = []
    if fixed:
        verb = "tests now pass" if fixed != 1 else "test now passes"
        parts.append(f"{fixed} {verb} that failed before")
    if still:
        parts.append(f"{still} still fail{'s' if still == 1 else ''}")
    if broke:
        parts.append(f"{broke} new failure{'s' if broke != 1 else ''}")
    regressed = len(before_pass & now_fail)
    if regressed:
        parts.append(f"{regressed} of them passed before your edit")
    return "; ".join(parts) or None


def anchor_from_diff(diff: str) -> EditAnchor:
    """Files and new-side line ranges of a unified diff (git's); a deleted file has no lines."""
    files: dict[str, list[tuple[int, int]]] = {}
    for file in parse_diff(diff).files:
        ranges = files.setdefault(file.path, [])
        if file.new_path is not None:
            ranges.extend(span for hunk in file.hunks if (span := hunk.new_range) is not None)
    return EditAnchor(files=files)
