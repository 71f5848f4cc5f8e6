"""What kind of failure a verifier run ended in, and a stable signature of it.

The loop reads the class to decide whether the model can fix it (mechanical, logic, lint) or a
person must (env_failure, ...), and compares signatures to notice it is going round in circles.
Everything here is a pure function of `StageResult`s except `project_modules`, which reads a tree.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, ConfigDict

from engine.verify.results import StageKind, StageResult, TestCase


class ErrorClass(StrEnum):
    NONE = "none"
    MECHANICAL = "mechanical"  # the code does not load or call correctly: names, syntax, arity
    LOGIC = "logic"  # the code runs but computes the wrong thing
    ENV_FAILURE = "env_failure"  # the environment, not the code: re-run once, then escalate
    TIMEOUT = "timeout"
    OOM = "oom"
    COLLECTION_ERROR = "collection_error"
    NO_TESTS = "no_tests"
    LINT = "lint"  # only lint, format or type diagnostics failed
    # Spec mode: the tests use names the module does not define, or call them with arguments
    # its signature does not take; found by reading the code, before anything runs.
    REFERENCE_ERROR = "reference_error"


class Classification(BaseModel):
    model_config = ConfigDict(frozen=True)

    error_class: ErrorClass
    env_cause: str | None = None  # what is missing and the fix to try (env_failure only)
    primary: str  # one line: the root failure, for people and for the repair packet


# --- what a failure looks like, whatever it came from ------------------------------------------


@dataclass(frozen=True)
class _Failure:
    where: str  # a test nodeid, a collected file, or a stage name
    exception_type: str | None
    message: str

    @property
    def short_type(self) -> str:
        """`socket.gaierror` and `gaierror` are the same exception."""
        return (self.exception_type or "").rsplit(".", 1)[-1]

    @property
    def headline(self) -> str:
        message = _first_line(self.message)
        if self.exception_type and message:
            return f"{self.exception_type}: {message}"
        return self.exception_type or message or "failed"


@dataclass(frozen=True)
class _StageFailures:
    """What one failed tests (or generic) stage says went wrong, from its report or its text."""

    tests: list[_Failure]  # failing tests, in run order
    collection: list[_Failure]
    no_tests: bool
    text: str  # raw output worth scanning for environment causes


_FAILING_OUTCOMES = frozenset({"failed", "error"})
_PROJECT_ALWAYS = frozenset({"tests", "test", "conftest"})  # importable from any project root
_MAX_PRIMARY = 300


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= _MAX_PRIMARY else line[: _MAX_PRIMARY - 1] + "…"


def _stage_failed(stage: StageResult) -> bool:
    """Exit status, or a report/diagnostics that show failures a `|| true` hid."""
    if not stage.succeeded:
        return True
    report = stage.report
    if report and (
        report.collection_errors or any(t.outcome in _FAILING_OUTCOMES for t in report.tests)
    ):
        return True
    return any(d.severity == "error" for d in stage.diagnostics)


def _test_failure(test: TestCase) -> _Failure:
    message = test.exception_message or test.explanation or ""
    return _Failure(test.nodeid, test.exception_type, message)


# --- reading pytest's text when there is no report ----------------------------------------------

_SUMMARY_LINE = re.compile(r"^(FAILED|ERROR) (\S+)(?: - (.*))?$", re.MULTILINE)
_E_EXCEPTION = re.compile(r"^E\s+([A-Za-z_][\w.]*): ?(.*)$", re.MULTILINE)
_E_ASSERT = re.compile(r"^E\s+(assert .*)$", re.MULTILINE)
_TRACEBACK_LAST = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|gaierror)): (.*)$", re.M)
_COLLECTING = re.compile(r"ERROR collecting (\S+)|errors? during collection")
_NO_TESTS_TEXT = re.compile(r"\bno tests ran\b|\bcollected 0 items\b")
_LOWER_EXCEPTIONS = frozenset({"gaierror", "herror", "timeout", "error"})


def _looks_like_exception(name: str) -> bool:
    last = name.rsplit(".", 1)[-1]
    return last[:1].isupper() or last in _LOWER_EXCEPTIONS


def _first_exception_in_text(text: str) -> tuple[str, str] | None:
    """The first `E   Type: message` (or `E   assert ...`) block of pytest's output."""
    found: list[tuple[int, str, str]] = []
    for match in _E_EXCEPTION.finditer(text):
        if _looks_like_exception(match.group(1)):
            found.append((match.start(), match.group(1), match.group(2)))
            break
    if assertion := _E_ASSERT.search(text):
        found.append((assertion.start(), "AssertionError", assertion.group(1)))
    if not found and (last := list(_TRACEBACK_LAST.finditer(text))):
        found.append((0, last[-1].group(1), last[-1].group(2)))  # a plain Python traceback
    if not found:
        return None
    _, kind, message = min(found)
    return kind, message


