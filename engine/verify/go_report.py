"""`go test -json` output as a `TestReport`: counts, every test's id, and what each failing test,
panic and build failure says, with project-relative files. Pure: text in, report out.

Test ids are `<import path>::<TestName>` (a subtest: `<import path>::TestName/case`). A test
with subtests is a group, not a test, unless it fails on its own. Build failures (Go 1.19 prints
them as plain text on stderr, newer Go as `build-output` events) are collection errors, so the
text given should be stdout and stderr together. `exitstatus` follows pytest's numbers: 0 all
passed, 1 tests failed, 2 a package did not build, 5 no test ran.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from engine.verify.go_failures import FRAMEWORK, STACK_CALL, STACK_FILE, go_case
from engine.verify.parsers import relative, strip_ansi
from engine.verify.results import CollectionError, Frame, TestCase, TestCounts, TestReport

_MAX_OUTPUT_LINES = 200
_MAX_ERRORS = 50
_MAX_DEPTH = 32  # subtest levels read as parents
_BUILD_HEADER = re.compile(r"^# (\S+)")
_BUILD_FAILED = re.compile(r"^FAIL\s+(\S+)\s+\[(?:build|setup) failed\]")
_COMPILE_ERROR = re.compile(r"^(?P<file>[^\s:][^:]*\.go):(?P<line>\d+)(?::\d+)?: (?P<msg>.+)$")
_MODULE_LINE = re.compile(r"^\s*module\s+\"?([^\s\"]+)", re.MULTILINE)


def go_module_path(go_mod: str) -> str | None:
    """The module path declared by a go.mod's text."""
    match = _MODULE_LINE.search(go_mod)
    return match.group(1) if match else None


@dataclass
class _Test:
    package: str
    name: str
    outcome: str = "running"
    output: list[str] = field(default_factory=list)


@dataclass
class _Run:
    tests: dict[tuple[str, str], _Test] = field(default_factory=dict)
    failed_packages: set[str] = field(default_factory=set)
    package_output: dict[str, list[str]] = field(default_factory=dict)
    build_errors: dict[str, list[tuple[str, int, str]]] = field(default_factory=dict)
    build_failed: list[str] = field(default_factory=list)
    dirs: dict[str, str] = field(default_factory=dict)  # package -> project-relative dir
    events: int = 0

    def build_text(self, package: str, line: str, roots: list[str]) -> None:
        if match := _BUILD_FAILED.match(line):
            if match.group(1) not in self.build_failed:
                self.build_failed.append(match.group(1))
        elif match := _COMPILE_ERROR.match(line):
            path = relative(match["file"], roots).removeprefix("./")
            errors = self.build_errors.setdefault(package, [])
            if len(errors) < _MAX_ERRORS:
                errors.append((path, int(match["line"]), match["msg"]))
            if package:
                self.dirs.setdefault(package, path.rpartition("/")[0])


def _package(name: object) -> str:
    """`pkg [pkg.test]` (a test variant's import path) is `pkg`."""
    return str(name or "").split(" ", 1)[0]


def _read(text: str, roots: list[str]) -> _Run:
    run = _Run()
    building = ""  # the package of the last `# pkg` header in plain text
    for raw in strip_ansi(text).split("\n"):
        line = raw.rstrip("\r")
        event = _event(line)
        if event is None:
            if match := _BUILD_HEADER.match(line):
                building = _package(match.group(1))
            elif line.strip():
                run.build_text(building, line, roots)
            continue
        run.events += 1
        action = str(event.get("Action", ""))
        output = event.get("Output")
        output = output if isinstance(output, str) else ""
        if action in {"build-output", "build-fail"}:
            package = _package(event.get("ImportPath"))
            for piece in output.splitlines():
                if not _BUILD_HEADER.match(piece):
                    run.build_text(package, piece, roots)
            if action == "build-fail" and package not in run.build_failed:
                run.build_failed.append(package)
            continue
        package, name = _package(event.get("Package")), event.get("Test")
        if not isinstance(name, str) or not name:
            if action == "fail":
                run.failed_packages.add(package)
            elif action == "output":
                lines = run.package_output.setdefault(package, [])
                lines.extend(output.splitlines()[: _MAX_OUTPUT_LINES - len(lines)])
                for piece in output.splitlines():
                    if _BUILD_FAILED.match(piece):
                        run.build_text(package, piece, roots)
            continue
        test = run.tests.setdefault((package, name), _Test(package, name))
        if action in {"pass", "fail", "skip"}:
            test.outcome = {"pass": "passed", "fail": "failed", "skip": "skipped"}[action]
        elif action == "output" and len(test.output) < _MAX_OUTPUT_LINES:
            test.output.extend(output.splitlines())
    return run


def _event(line: str) -> dict[str, object] | None:
    if not line.startswith("{"):
        return None
    try:
        event = json.loads(line)
    except (json.JSONDecodeError, RecursionError):
        return None
    return event if isinstance(event, dict) and "Action" in event else None


