"""What kind of failure a verifier run ended in, and a stable signature of it.

The loop reads the class to decide whether the model can fix it (mechanical, logic, lint) or a
person must (env_failure, ...), and compares signatures to notice it is going round in circles.
Pure: stage results and the project's module names (engine/project/modules.py) in, a
`Classification` out; reading what each stage says went wrong is `stage_failures`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from engine.verify.results import StageKind, StageResult, TestReport
from engine.verify.stage_failures import StageFailure, first_line, read_failures, stage_failed
from sandbox.pack import REFUSED_LINK


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
    # A candidate's code did what the sandbox does not allow (filled its disk, tried the
    # network) after the baseline passed the same checks: the model's to fix, not the run's end.
    SANDBOX_LIMIT = "sandbox_limit"
    # Spec mode: the tests use names the module does not define, or call them with arguments
    # its signature does not take; found by reading the code, before anything runs.
    REFERENCE_ERROR = "reference_error"


class Classification(BaseModel):
    model_config = ConfigDict(frozen=True)

    error_class: ErrorClass
    env_cause: str | None = None  # what is missing and the fix to try (env_failure only)
    primary: str  # one line: the root failure, for people and for the repair packet


_PROJECT_ALWAYS = frozenset({"tests", "test", "conftest"})  # importable from any project root
_MAX_PRIMARY = 300


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= _MAX_PRIMARY else line[: _MAX_PRIMARY - 1] + "…"


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
# Go and Node say a dependency is missing in their own words; a relative import is the project's.
_GO_MODULE_MISSING = re.compile(
    r"no required module provides package ([^\s;]+)|cannot find module providing package (\S+?):"
)
_JS_MODULE_MISSING = re.compile(
    r"Cannot find (?:module|package) '([^'./][^']*)'|Failed to load url ([^\s./][^\s]*) "
)
_JS_LOCAL_MODULE = re.compile(r"Cannot find module '\.{0,2}/|Failed to load url \.{0,2}/")
_DISK_FULL = re.compile(r"No space left on device|ENOSPC|\[Errno 28\]|Disk quota exceeded")
_NETWORK = (
    (re.compile(r"Connection ?refused", re.IGNORECASE), "connection refused"),
    (re.compile(r"Temporary failure in name resolution"), "name resolution failed"),
    (re.compile(r"Name or service not known"), "name resolution failed"),
    (re.compile(r"Network is unreachable"), "network is unreachable"),
    (re.compile(r"No route to host"), "no route to host"),
)
# What a candidate's code is told it did, by the kind of environment finding; the kinds it
# cannot have caused by itself (a missing module, command or library) are not here.
_YOURS = {
    "disk": "your code filled the sandbox's disk{size}",
    "network": "your code tried the network, which the sandbox does not have",
}
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
    kind: str = ""  # a key of _YOURS when the code under test can cause it by itself


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


@dataclass(frozen=True)
class OwnPackage:
    """Before any edit, the project's own top-level packages and where they should import
    from: a test that cannot import one of them then points at the dev setup (the package is
    not installed in the interpreter the tests run with), never at the code. `python` and
    `project` are host paths, only quoted in the fix; nothing here runs."""

    modules: frozenset[str]
    python: str | None = None
    project: str | None = None

    def missing(self, text: str) -> _EnvFinding | None:
        for match in _NO_MODULE.finditer(text):
            # Only the top level itself: 'pkg.sub' missing while 'pkg' imports is the code's.
            if match.group(2) or match.group(1) not in self.modules:
                continue
            python = self.python or "the interpreter given by --python"
            install = f"{self.python or 'python'} -m pip install -e {self.project or '.'}"
            return _EnvFinding(
                f"the project's own package '{match.group(1)}' does not import in the sandbox: "
                f"it is not installed in {python}; run `{install}` (or put its directory on "
                "pytest's `pythonpath`)",
                match.group(0),
            )
        return None


def _scannable(text: str) -> str:
    """Output lines that can carry an error, not the echoed source of a failing test.

    pytest shows test source indented or after `>`; a test named `test_connection_refused` or a
    `pytest.raises(ConnectionRefusedError)` there says nothing about the environment.
    """
    return "\n".join(line for line in text.splitlines() if line[:1] not in {" ", "\t", ">"})


def _env_in_text(
    text: str, known: frozenset[str], own: OwnPackage | None = None
) -> _EnvFinding | None:
    if not text:
        return None
    text = _bounded_lines(text)
    if own is not None and (finding := own.missing(text)):
        return finding
    # A missing library also exits 127, so it is asked before "command not found".
    if match := _SHARED_LIB.search(text):
        library = match.group(1) or match.group(2)
        return _EnvFinding(
            f"missing shared library {library}: install the system package providing it",
            _line_of(text, match),
        )
    if finding := _missing_module(text, known):
        return finding
    if match := _GO_MODULE_MISSING.search(text):
        package = match.group(1) or match.group(2)
        return _EnvFinding(
            f"Go package {package} is not in the module cache, and the sandbox has no network: "
            f"run `go get {package}` (or `go mod download`) on the host",
            match.group(0),
        )
    if match := _JS_MODULE_MISSING.search(text):
        name = match.group(1) or match.group(2)
        package = "/".join(name.split("/")[: 2 if name.startswith("@") else 1])
        return _EnvFinding(
            f"npm package '{package}' is not installed in node_modules, and the sandbox has no "
            f"network: run `npm install {package}` on the host",
            match.group(0),
        )
    if match := _COMMAND_NOT_FOUND.search(text):
        return _command_not_found(match.group(1) or match.group(2) or match.group(3))
    if match := _DISK_FULL.search(text):
        return _EnvFinding(
            "disk full in the sandbox workspace: raise --tmpfs or clean outputs",
            _line_of(text, match),
            "disk",
        )
    for pattern, what in _NETWORK:
        if match := pattern.search(text):
            return _EnvFinding(
                f"a test tried to reach the network ({what}): the sandbox has no network; mock it",
                _line_of(text, match),
                "network",
            )
    return None


def _command_not_found(command: str) -> _EnvFinding:
    return _EnvFinding(
        f"command '{command}' not found in the sandbox (exit 127): install it or fix the stage "
        "command",
        f"{command}: command not found",
    )


# An environment's own message fits on a line far shorter than this; a longer line (a hostile
# answer's output, a minified file) is read only this far, so no pattern backtracks over it.
MAX_SCANNED_LINE = 2000


def _bounded_lines(text: str) -> str:
    lines = text.split("\n")
    if all(len(line) <= MAX_SCANNED_LINE for line in lines):
        return text
    return "\n".join(line[:MAX_SCANNED_LINE] for line in lines)


def _line_of(text: str, match: re.Match[str]) -> str:
    start = text.rfind("\n", 0, match.start()) + 1
    end = text.find("\n", match.end())
    return text[start : end if end >= 0 else len(text)].strip().removeprefix("E").strip()


def _env_failure(
    stage: StageResult, known: frozenset[str], own: OwnPackage | None = None
) -> tuple[_EnvFinding, str] | None:
    """What in the job's own output says the environment failed, and where."""
    failures = read_failures(stage)
    evidence: list[tuple[str, str]] = [
        (f.where, f"{f.exception_type or ''}: {f.message}")
        for f in failures.collection + failures.tests
    ]
    if stage.report is None and stage.diagnostics:
        evidence = [(stage.name, stage.stderr)]  # the tool ran; only its own crash counts
    elif failures.text:
        evidence.append((f"stage '{stage.name}'", _scannable(failures.text)))
    for where, text in evidence:
        if finding := _env_in_text(text, known, own):
            return finding, where
    if stage.exit_code == 127:
        command = stage.cmd.split()[0] if stage.cmd.split() else stage.name
        return _command_not_found(command), f"stage '{stage.name}'"
    return None