def _failures_from_text(stage: StageResult) -> _StageFailures:
    text = "\n".join(part for part in (stage.excerpt, stage.stdout, stage.stderr) if part)
    exception = _first_exception_in_text(text)
    kind, message = exception if exception else (None, _first_line(stage.stderr or stage.stdout))
    summary = [(m.group(1), m.group(2), m.group(3) or "") for m in _SUMMARY_LINE.finditer(text)]
    collecting = _COLLECTING.search(text)
    if collecting:
        files = [node for outcome, node, _ in summary if outcome == "ERROR" and "::" not in node]
        files = files or [collecting.group(1) or stage.name]
        collection = [_Failure(files[0], kind, message)] + [
            _Failure(f, None, "") for f in files[1:]
        ]
        return _StageFailures([], collection, no_tests=False, text=text)
    tests = [
        _Failure(node, kind if i == 0 else None, message if i == 0 else detail)
        for i, (_, node, detail) in enumerate(summary)
    ]
    no_tests = stage.kind is StageKind.TESTS and (
        stage.exit_code == 5 or (not tests and bool(_NO_TESTS_TEXT.search(text)))
    )
    if not tests and not no_tests and not stage.succeeded:
        tests = [_Failure(f"stage '{stage.name}' (exit {stage.exit_code})", kind, message)]
    return _StageFailures(tests, [], no_tests=no_tests, text=text)


def _failures(stage: StageResult) -> _StageFailures:
    report = stage.report
    if report is None:
        return _failures_from_text(stage)
    tests = [_test_failure(t) for t in report.tests if t.outcome in _FAILING_OUTCOMES]
    collection = [
        _Failure(c.nodeid, c.exception_type, c.exception_message or c.text)
        for c in report.collection_errors
    ]
    parsed = _first_exception_in_text(report.collection_errors[0].text) if collection else None
    if parsed and collection[0].exception_type is None:
        collection[0] = _Failure(collection[0].where, *parsed)
    no_tests = report.exitstatus == 5 or (report.counts.collected == 0 and not collection)
    # Without failures in the report (pytest crashed, a conftest did not import) the cause is
    # only in the process output.
    quiet = not tests and not collection
    text = "\n".join((stage.stdout, stage.stderr)) if quiet and not stage.succeeded else ""
    if quiet and not no_tests and not stage.succeeded:
        parsed = _first_exception_in_text(text)
        kind, message = parsed if parsed else (None, _first_line(stage.stderr or stage.stdout))
        tests = [_Failure(f"stage '{stage.name}' (exit {stage.exit_code})", kind, message)]
    return _StageFailures(tests, collection, no_tests=no_tests, text=text)


# --- the environment, not the code --------------------------------------------------------------