def _module(run: _Run, module: str | None, roots: list[str]) -> str:
    """The module path: given, else read from a package whose dir a path showed, else the
    packages' longest common prefix (one package alone is taken as the module's root)."""
    if module:
        return module
    for test in run.tests.values():  # a stack names a package's function and its file
        for call, at in zip(test.output, test.output[1:], strict=False):
            if (file := STACK_FILE.match(at)) and (function := STACK_CALL.match(call)):
                path = relative(file["file"], roots)
                package = function["func"].rpartition("/")
                package_path = package[0] + "/" + package[2].split(".", 1)[0]
                if not path.startswith("/") and package[0]:
                    run.dirs.setdefault(package_path.lstrip("/"), path.rpartition("/")[0])
    for package, directory in run.dirs.items():
        if not directory:
            return package
        if package.endswith("/" + directory):
            return package[: -len(directory) - 1]
    packages = sorted({t.package for t in run.tests.values()} | run.failed_packages)
    if not packages:
        return ""
    try:
        return posixpath.commonpath(packages)
    except ValueError:  # not import paths
        return ""


def _directory(package: str, module: str) -> str:
    if package == module or not module:
        return ""
    return package.removeprefix(module + "/") if package.startswith(module + "/") else ""


def _ancestors(name: str) -> list[str]:
    """`A/b/c`'s possible parents: `A` and `A/b` (the first `_MAX_DEPTH`: the name is the
    runner's output, and a slash per character must not cost a slice per slash)."""
    cuts = [at.start() for _, at in zip(range(_MAX_DEPTH), re.finditer("/", name), strict=False)]
    return [name[:cut] for cut in cuts]


def parse_go_test(
    text: str, roots: Iterable[str] = (), *, module: str | None = None
) -> TestReport | None:
    """The report of `go test -json` (stdout, then stderr); None when it is not that output.

    `module` is the go.mod's module path (`go_module_path`), which turns a package's import
    path into its directory; without it the directory is inferred from the output."""
    roots = list(roots)
    run = _read(text, roots)
    if not run.events and not run.build_failed:
        return None
    module_path = _module(run, module, roots)
    # A subtest's name may hold slashes of its own (`t.Run("a/b")`): every prefix that ends
    # before a slash may be its parent.
    parents = {(t.package, a) for t in run.tests.values() for a in _ancestors(t.name)}
    failed_descendants = {
        (t.package, a)
        for t in run.tests.values()
        if t.outcome == "failed"
        for a in _ancestors(t.name)
    }
    nodeids: list[str] = []
    cases: list[TestCase] = []
    counts = {"passed": 0, "failed": 0, "skipped": 0, "errors": 0}
    for key, test in run.tests.items():
        outcome = test.outcome
        if outcome == "running":  # never ended: its package died (a panic, a timeout)
            outcome = "failed" if test.package in run.failed_packages else "skipped"
        if key in parents and (outcome != "failed" or key in failed_descendants):
            continue  # a group of subtests, not a test of its own
        nodeids.append(f"{test.package}::{test.name}")
        counts[outcome] += 1
        if outcome != "passed":
            directory = _directory(test.package, module_path)
            cases.append(
                go_case(
                    f"{test.package}::{test.name}",
                    test.name,
                    test.output,
                    directory,
                    roots,
                    outcome,
                )
            )
    errors = _collection_errors(run)
    failing_packages = {t.package for t in run.tests.values() if t.outcome == "failed"}
    for package in sorted(run.failed_packages - failing_packages - set(run.build_failed)):
        if any(t.package == package and t.outcome == "running" for t in run.tests.values()):
            continue
        counts["errors"] += 1
        lines = [x for x in run.package_output.get(package, []) if not FRAMEWORK.match(x)]
        message = "\n".join(lines[-20:]) or "the package's tests failed without a failing test"
        cases.append(TestCase(nodeid=package, outcome="error", exception_message=message))
    exitstatus = 2 if errors else 1 if counts["failed"] or counts["errors"] else 0
    if not nodeids and not errors and not counts["errors"]:
        exitstatus = 5
    return TestReport(
        exitstatus=exitstatus,
        counts=TestCounts(
            collected=len(nodeids),
            errors=counts["errors"] + len(errors),
            **{k: counts[k] for k in ("passed", "failed", "skipped")},
        ),
        nodeids=nodeids,
        tests=cases,
        collection_errors=errors,
    )


def _collection_errors(run: _Run) -> list[CollectionError]:
    errors = []
    packages = list(run.build_failed) or [p for p in run.build_errors if p]
    unowned = run.build_errors.get("", [])
    for package in packages:
        found = run.build_errors.get(package) or unowned
        first = found[0] if found else None
        text = "\n".join(f"{file}:{line}: {message}" for file, line, message in found)
        errors.append(
            CollectionError(
                nodeid=package,
                exception_type="CompileError",
                exception_message=first[2] if first else "the package did not build",
                frame=Frame(file=first[0], line=first[1]) if first else None,
                text=text[:4000],
            )
        )
    return errors
