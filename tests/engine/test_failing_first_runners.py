"""Failing tests first for `go test`, Jest and Vitest: each runner narrowed by its own filter, as
whole argv elements, exactly (real `go test` and Jest sessions on the host over projects built
here, their reports read by fixloop's parsers; the rules that need no runner, pure)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from engine.verify.execute import stage_argv
from engine.verify.focus import MAX_FOCUS_BYTES, narrowed_argv, narrowing, without_filtered
from engine.verify.go_report import parse_go_test
from engine.verify.js_report import parse_js_tests
from engine.verify.results import StageKind, StageResult, TestCase, TestCounts, TestReport
from engine.verify.stages import Stage
from tests.toolchain_projects import jest_modules, needs

GO = Stage(name="tests", kind=StageKind.TESTS, cmd="go test ./...")
JEST = Stage(name="tests", kind=StageKind.TESTS, cmd="node_modules/.bin/jest --ci")
VITEST = Stage(name="tests", kind=StageKind.TESTS, cmd="npx vitest run")

# Names built to break out of a filter: a regexp alternation that matches everything, quotes,
# a command substitution.
INJECTED = 'x$|.*"; touch MARKER; $(touch MARKER)'
GO_PROJECT = {
    "go.mod": "module example.com/narrow\n\ngo 1.19\n",
    "narrow_test.go": (
        'package narrow\n\nimport "testing"\n\n'
        "func TestInject(t *testing.T) {\n"
        f'\tt.Run(`{INJECTED}/deeper`, func(t *testing.T) {{ t.Fatal("injected") }})\n'
        '\tt.Run("other", func(t *testing.T) {})\n'
        '\tt.Run("x", func(t *testing.T) {})\n'
        "}\n\n"
        "func TestInjectTwo(t *testing.T) {\n"
        '\tt.Run("x", func(t *testing.T) { t.Fatal("two") })\n'
        "}\n\n"
        "func TestSentinel(t *testing.T) {}\n\n"
        "func TestInjectSentinel(t *testing.T) {}\n"
    ),
}
JS_PROJECT = {
    "package.json": '{"name": "narrow", "private": true}\n',
    "a.test.js": (
        f"test({json.dumps(INJECTED)}, () => {{ expect(1).toBe(2); }});\n"
        'test("x", () => {});\n'
        'describe("d", () => { test("t", () => { expect(1).toBe(2); }); });\n'
        'test("d t2", () => {});\n'
    ),
    # The same full name as a.test.js's failing `d › t`, passing in another file.
    "b.test.js": 'test("d t", () => {});\n',
}


def project(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).write_text(text)
    return root


def run(argv: list[str], root: Path, env: dict[str, str]) -> str:
    done = subprocess.run(
        argv, cwd=root, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    return done.stdout + "\n" + done.stderr


def result_of(stage: Stage, report: TestReport | None) -> StageResult:
    assert report is not None
    return StageResult(
        name=stage.name,
        kind=stage.kind,
        cmd=stage.cmd,
        exit_code=1,
        duration_ms=1,
        report=report,
    )


def failing(report: TestReport | None) -> list[str]:
    assert report is not None
    return [case.nodeid for case in report.tests if case.outcome == "failed"]


def test_go_narrows_to_its_failing_tests_and_a_name_built_as_a_regexp_runs_only_itself(
    tmp_path: Path,
) -> None:
    go = needs("go")
    root = project(tmp_path, GO_PROJECT)
    env = {
        "PATH": os.path.dirname(go) + ":/usr/bin:/bin",
        "HOME": str(tmp_path),
        "GOCACHE": os.environ.get("GOCACHE", str(Path.home() / ".cache" / "go-build")),
        "GOPATH": str(tmp_path / "gopath"),
        "GOFLAGS": "",
        "GOPROXY": "off",
        "GOTOOLCHAIN": "local",
    }
    whole = parse_go_test(run(stage_argv(GO), root, env), [str(root)])
    assert failing(whole) == [
        # A slash in a subtest's name: its parent is still a group, not a failing test.
        f"example.com/narrow::TestInject/{INJECTED.replace(' ', '_')}/deeper",
        "example.com/narrow::TestInjectTwo/x",
    ]
    plan = narrowing([GO], [result_of(GO, whole)])
    assert plan is not None
    focus = plan["tests"]
    assert focus is not None
    assert focus.carried_passed == 4
    argv = stage_argv(GO, focus)
    narrowed = parse_go_test(run(argv, root, env), [str(root)])
    assert narrowed is not None
    assert narrowed.nodeids == failing(whole)
    assert narrowed.counts.collected == 2
    assert not (root / "MARKER").exists()


def test_jest_narrows_to_its_failing_tests_and_files_and_reports_only_what_ran(
    tmp_path: Path,
) -> None:
    node = needs("node")
    root = project(tmp_path, JS_PROJECT)
    (root / "node_modules").symlink_to(jest_modules())
    env = {
        "PATH": os.path.dirname(node) + ":/usr/bin:/bin",
        "HOME": str(tmp_path),
        "CI": "true",
        "FORCE_COLOR": "0",
    }
    whole = parse_js_tests(run(stage_argv(JEST), root, env), [str(root)])
    assert failing(whole) == ["a.test.js::" + INJECTED, "a.test.js::d::t"]
    plan = narrowing([JEST], [result_of(JEST, whole)])
    assert plan is not None
    focus = plan["tests"]
    assert focus is not None
    assert focus.carried_passed == 3
    narrowed = parse_js_tests(run(stage_argv(JEST, focus), root, env), [str(root)])
    assert narrowed is not None
    # Jest lists the tests its name filter left out as pending; b.test.js did not run at all.
    assert narrowed.counts.skipped == 2
    read = without_filtered(narrowed, focus.tests)
    assert read.nodeids == failing(whole)
    assert (read.counts.collected, read.counts.failed, read.counts.skipped) == (2, 2, 0)
    assert not (root / "MARKER").exists()


def go_report(*tests: tuple[str, str]) -> TestReport:
    """A `go test` report of (id, outcome) pairs."""
    return TestReport(
        exitstatus=1,
        counts=TestCounts(
            collected=len(tests),
            passed=sum(outcome == "passed" for _, outcome in tests),
            failed=sum(outcome == "failed" for _, outcome in tests),
        ),
        nodeids=[nodeid for nodeid, _ in tests],
        tests=[TestCase(nodeid=n, outcome="failed") for n, o in tests if o == "failed"],
    )


def test_a_go_filter_that_would_also_run_a_passing_test_does_not_narrow() -> None:
    # TestA failed on its own; its subtest passed and would run under `-run=^TestA$`.
    parent = go_report(("m::TestA", "failed"), ("m::TestA/x", "passed"), ("m::TestB", "passed"))
    assert narrowing([GO], [result_of(GO, parent)]) is None
    # The same test name in another package passed: `-run` applies to every package.
    twins = go_report(("m/a::TestA", "failed"), ("m/b::TestA", "passed"), ("m::TestB", "passed"))
    assert narrowing([GO], [result_of(GO, twins)]) is None
    exact = go_report(("m/a::TestA", "failed"), ("m/b::TestAB", "passed"), ("m::TestB", "passed"))
    assert narrowing([GO], [result_of(GO, exact)]) is not None


@pytest.mark.parametrize(
    "cmd",
    [
        "sh -c 'go test ./...'",
        "go test ./... && echo done",
        "go test -run TestA ./...",
        "go test ./... -args -test.run=TestB",
    ],
)
def test_a_go_stage_run_by_a_shell_or_choosing_its_own_tests_runs_whole(cmd: str) -> None:
    stage = Stage(name="tests", kind=StageKind.TESTS, cmd=cmd)
    report = go_report(("m::TestA", "failed"), ("m::TestB", "passed"))
    assert narrowing([GO], [result_of(GO, report)]) is not None  # plain `go test` narrows
    assert narrowing([stage], [result_of(stage, report)]) is None


def test_a_test_name_with_a_control_character_does_not_narrow() -> None:
    plain = go_report(("m::TestA/a b", "failed"), ("m::TestB", "passed"))
    assert narrowing([GO], [result_of(GO, plain)]) is not None
    for name in ("m::TestA/a\x00b", "m::TestA/a\nb"):
        report = go_report((name, "failed"), ("m::TestB", "passed"))
        assert narrowing([GO], [result_of(GO, report)]) is None
    assert narrowed_argv("jest", ["jest"], ["a.test.js::x\ry"]) is None


def test_a_filter_longer_than_the_bound_once_escaped_does_not_narrow() -> None:
    dots = "." * (MAX_FOCUS_BYTES // 2 + 10)  # under the bound as a name, over it quoted
    assert narrowed_argv("go", ["go", "test", "./..."], [f"m::T{dots}"]) is None
    assert narrowed_argv("go", ["go", "test", "./..."], ["m::T.x"]) == [
        "go",
        "test",
        r"-run=^T\.x$",
        "./...",
    ]


def test_jest_and_vitest_filters_are_escaped_argv_elements_after_the_runner() -> None:
    tests = ["src/a.test.ts::suite (1)::adds $x", "src/b.test.ts::top"]
    assert narrowed_argv("jest", ["npx", "jest", "--ci"], tests) == [
        "npx",
        "jest",
        r"(?:^|/)(?:src\/a\.test\.ts|src\/b\.test\.ts)$",
        r"--testNamePattern=^(?:suite \(1\) adds \$x|top)$",
        "--ci",
    ]
    assert narrowed_argv("vitest", ["npx", "vitest", "run", "--reporter=json"], tests) == [
        "npx",
        "vitest",
        "run",
        "src/a.test.ts",
        "src/b.test.ts",
        r"--testNamePattern=(?:^| )(?:suite \(1\) adds \$x|top)$",
        "--reporter=json",
    ]
    # A subcommand that is not a run, a file out of the project, a file read as an option.
    assert narrowed_argv("vitest", ["vitest", "related", "x.ts"], tests) is None
    assert narrowed_argv("jest", ["jest"], ["../up.test.js::t"]) is None
    assert narrowed_argv("vitest", ["vitest", "run"], ["-x.test.js::t"]) is None


def test_the_tests_a_name_filter_left_out_are_not_counted_but_its_own_skips_are() -> None:
    report = TestReport(
        exitstatus=1,
        counts=TestCounts(collected=4, passed=1, failed=1, skipped=2),
        nodeids=["f::a", "f::b", "f::c", "f::d"],
        tests=[
            TestCase(nodeid="f::a", outcome="failed"),
            TestCase(nodeid="f::c", outcome="skipped"),
            TestCase(nodeid="f::d", outcome="skipped"),
        ],
    )
    read = without_filtered(report, ["f::a", "f::b", "f::d"])
    assert read.nodeids == ["f::a", "f::b", "f::d"]
    assert (read.counts.collected, read.counts.skipped) == (3, 1)
