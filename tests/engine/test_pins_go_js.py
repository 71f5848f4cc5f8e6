"""Honest green for Go and JS/TS (ARCHITECTURE.md, "Honest green"): their test files are pinned,
and added skips and focus (`.only`, which silently drops every other test) are found, on real
git repositories."""

from __future__ import annotations

from pathlib import Path

import git
import pytest

from engine.project.pins import (
    TestPins,
    added_skips,
    changed_tests,
    config_changes,
    is_test_file,
)
from engine.verify.results import StageKind, StageResult
from engine.verify.verdict import pass_doubts
from tests.engine.test_pins import commit_all, write

GO_TEST = """\
package bits

import "testing"

func TestBitcount(t *testing.T) {
\tif got := Bitcount(7); got != 3 {
\t\tt.Errorf("Bitcount(7) = %d, want 3", got)
\t}
}
"""

JS_TEST = """\
const { sum } = require("./sum");

describe("sum", () => {
  test("adds", () => {
    expect(sum(1, 2)).toBe(3);
  });
});
"""


@pytest.fixture
def polyglot(tmp_path: Path) -> git.Repo:
    root = tmp_path / "project"
    repo = git.Repo.init(root)
    write(
        root,
        {
            "go.mod": "module example.com/bits\n\ngo 1.19\n",
            "bits/bits.go": "package bits\n",
            "bits/bits_test.go": GO_TEST,
            "package.json": "{}\n",
            "src/sum.js": "module.exports = { sum: (a, b) => a + b };\n",
            "src/sum.test.js": JS_TEST,
            "node_modules/dep/index.test.js": "test('x', () => {});\n",
        },
    )
    commit_all(repo, "baseline")
    return repo


def root(repo: git.Repo) -> Path:
    assert repo.working_tree_dir is not None
    return Path(repo.working_tree_dir)


@pytest.mark.parametrize(
    "path",
    [
        "bits_test.go",
        "pkg/bits/bits_test.go",
        "src/sum.test.js",
        "src/sum.spec.ts",
        "App.test.tsx",
        "lib/x.spec.jsx",
        "a.test.mjs",
        "a.spec.cjs",
        "test.js",
        "__tests__/helpers.js",
        "src/__tests__/sum.ts",
        "src/__snapshots__/sum.test.js.snap",
    ],
)
def test_go_and_js_test_files_are_recognised(path: str) -> None:
    assert is_test_file(path)


@pytest.mark.parametrize(
    "path",
    [
        "bits.go",
        "bits_test.go.orig",
        "testdata/x_test.go",
        "vendor/github.com/x/y_test.go",
        "src/sum.js",
        "src/contest.js",
        "src/test.json",
        "src/sum.test.json",
        "src/sum.testing.js",
        "x.snap",
    ],
)
def test_other_go_and_js_files_are_not_tests(path: str) -> None:
    assert not is_test_file(path)


def test_go_and_js_tests_are_pinned_and_an_edit_is_seen(polyglot: git.Repo) -> None:
    pins = TestPins.from_commit(root(polyglot))
    assert set(pins.files) == {"bits/bits_test.go", "src/sum.test.js"}  # not node_modules
    (root(polyglot) / "src/sum.test.js").write_text(JS_TEST.replace("toBe(3)", "toBe(-1)"))
    assert [(c.path, c.change) for c in changed_tests(pins, root(polyglot))] == [
        ("src/sum.test.js", "modified")
    ]


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ('\tt.Skip("flaky")', "`t.Skip` skips the Go test"),
        ("\tt.SkipNow()", "`t.Skip` skips the Go test"),
        ('\ttb.Skipf("on %s", runtime.GOOS)', "`t.Skip` skips the Go test"),
    ],
)
def test_an_added_go_skip_is_found(polyglot: git.Repo, line: str, why: str) -> None:
    path = root(polyglot) / "bits/bits_test.go"
    path.write_text(GO_TEST.replace("{\n\tif got", "{\n" + line + "\n\tif got"))
    (found,) = added_skips(root(polyglot), "HEAD", root(polyglot))
    assert (found.file, found.line, found.text, found.why) == (
        "bits/bits_test.go",
        6,
        line.strip(),
        why,
    )


SKIP = "`.skip` skips the tests"
X = "`xit`/`xtest`/`xdescribe` skips the tests"
ONLY = "`.only` runs only the focused tests"
FOCUS = "`fit`/`fdescribe` runs only the focused tests"


