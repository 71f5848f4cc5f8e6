"""Go and JavaScript projects end to end, with the real toolchains in the real sandbox:
`fixloop-tui verify` on examples/gostats (go test -json) and examples/jsstats (Jest --json)
as a user's checkout reads a failing test's name, file:line and expected/actual; a fixed
tree is ok; a skip added to a pinned test file is suspicious; a compile error is
mechanical. Then `run --headless` with the scripted model repairs each to ok in one commit,
and a badly formatted Go edit is formatted by `gofmt -w` in its own commit."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import git
import pytest

from tests.e2e.test_headless import assert_trail_agrees, branch_commits, fixloop
from tests.model_server import ScriptedModelServer, reply
from tests.projects import answer
from tests.toolchain_projects import GOSTATS, JSSTATS, example_checkout

REPO = Path(__file__).parents[2]
GVISOR = ("--sandbox", "gvisor")

pytestmark = [pytest.mark.sandbox, pytest.mark.usefixtures("needs_gvisor")]

GO_FIXES = (
    {
        "path": "stats.go",
        "search": "return float64(total / len(found))",
        "replace": "return float64(total) / float64(len(found))",
    },
    {
        "path": "stats.go",
        "search": "if len(top) > n-1 {\n\t\ttop = top[:n-1]",
        "replace": "if len(top) > n {\n\t\ttop = top[:n]",
    },
)
JS_FIXES = (
    {
        "path": "src/stats.js",
        "search": "return Math.floor(total / found.length);",
        "replace": "return total / found.length;",
    },
    {"path": "src/stats.js", "search": "ranked.slice(0, n - 1)", "replace": "ranked.slice(0, n)"},
)


def verify(root: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, "-m", "tui.cli", "verify", str(root), "--json", *GVISOR, *extra],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={"PATH": "/usr/bin:/bin", "HOME": str(root.parent)},
        timeout=300,
        check=False,
    )
    assert done.stdout.strip(), done.stderr
    return done.returncode, json.loads(done.stdout)


def edit(root: Path, *edits: dict[str, str]) -> None:
    for change in edits:
        path = root / change["path"]
        text = path.read_text()
        assert change["search"] in text, change
        path.write_text(text.replace(change["search"], change["replace"], 1))


def failure(result: dict[str, Any], name: str) -> dict[str, Any]:
    return next(f for f in result["packet"]["failures"] if name in f["test"])


# --- Go ----------------------------------------------------------------------------------------


@pytest.fixture
def go_project(tmp_path: Path) -> Path:
    return example_checkout(GOSTATS, tmp_path)


def test_a_failing_go_test_is_read_with_its_line_and_got_want(go_project: Path) -> None:
    code, result = verify(go_project)
    assert code == 1, result
    assert result["status"] == "failing"
    assert result["error_class"] == "logic"
    assert (result["tests"]["collected"], result["tests"]["passed"]) == (5, 3)
    mean = failure(result, "TestMeanWordLength")
    assert (mean["file"], mean["line"]) == ("stats_test.go", 22)
    assert (mean["expected"], mean["actual"]) == ("2.5", "2")
    assert "MeanWordLength() = 2, want 2.5" in result["packet_text"]


def test_a_fixed_go_module_is_ok(go_project: Path) -> None:
    edit(go_project, *GO_FIXES)
    code, result = verify(go_project)
    assert (code, result["status"]) == (0, "ok"), result["packet_text"]
    assert result["tests"]["passed"] == 5


def test_a_go_skip_added_to_a_pinned_test_is_suspicious(go_project: Path) -> None:
    edit(go_project, GO_FIXES[0])  # TopWords still fails: skip its test instead
    edit(
        go_project,
        {
            "path": "stats_test.go",
            "search": "func TestTopWords(t *testing.T) {",
            "replace": 'func TestTopWords(t *testing.T) {\n\tt.Skip("later")',
        },
    )
    code, result = verify(go_project)
    assert result["status"] == "suspicious_pass", result
    assert code == 4
    assert any("stats_test.go" in reason for reason in result["reasons"]), result["reasons"]


def test_verify_of_a_go_module_leaves_the_seed_the_next_verification_starts_from(
    go_project: Path,
) -> None:
    seeds = go_project.parent / ".cache" / "fixloop" / "go-build"  # HOME is the parent
    code, first = verify(go_project)
    assert (code, first["tests"]["passed"]) == (1, 3), first
    assert [seed.name for seed in seeds.glob("*/seed.tar")] == ["seed.tar"]
    code, again = verify(go_project)
    assert (code, again["tests"]["passed"]) == (1, 3), again


def test_a_go_compile_error_is_mechanical(go_project: Path) -> None:
    edit(
        go_project,
        {
            "path": "stats.go",
            "search": "return len(Words(text))",
            "replace": "return len(Wordz(text))",
        },
    )
    code, result = verify(go_project)
    assert code == 1
    assert result["error_class"] == "mechanical", result["packet_text"]
    assert "stats.go:23" in result["packet_text"]
    assert "Wordz" in result["packet_text"]


# --- JavaScript (Jest) ---------------------------------------------------------------------------


@pytest.fixture
def js_project(tmp_path: Path) -> Path:
    return example_checkout(JSSTATS, tmp_path)


def test_a_failing_jest_test_is_read_with_its_line_and_expected_received(js_project: Path) -> None:
    code, result = verify(js_project)
    assert code == 1, result
    assert result["error_class"] == "logic"
    assert (result["tests"]["collected"], result["tests"]["passed"]) == (5, 3)
    mean = failure(result, "meanWordLength is the mean")
    assert (mean["file"], mean["line"]) == ("__tests__/stats.test.js", 14)
    assert (mean["expected"], mean["actual"]) == ("2.5", "2")


def test_a_fixed_js_package_is_ok(js_project: Path) -> None:
    edit(js_project, *JS_FIXES)
    code, result = verify(js_project)
    assert (code, result["status"]) == (0, "ok"), result["packet_text"]


def test_a_jest_skip_added_to_a_pinned_test_is_suspicious(js_project: Path) -> None:
    edit(js_project, JS_FIXES[0])
    edit(
        js_project,
        {
            "path": "__tests__/stats.test.js",
            "search": 'test("topWords ranks by count"',
            "replace": 'test.skip("topWords ranks by count"',
        },
    )
    code, result = verify(js_project)
    assert (code, result["status"]) == (4, "suspicious_pass"), result


def test_a_js_syntax_error_is_mechanical(js_project: Path) -> None:
    edit(
        js_project,
        {
            "path": "src/stats.js",
            "search": "function wordCount(text) {",
            "replace": "function wordCount(text) {{",
        },
    )
    code, result = verify(js_project)
    assert code == 1
    assert result["error_class"] == "mechanical", result["packet_text"]
    assert "src/stats.js" in result["packet_text"]


# --- the loop ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("example", "fixes"), [(GOSTATS, GO_FIXES), (JSSTATS, JS_FIXES)])
def test_the_loop_repairs_the_example_in_one_commit(
    model_server: ScriptedModelServer,
    tmp_path: Path,
    example: Path,
    fixes: tuple[dict[str, str], ...],
) -> None:
    root = example_checkout(example, tmp_path)
    model_server.script(reply(answer("true division; n words, not n - 1", *fixes)))
    done, result = fixloop(model_server, root)
    assert done.returncode == 0, done.stderr
    assert result["status"] == "ok"
    assert model_server.count == 1
    commits = branch_commits(root, result)
    assert commits[0] == "fixloop[iter 1/4]: true division; n words, not n - 1"
    assert len(result["iterations"]) == 1
    assert "stage tests: " in done.stderr
    assert_trail_agrees(result)


def test_a_badly_formatted_go_edit_is_formatted_in_its_own_commit(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    root = example_checkout(GOSTATS, tmp_path)
    ugly = (
        {**GO_FIXES[0], "replace": "return    float64(total)/float64(len( found ))"},
        GO_FIXES[1],
    )
    model_server.script(reply(answer("fix both", *ugly)))
    done, result = fixloop(model_server, root, "--fix-cmd", "gofmt -w .")
    assert done.returncode == 0, done.stderr
    assert result["status"] == "ok"
    assert model_server.count == 1  # no call spent on style
    messages = [
        c.message.strip() for c in git.Repo(root).iter_commits(result["branch"], max_count=3)
    ]
    assert messages[:2] == ["fixloop[iter 1/4]: formatted", "fixloop[iter 1/4]: fix both"]
    formatted = git.Repo(root).commit(result["branch"]).tree / "stats.go"
    assert "return float64(total) / float64(len(found))" in formatted.data_stream.read().decode()


# --- any runner that writes JUnit XML ------------------------------------------------------------

NODE_JUNIT = REPO / "tests" / "fixtures" / "projects" / "node_junit"
NODE_TEST = (
    "mkdir -p build && node --test --test-reporter=junit --test-reporter-destination=build/r.xml"
)


def test_a_junit_report_written_by_the_runner_is_read_like_any_other(tmp_path: Path) -> None:
    """Node's own test runner writes JUnit XML into the workspace copy; it comes back and is
    the stage's report (test_report), with its skip counted."""
    root = example_checkout(NODE_JUNIT, tmp_path)
    code, result = verify(root, "--test-cmd", NODE_TEST, "--test-report", "build/*.xml")
    assert code == 1, result
    tests = result["tests"]
    assert (tests["collected"], tests["passed"], tests["failed"], tests["skipped"]) == (3, 1, 1, 1)
    mean = failure(result, "mean is exact")
    assert mean["file"] == "test/math.test.js"
    assert "2 !== 2.5" in result["packet_text"]
    assert not (root / "build").exists()  # the report stayed a value, never written here
    _, fixed = verify(
        root, "--test-cmd", NODE_TEST.replace("build/", "out/"), "--test-report", "build/*.xml"
    )
    assert fixed["status"] != "ok"  # no report where it was said to be: never a pass