_NO_MODULE = re.compile(r"No module named '?([A-Za-z_][\w.]*)'?(; '[\w.]+' is not a package)?")
_SHARED_LIB = re.compile(
    r"error while loading shared libraries: ([^\s:]+)|([^\s:'\"]+\.so[\w.]*): cannot open shared "
    r"object file"
)
_COMMAND_NOT_FOUND = re.compile(
    r"(?:^|: )([^\s:]+): command not found"
    r"|^(?:/bin/|/usr/bin/)?(?:ba|da)?sh: (?:line )?\d+: ([^\s:]+): not found"
    r"|Command '\[?'?([^\s',\]]+).*' returned non-zero exit status 127",
    re.MULTILINE,
)
_DISK_FULL = re.compile(r"No space left on device|ENOSPC|\[Errno 28\]|Disk quota exceeded")
_NETWORK = (
    (re.compile(r"Connection ?refused", re.IGNORECASE), "connection refused"),
    (re.compile(r"Temporary failure in name resolution"), "name resolution failed"),
    (re.compile(r"Name or service not known"), "name resolution failed"),
    (re.compile(r"Network is unreachable"), "network is unreachable"),
)
# Import names whose distribution is called something else; anything else is guessed as itself.
_DISTRIBUTIONS = {
    "yaml": "PyYAML",
    "PIL": "Pillow",
    "cv2": "opencv-python",
    "sklearn": "scikit-learn",
    "bs4": "beautifulsoup4",
    "dateutil": "python-dateutil",
    "dotenv": "python-dotenv",
    "jwt": "PyJWT",
    "serial": "pyserial",
    "Crypto": "pycryptodome",
    "attr": "attrs",
    "magic": "python-magic",
}


@dataclass(frozen=True)
class _EnvFinding:
    cause: str
    evidence: str


def _missing_module(text: str, known: frozenset[str]) -> _EnvFinding | None:
    for match in _NO_MODULE.finditer(text):
        if match.group(2):  # "'os' is not a package": the top level exists; a wrong name
            continue
        top = match.group(1).split(".")[0]
        if top in known:
            continue
        pip_name = _DISTRIBUTIONS.get(top, top)
        return _EnvFinding(
            f"module '{top}' is not installed in the test environment: install it into the "
            f"interpreter given by --python (pip install {pip_name}?)",
            match.group(0),
        )
    return None


def _scannable(text: str) -> str:
    """Output lines that can carry an error, not the echoed source of a failing test.

    pytest shows test source indented or after `>`; a test named `test_connection_refused` or a
    `pytest.raises(ConnectionRefusedError)` there says nothing about the environment.
    """
    return "\n".join(line for line in text.splitlines() if line[:1] not in {" ", "\t", ">"})


def _env_in_text(text: str, known: frozenset[str]) -> _EnvFinding | None:
    if not text:
        return None
    # A missing library also exits 127, so it is asked before "command not found".
    if match := _SHARED_LIB.search(text):
        library = match.group(1) or match.group(2)
        return _EnvFinding(
            f"missing shared library {library}: install the system package providing it",
            _line_of(text, match),
        )
    if finding := _missing_module(text, known):
        return finding
    if match := _COMMAND_NOT_FOUND.search(text):
        return _command_not_found(match.group(1) or match.group(2) or match.group(3))
    if match := _DISK_FULL.search(text):
        return _EnvFinding(
            "disk full in the sandbox workspace: raise --tmpfs or clean outputs",
            _line_of(text, match),
        )
    for pattern, what in _NETWORK:
        if match := pattern.search(text):
            return _EnvFinding(
                f"a test tried to reach the network ({what}): the sandbox has no network; mock it",
                _line_of(text, match),
            )
    return None


def _command_not_found(command: str) -> _EnvFinding:
    return _EnvFinding(
        f"command '{command}' not found in the sandbox (exit 127): install it or fix the stage "
        "command",
        f"{command}: command not found",
    )


def _line_of(text: str, match: re.Match[str]) -> str:
    start = text.rfind("\n", 0, match.start()) + 1
    end = text.find("\n", match.end())
    return text[start : end if end >= 0 else len(text)].strip().removeprefix("E").strip()