@pytest.mark.parametrize(
    ("old", "new", "why"),
    [
        ('  test("adds"', '  test.skip("adds"', SKIP),
        ('  test("adds"', '  it.skip("adds"', SKIP),
        ('describe("sum"', 'describe.skip("sum"', SKIP),
        ('  test("adds"', '  test.skipIf(process.env.CI)("adds"', SKIP),
        ('  test("adds"', '  xit("adds"', X),
        ('  test("adds"', '  xtest("adds"', X),
        ('describe("sum"', 'xdescribe("sum"', X),
        ('  test("adds"', '  test.only("adds"', ONLY),
        ('  test("adds"', '  it.only("adds"', ONLY),
        ('describe("sum"', 'describe.only("sum"', ONLY),
        ('  test("adds"', '  test.concurrent.only("adds"', ONLY),
        ('  test("adds"', '  fit("adds"', FOCUS),
        ('describe("sum"', 'fdescribe("sum"', FOCUS),
    ],
)
def test_an_added_js_skip_or_focus_is_found(
    polyglot: git.Repo, old: str, new: str, why: str
) -> None:
    path = root(polyglot) / "src/sum.test.js"
    path.write_text(JS_TEST.replace(old, new))
    (found,) = added_skips(root(polyglot), "HEAD", root(polyglot))
    assert (found.file, found.why) == ("src/sum.test.js", why)
    stage = StageResult(
        name="tests", kind=StageKind.TESTS, cmd="npx jest", exit_code=0, duration_ms=1
    )
    reasons = pass_doubts([stage], added_skips=[found])
    assert f"at src/sum.test.js:{found.line} ({why})" in " ".join(reasons)


@pytest.mark.parametrize(
    "line",
    [
        '  // test.only("adds", () => {});',
        '  /* it.skip("adds") */',
        '  test.todo("adds big numbers");',
        "  const fitness = benefit(2);",
        "  const skip = options.skipped;",
    ],
)
def test_comments_todos_and_lookalikes_are_not_skips(polyglot: git.Repo, line: str) -> None:
    path = root(polyglot) / "src/sum.test.js"
    path.write_text(JS_TEST + line + "\n")
    assert added_skips(root(polyglot), "HEAD", root(polyglot)) == []


def test_a_skip_in_code_that_is_not_a_test_file_is_not_a_pin_matter(polyglot: git.Repo) -> None:
    path = root(polyglot) / "src/sum.js"
    path.write_text(path.read_text() + "// describe.only is documented in the README\n")
    (root(polyglot) / "src/helpers.js").write_text("export const run = () => test.only;\n")
    assert added_skips(root(polyglot), "HEAD", root(polyglot)) == []


def test_an_added_go_build_constraint_on_a_test_file_is_found(polyglot: git.Repo) -> None:
    path = root(polyglot) / "bits/bits_test.go"
    path.write_text("//go:build ignore\n\n" + GO_TEST)
    (found,) = added_skips(root(polyglot), "HEAD", root(polyglot))
    assert (found.line, found.text) == (1, "//go:build ignore")
    assert "out of `go test`" in found.why


PACKAGE_JSON = """\
{
  "name": "sum",
  "version": "1.0.0",
  "scripts": {
    "lint": "eslint ."
  }
}
"""


@pytest.mark.parametrize(
    ("path", "content"),
    [
        ("jest.config.js", "module.exports = {\n  testPathIgnorePatterns: ['sum'],\n};\n"),
        ("jest.config.ts", "export default { testMatch: ['**/none/**'] };\n"),
        ("vitest.config.ts", "export default { test: { exclude: ['src/**'] } };\n"),
        ("vite.config.mjs", "export default { test: { include: ['none/**'] } };\n"),
        (
            "package.json",
            PACKAGE_JSON.replace('"lint"', '"test": "jest -t nothing",\n    "lint"'),
        ),
        (
            "package.json",
            PACKAGE_JSON.replace('"scripts"', '"jest": { "roots": ["none"] },\n  "scripts"'),
        ),
    ],
)
def test_jest_and_vitest_selection_changes_are_found(
    polyglot: git.Repo, path: str, content: str
) -> None:
    write_root = root(polyglot)
    if path == "package.json":
        (write_root / path).write_text(PACKAGE_JSON)
        commit_all(polyglot, "a package.json")
    (write_root / path).write_text(content)
    found = config_changes(write_root, "HEAD", write_root)
    assert [f.file for f in found] == [path]
    assert found[0].why == "it changes which tests Jest or Vitest runs"


def test_other_package_json_changes_are_not_selection_changes(polyglot: git.Repo) -> None:
    (root(polyglot) / "package.json").write_text(PACKAGE_JSON)
    commit_all(polyglot, "a package.json")
    bumped = PACKAGE_JSON.replace('"1.0.0"', '"1.0.1"').replace("eslint .", "eslint src")
    (root(polyglot) / "package.json").write_text(bumped)
    assert config_changes(root(polyglot), "HEAD", root(polyglot)) == []
