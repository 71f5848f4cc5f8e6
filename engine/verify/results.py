"""What a verifier run found, as data: parsed test reports, diagnostics and stage results.

Parsers produce these; classification, the verdict and distillation read them.
Field names of `TestReport` and its parts match the JSON written by the
in-sandbox pytest plugin (`engine/verify/plugin/fixloop_pytest.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from engine.text.redact import redact_variable


class StageKind(StrEnum):
    FORMAT = "format"
    LINT = "lint"
    TYPES = "types"
    TESTS = "tests"
    OTHER = "other"


class Frame(BaseModel):
    """One traceback frame, with the path relative to the project root when inside it."""

    model_config = ConfigDict(frozen=True)

    file: str
    line: int
    function: str = ""
    source: str = ""


class LocalValue(BaseModel):
    """One local variable at a failure: its name and its repr (capped by the plugin).

    The value is redacted as it is read, so nothing downstream (the trail's stage files,
    the packet, the prompt) ever holds a secret-looking value."""

    model_config = ConfigDict(frozen=True)

    name: str
    value: str

    @model_validator(mode="before")
    @classmethod
    def _redacted(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("value"), str):
            return {**data, "value": redact_variable(str(data.get("name", "")), data["value"])}
        return data


class RuntimeValues(BaseModel):
    """The local variables of a failure's deepest project frame, as the plugin caught them."""

    model_config = ConfigDict(frozen=True)

    frame: Frame
    values: list[LocalValue] = Field(default_factory=list)
    omitted: int = 0  # locals left out by the plugin's cap


class TestCase(BaseModel):
    """One test that did not simply pass (failed, errored, skipped, xfailed or xpassed)."""

    model_config = ConfigDict(frozen=True)
    __test__ = False  # not a pytest test class

    nodeid: str
    outcome: str  # failed | error | skipped | xfailed | xpassed | passed
    when: str = "call"  # collect (a module-level skip) | setup | call | teardown
    file: str = ""
    line: int = 0  # where the test is defined (1-based)
    assertion: str | None = None  # the source line of the failing statement in the test
    explanation: str | None = None  # pytest's assertion explanation
    expected: str | None = None
    actual: str | None = None
    comparison: str | None = None  # the failing assert's operator when not ==: actual OP expected
    exception_type: str | None = None
    exception_message: str | None = None
    test_frame: Frame | None = None  # where the failure surfaced in the test file
    frame: Frame | None = None  # the last traceback frame inside the project
    runtime: RuntimeValues | None = None  # the first failure's locals, where it failed
    captured: str = ""
    skip_reason: str | None = None


class CollectionError(BaseModel):
    model_config = ConfigDict(frozen=True)

    nodeid: str  # the file (or directory) that failed to collect
    exception_type: str | None = None
    exception_message: str | None = None
    frame: Frame | None = None
    text: str = ""  # pytest's own short rendering, capped


class TestCounts(BaseModel):
    model_config = ConfigDict(frozen=True)
    __test__ = False

    collected: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    xfailed: int = 0
    xpassed: int = 0

    @classmethod
    def total(cls, counts: Sequence[TestCounts]) -> TestCounts:
        """Several sessions' counts summed, field by field."""
        return cls(**{name: sum(getattr(c, name) for c in counts) for name in cls.model_fields})


class RewrittenReport(BaseModel):
    """A test's report that code outside pytest and fixloop rewrote (the plugin's
    `fixloop_pytest_rewrites`): its phase raised, its report said passed; with the hooks the
    project implements that can do it, `hook in file:line`."""

    model_config = ConfigDict(frozen=True)

    nodeid: str
    when: str = "call"
    what: str = "rewritten as passed"  # or "shown as passed" (pytest_report_teststatus)
    hooks: list[str] = Field(default_factory=list)


class TestReport(BaseModel):
    """One test session's report: the pytest plugin's, or one read from another runner's
    structured output (`go test -json`, Jest's or Vitest's JSON, JUnit XML)."""

    model_config = ConfigDict(frozen=True)
    __test__ = False  # not a pytest test class

    exitstatus: int | None = None
    counts: TestCounts = Field(default_factory=TestCounts)
    nodeids: list[str] = Field(default_factory=list)  # every collected test
    tests: list[TestCase] = Field(default_factory=list)  # every test that did not simply pass
    collection_errors: list[CollectionError] = Field(default_factory=list)
    truncated: bool = False  # the plugin dropped details to stay under its size cap
    internal_error: str | None = None  # the plugin's own failure; the session went on
    # The plugin stopped the session before its last test (the stage's time nearly spent):
    # how many were not run, and the plugin's sentence. The session then fails.
    not_run: int = 0
    stopped: str | None = None
    # Reports the project's hooks rewrote from failed to passed (the first few, and how many).
    rewritten: list[RewrittenReport] = Field(default_factory=list)
    rewritten_count: int = 0
    # Call times (seconds) of the tests that took half a second or more, the slowest few
    # hundred: the baseline's record of what each test needs (`engine/verify/time_needs.py`).
    durations: dict[str, float] = Field(default_factory=dict)


class Diagnostic(BaseModel):
    """One finding of a linter, type checker or formatter."""

    model_config = ConfigDict(frozen=True)

    tool: str
    file: str
    line: int = 0
    col: int = 0
    code: str = ""
    message: str
    severity: str = "error"


class StageFocus(BaseModel):
    """A test stage narrowed to the tests that failed at the last verification (failing tests
    first, `engine/verify/focus.py`): the test ids it was asked to run, and how many tests
    passed at the last verification and did not run now (counted as they were then, so a
    narrowed run's totals compare with a whole one's)."""

    model_config = ConfigDict(frozen=True)

    tests: list[str]
    carried_passed: int = 0


class StageResult(BaseModel):
    """One verifier stage: the command, how its process ended, and what was parsed from it."""

    model_config = ConfigDict(frozen=True)

    name: str
    kind: StageKind
    cmd: str
    exit_code: int
    duration_ms: int
    timed_out: bool = False
    oom_killed: bool = False
    truncated: bool = False
    stdout: str = ""
    stderr: str = ""
    report: TestReport | None = None
    diagnostics: list[Diagnostic] = Field(default_factory=list)
    excerpt: str = ""  # generic parser: the first error block, head + tail, capped
    infrastructure_error: str | None = None  # the sandbox itself failed
    focus: StageFocus | None = None  # only the tests that failed last time ran

    @property
    def succeeded(self) -> bool:
        """The process said success. pytest's "no tests collected" (5) never is."""
        if self.infrastructure_error or self.timed_out or self.oom_killed:
            return False
        return self.exit_code == 0