def _env_failure(stage: StageResult, known: frozenset[str]) -> Classification | None:
    failures = _failures(stage)
    evidence: list[tuple[str, str]] = [
        (f.where, f"{f.exception_type or ''}: {f.message}")
        for f in failures.collection + failures.tests
    ]
    if stage.report is None and stage.diagnostics:
        evidence = [(stage.name, stage.stderr)]  # the tool ran; only its own crash counts
    elif failures.text:
        evidence.append((f"stage '{stage.name}'", _scannable(failures.text)))
    for where, text in evidence:
        if finding := _env_in_text(text, known):
            return _env(finding, where)
    if stage.exit_code == 127:
        command = stage.cmd.split()[0] if stage.cmd.split() else stage.name
        return _env(_command_not_found(command), f"stage '{stage.name}'")
    return None


def _env(finding: _EnvFinding, where: str) -> Classification:
    return Classification(
        error_class=ErrorClass.ENV_FAILURE,
        env_cause=finding.cause,
        primary=_one_line(f"{where}: {finding.evidence}"),
    )


# --- the code: mechanical or logic --------------------------------------------------------------

_ALWAYS_MECHANICAL = frozenset(
    {"SyntaxError", "IndentationError", "TabError", "NameError", "UnboundLocalError"}
)
_IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError"})
_MODULE_ATTRIBUTE = re.compile(r"^module '[\w.]+' has no attribute ")
_ARITY = re.compile(
    r"takes \d+ positional arguments? but"
    r"|takes from \d+ to \d+ positional arguments"
    r"|missing \d+ required (?:positional|keyword-only) arguments?"
    r"|got an unexpected keyword argument"
    r"|got multiple values for argument"
    r"|got some positional-only arguments passed as keyword"
    r"|takes no arguments"
    r"|takes exactly one argument"
)
_FIXTURE_NOT_FOUND = re.compile(r"fixture '[^']+' not found")


def _is_mechanical(failure: _Failure, known: frozenset[str]) -> bool:
    kind, message = failure.short_type, failure.message
    if kind in _ALWAYS_MECHANICAL:
        return True
    if kind == "AttributeError":
        return bool(_MODULE_ATTRIBUTE.match(message))
    if kind == "TypeError":
        return bool(_ARITY.search(message))
    if kind in _IMPORT_ERRORS:
        # "cannot import name 'x' from 'mod'" is a wrong name whatever the module; a missing
        # module is the code's fault only when it is the project's own.
        if "cannot import name" in message:
            return True
        missing = _NO_MODULE.search(message)
        if missing and missing.group(2):  # "'os' is not a package": a wrong submodule name
            return True
        return bool(missing and missing.group(1).split(".")[0] in known)
    return bool(_FIXTURE_NOT_FOUND.search(message))


def _code_failure(failure: _Failure, known: frozenset[str]) -> Classification:
    error_class = ErrorClass.MECHANICAL if _is_mechanical(failure, known) else ErrorClass.LOGIC
    return Classification(
        error_class=error_class, primary=_one_line(f"{failure.where}: {failure.headline}")
    )


def _collection_failure(failure: _Failure, known: frozenset[str]) -> Classification:
    mechanical = _is_mechanical(failure, known)
    return Classification(
        error_class=ErrorClass.MECHANICAL if mechanical else ErrorClass.COLLECTION_ERROR,
        primary=_one_line(f"{failure.where} failed to collect: {failure.headline}"),
    )


# --- the decision -------------------------------------------------------------------------------

_LINT_KINDS = frozenset({StageKind.FORMAT, StageKind.LINT, StageKind.TYPES})