def _env(finding: _EnvFinding, where: str) -> Classification:
    return Classification(
        error_class=ErrorClass.ENV_FAILURE,
        env_cause=finding.cause,
        primary=_one_line(f"{where}: {finding.evidence}"),
    )


# --- the code: mechanical or logic --------------------------------------------------------------

_ALWAYS_MECHANICAL = frozenset(
    {
        "SyntaxError",
        "IndentationError",
        "TabError",
        "NameError",
        "UnboundLocalError",
        "CompileError",  # a Go package that does not build (engine/verify/go_report.py)
        "ReferenceError",  # JavaScript's NameError
    }
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


def _is_mechanical(failure: StageFailure, known: frozenset[str]) -> bool:
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
    if _JS_LOCAL_MODULE.search(message):  # a require/import of the project's own file
        return True
    return bool(_FIXTURE_NOT_FOUND.search(message))


_STOPPED_AT_LIMIT = "TestTimeout"  # the plugin's exception for a test stopped at its limit


def _stopped_at_limit(failures: Sequence[StageFailure]) -> bool:
    """Every failing test was stopped by its time limit: the verification timed out; the
    packet names each as a timeout too."""
    return bool(failures) and all(f.short_type == _STOPPED_AT_LIMIT for f in failures)


def _names_a_failure(report: TestReport) -> bool:
    """The report names a failing test or a collection error."""
    return bool(report.collection_errors) or any(
        t.outcome in {"failed", "error"} for t in report.tests
    )


def _code_failure(failure: StageFailure, known: frozenset[str]) -> Classification:
    error_class = ErrorClass.MECHANICAL if _is_mechanical(failure, known) else ErrorClass.LOGIC
    return Classification(
        error_class=error_class, primary=_one_line(f"{failure.where}: {failure.headline}")
    )


def _collection_failure(failure: StageFailure, known: frozenset[str]) -> Classification:
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
    after_baseline: bool = False,
    tmpfs_mb: int | None = None,
    python: str | None = None,
    project: str | None = None,
) -> Classification:
    """The root failure of one verifier run, most fundamental cause first.

    `project_modules` and `touched_modules` (modules of the files the last edit changed) tell a
    missing third-party module (env_failure) from a broken import of the project (mechanical).

    `after_baseline`: the tree is a candidate's and the run's baseline passed the same
    environment checks. A full disk or a network attempt that the job's own output shows is
    then the candidate's doing (`SANDBOX_LIMIT`, its primary line the model's to read; the
    disk's size is `tmpfs_mb`), never an environment failure that would end the run: model
    code could otherwise end any run. What the sandbox itself failed at
    (`infrastructure_error`, raised outside the job) stays an environment failure.

    Without `after_baseline` no edit has been made: a test that cannot import one of
    `project_modules` itself (not a submodule of it) is the dev setup's failure, an
    environment failure whose cause names the fix with `python` and `project` (host paths).
    """
    known = project_modules | touched_modules | _PROJECT_ALWAYS
    own = None if after_baseline else OwnPackage(project_modules, python, project)
    failed = [s for s in stages if stage_failed(s)]
    for stage in failed:
        if stage.infrastructure_error:
            cause = (
                stage.infrastructure_error  # the project's own link: the line says what to do
                if stage.infrastructure_error.startswith(REFUSED_LINK)
                else f"the sandbox itself failed: {stage.infrastructure_error}: "
                "run `fixloop-tui doctor`"
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
        if env := _env_failure(stage, known, own):
            finding, where = env
            if after_baseline and finding.kind in _YOURS:
                size = f" ({tmpfs_mb} MiB tmpfs)" if tmpfs_mb else ""
                yours = _YOURS[finding.kind].format(size=size)
                return Classification(
                    error_class=ErrorClass.SANDBOX_LIMIT,
                    primary=_one_line(f"{yours}: {where}: {finding.evidence}"),
                )
            return _env(finding, where)

    code_stages = [s for s in failed if s.kind not in _LINT_KINDS]
    found = [(s, read_failures(s)) for s in code_stages]
    for _, failures in found:
        if failures.collection:
            return _collection_failure(failures.collection[0], known)
    for stage, failures in found:
        if failures.no_tests and not failures.tests:
            exit_note = f" (exit {stage.exit_code})" if stage.exit_code else ""
            primary = f"stage '{stage.name}' collected no tests{exit_note}"
            return Classification(error_class=ErrorClass.NO_TESTS, primary=primary)
    failing = [f for _, failures in found for f in failures.tests]
    if _stopped_at_limit(failing):
        primary = f"{failing[0].where}: {failing[0].headline}"
        return Classification(error_class=ErrorClass.TIMEOUT, primary=_one_line(primary))
    for stage in code_stages:  # out of time with nothing failing but the tests not run
        report = stage.report
        if report is not None and report.stopped and not _names_a_failure(report):
            return Classification(error_class=ErrorClass.TIMEOUT, primary=_one_line(report.stopped))
    if failing:
        return _code_failure(failing[0], known)
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
        detail = first_line(stage.excerpt or stage.stdout or stage.stderr)
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
    failed = [s for s in stages if stage_failed(s)]
    cls = classification.error_class
    stage_wide = {ErrorClass.ENV_FAILURE, ErrorClass.OOM}
    if cls in stage_wide or (cls is ErrorClass.TIMEOUT and any(s.timed_out for s in failed)):
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
    every = [read_failures(s) for s in failed if s.kind not in _LINT_KINDS]
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