def classify(
    stages: Sequence[StageResult],
    *,
    project_modules: frozenset[str],
    touched_modules: frozenset[str] = frozenset(),
) -> Classification:
    """The root failure of one verifier run, most fundamental cause first.

    `project_modules` and `touched_modules` (modules of the files the last edit changed) tell a
    missing third-party module (env_failure) from a broken import of the project (mechanical).
    """
    known = project_modules | touched_modules | _PROJECT_ALWAYS
    failed = [s for s in stages if _stage_failed(s)]
    for stage in failed:
        if stage.infrastructure_error:
            cause = (
                f"the sandbox itself failed: {stage.infrastructure_error}: run `fixloop-tui doctor`"
            )
            return Classification(
                error_class=ErrorClass.ENV_FAILURE,
                env_cause=_one_line(cause),
                primary=_one_line(f"stage '{stage.name}': {stage.infrastructure_error}"),
            )
    for stage in failed:
        if stage.oom_killed:
            primary = f"stage '{stage.name}' was killed for running out of memory"
            return Classification(error_class=ErrorClass.OOM, primary=primary)
    for stage in failed:
        if stage.timed_out:
            primary = f"stage '{stage.name}' timed out after {stage.duration_ms / 1000:.0f}s"
            return Classification(error_class=ErrorClass.TIMEOUT, primary=primary)
    for stage in failed:
        if env := _env_failure(stage, known):
            return env

    code_stages = [s for s in failed if s.kind not in _LINT_KINDS]
    found = [(s, _failures(s)) for s in code_stages]
    for _, failures in found:
        if failures.collection:
            return _collection_failure(failures.collection[0], known)
    for stage, failures in found:
        if failures.no_tests and not failures.tests:
            exit_note = f" (exit {stage.exit_code})" if stage.exit_code else ""
            primary = f"stage '{stage.name}' collected no tests{exit_note}"
            return Classification(error_class=ErrorClass.NO_TESTS, primary=primary)
    for _, failures in found:
        if failures.tests:
            return _code_failure(failures.tests[0], known)
    # A tests stage can also say "no tests" with exit 0 (a swallowed exit 5).
    for stage in stages:
        report = stage.report
        if stage.kind is not StageKind.TESTS or report is None:
            continue
        if report.exitstatus == 5 or report.counts.collected == 0:
            primary = f"stage '{stage.name}' collected no tests"
            return Classification(error_class=ErrorClass.NO_TESTS, primary=primary)

    lint = [s for s in failed if s.kind in _LINT_KINDS]
    if lint:
        return Classification(error_class=ErrorClass.LINT, primary=_lint_primary(lint))
    return Classification(error_class=ErrorClass.NONE, primary="every stage passed")


def _lint_primary(stages: Sequence[StageResult]) -> str:
    diagnostics = [d for s in stages for d in s.diagnostics]
    if not diagnostics:
        stage = stages[0]
        detail = _first_line(stage.excerpt or stage.stdout or stage.stderr)
        return _one_line(f"stage '{stage.name}' failed (exit {stage.exit_code}): {detail}")
    first = diagnostics[0]
    code = f" {first.code}" if first.code else ""
    count = f"{len(diagnostics)} diagnostics" if len(diagnostics) > 1 else "1 diagnostic"
    where = f"{first.file}:{first.line}" if first.line else first.file
    return _one_line(f"{count}; first: {first.tool}{code} at {where}: {first.message}")


# --- signatures ---------------------------------------------------------------------------------

_NORMALISERS: tuple[tuple[re.Pattern[str], str], ...] = (
    # temporary directories first, before their digits are touched
    (re.compile(r"(?:/private)?/tmp/pytest-of-[^/\s]+/pytest-\d+"), "<tmp>"),
    (re.compile(r"pytest-of-[^/\s]+/pytest-\d+"), "<tmp>"),
    (re.compile(r"/fixloop/work/"), ""),
    (re.compile(r"(?:/private)?/(?:tmp|var/folders)/[^\s'\":,)\]]+"), "<tmp>"),
    (re.compile(r"0x[0-9a-fA-F]+"), "0x?"),
    (re.compile(r"\b(id|pid)([=: ])\d+"), r"\1\2?"),
    (re.compile(r"\bline \d+"), "line ?"),
    (re.compile(r"(?<=[A-Za-z_>\]\)]):\d+(?::\d+)?"), ":?"),
    (re.compile(r"\b\d+(?:\.\d+)?\s?(?:[KMGT]i?B|[kKMG]|bytes)\b"), "?B"),
    (re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|s|sec|seconds)\b"), "?s"),
    (re.compile(r"\s+"), " "),
)


def normalise(text: str) -> str:
    """The failure text without what changes between two runs of the same failure."""
    for pattern, replacement in _NORMALISERS:
        text = pattern.sub(replacement, text)
    return text.strip()


_MAX_NODEIDS = 20
_MAX_MESSAGE = 500


def signature_text(stages: Sequence[StageResult], classification: Classification) -> str:
    """The canonical description of the root failure that `signature` hashes."""
    lines = [f"class: {classification.error_class.value}"]
    failed = [s for s in stages if _stage_failed(s)]
    cls = classification.error_class
    if cls in {ErrorClass.ENV_FAILURE, ErrorClass.TIMEOUT, ErrorClass.OOM}:
        lines.append("stages: " + ", ".join(sorted({s.name for s in failed})))
        if classification.env_cause:
            lines.append(f"cause: {normalise(classification.env_cause)}")
        return "\n".join(lines)
    if cls is ErrorClass.LINT:
        lint = [s for s in failed if s.kind in _LINT_KINDS]
        pairs = sorted({(d.file, d.code) for s in lint for d in s.diagnostics})
        lines.append("lint: " + "; ".join(f"{file} {code}".strip() for file, code in pairs))
        if not pairs:
            lines += [f"{s.name}: {normalise(s.excerpt or s.stdout)[:_MAX_MESSAGE]}" for s in lint]
        return "\n".join(lines)
    every = [_failures(s) for s in failed if s.kind not in _LINT_KINDS]
    failures = [f for s in every for f in s.collection] or [f for s in every for f in s.tests]
    if failures:
        nodeids = sorted({f.where for f in failures})[:_MAX_NODEIDS]
        lines.append("tests: " + ", ".join(nodeids))
        first = failures[0]
        message = normalise(first.message)[:_MAX_MESSAGE]
        lines.append(f"exception: {first.short_type or '-'}: {message}")
    return "\n".join(lines)


def signature(stages: Sequence[StageResult], classification: Classification) -> str:
    """16 hex characters that are equal exactly when two runs failed the same way."""
    text = signature_text(stages, classification)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# --- which modules belong to the project --------------------------------------------------------

_NOT_MODULES = frozenset({"tests", "test", "__pycache__", "node_modules", "site-packages"})
_EXTENSIONS = (".so", ".pyd")


def project_modules(root: Path) -> frozenset[str]:
    """Top-level importable names the project itself provides, at its root and under src/."""
    names: set[str] = set()
    for base in (root, root / "src"):
        if not base.is_dir():
            continue
        for entry in base.iterdir():
            name = entry.name
            if name.startswith(".") or name in _NOT_MODULES:
                continue
            if entry.is_file():
                stem = name.split(".")[0]
                if (name.endswith((".py", ".pyi")) or name.endswith(_EXTENSIONS)) and (
                    stem.isidentifier()
                ):
                    names.add(stem)
            elif entry.is_dir() and name.isidentifier() and _is_package_dir(entry):
                if entry == root / "src" and not (entry / "__init__.py").exists():
                    continue  # the src layout's container, not a namespace package
                names.add(name)
    return frozenset(names)


def _is_package_dir(path: Path) -> bool:
    if (path / "pyvenv.cfg").exists():
        return False
    return (path / "__init__.py").exists() or any(path.glob("*.py"))


def modules_of(paths: Iterable[str]) -> frozenset[str]:
    """Top-level module names of edited files: `src/pkg/a.py` and `pkg/a.py` are `pkg`."""
    names: set[str] = set()
    for path in paths:
        parts = [p for p in PurePosixPath(path.replace("\\", "/")).parts if p not in {".", "/"}]
        if len(parts) > 1 and parts[0] == "src":
            parts = parts[1:]
        if not parts:
            continue
        if len(parts) == 1:
            name = parts[0]
            is_module = name.endswith((".py", ".pyi")) or name.endswith(_EXTENSIONS)
            top = name.split(".")[0] if is_module else ""
        else:
            top = parts[0]
        if top.isidentifier():
            names.add(top)
    return frozenset(names)
