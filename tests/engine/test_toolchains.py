"""Go and JS test runners: which command is which runner, what it is asked for, what it gets
in the sandbox, and which command a project implies when none is configured."""

from __future__ import annotations

import json
from pathlib import Path

import git
import pytest

from engine.project.detect import GO_TEST_CMD, JEST_TEST_CMD, VITEST_TEST_CMD, detected_test_cmd
from engine.project.settings import load_settings
from engine.verify.execute import parse_stage, stage_argv
from engine.verify.junit_report import parse_junit
from engine.verify.results import StageKind
from engine.verify.stages import Stage, kind_of
from engine.verify.toolchains import (
    GO_MODCACHE_MOUNT,
    NODE_MODULES_MOUNT,
    TOOLCHAIN_PIDS,
    go_module_cache,
    runner_of,
    toolchain_env,
    toolchain_limits,
    toolchain_links,
    toolchain_mounts,
    toolchain_of,
    user_module_cache,
)
from engine.verify.verdict import pass_doubts
from sandbox import ExecResult, FileChange, Limits
from sandbox.errors import MountRefused


@pytest.mark.parametrize(
    ("cmd", "runner"),
    [
        ("python -m pytest -q", "pytest"),
        ("go test ./...", "go"),
        ("go test -run TestX ./pkg/...", "go"),
        ("node_modules/.bin/jest --ci", "jest"),
        ("npx jest", "jest"),
        ("node_modules/.bin/vitest run", "vitest"),
        ("go vet ./...", None),
        ("npm test", None),
        ("make test", None),
    ],
)
def test_the_runner_is_read_from_the_command(cmd: str, runner: str | None) -> None:
    assert runner_of(cmd) == runner


@pytest.mark.parametrize(
    ("cmd", "argv"),
    [
        ("go test ./...", ["go", "test", "-json", "./..."]),
        ("go test -json ./...", ["go", "test", "-json", "./..."]),
        (
            "node_modules/.bin/jest --ci",
            ["node_modules/.bin/jest", "--ci", "--json", "--testLocationInResults"],
        ),
        ("node_modules/.bin/vitest run", ["node_modules/.bin/vitest", "run", "--reporter=json"]),
        (
            "node_modules/.bin/vitest run --reporter=junit",
            ["node_modules/.bin/vitest", "run", "--reporter=junit"],
        ),
        ("go test ./... && echo done", ["sh", "-c", "go test ./... && echo done"]),
    ],
)
def test_each_runner_is_asked_for_its_structured_report(cmd: str, argv: list[str]) -> None:
    assert stage_argv(Stage(name="tests", kind=StageKind.TESTS, cmd=cmd)) == argv


@pytest.mark.parametrize(
    ("cmd", "kind"),
    [
        ("go test ./...", StageKind.TESTS),
        ("node_modules/.bin/jest", StageKind.TESTS),
        ("gofmt -l .", StageKind.FORMAT),
        ("npx prettier --check .", StageKind.FORMAT),
        ("go vet ./...", StageKind.LINT),
        ("node_modules/.bin/eslint .", StageKind.LINT),
        ("npx tsc --noEmit", StageKind.TYPES),
        ("make check", StageKind.OTHER),
    ],
)
def test_go_and_js_tools_have_their_stage_kind(cmd: str, kind: StageKind) -> None:
    assert kind_of(cmd, StageKind.OTHER) is kind


@pytest.mark.parametrize(
    ("cmd", "toolchain"),
    [
        ("go test ./...", "go"),
        ("go vet ./...", "go"),
        ("/usr/bin/go test", "go"),
        ("node --test", "node"),
        ("npm test", "node"),
        ("node_modules/.bin/jest --ci", "node"),
        ("python -m pytest", None),
        ("gofmt -l .", None),
        ("make test", None),
    ],
)
def test_the_toolchain_is_read_from_the_program(cmd: str, toolchain: str | None) -> None:
    assert toolchain_of(cmd) == toolchain


def test_go_never_downloads_and_caches_on_tmpfs() -> None:
    env = toolchain_env("go", {})
    assert env["GOPROXY"] == "off"
    assert env["GOCACHE"].startswith("/tmp/")
    assert env["GOMODCACHE"].startswith("/tmp/")
    mounted = toolchain_env("go", {GO_MODCACHE_MOUNT: Path("/x")})
    assert mounted["GOMODCACHE"] == GO_MODCACHE_MOUNT


def test_the_host_module_cache_is_found_where_go_keeps_it(tmp_path: Path) -> None:
    cache = tmp_path / "gopath" / "pkg" / "mod"
    cache.mkdir(parents=True)
    assert go_module_cache({"GOPATH": str(tmp_path / "gopath")}) == cache.resolve()
    assert go_module_cache({"GOMODCACHE": str(cache)}) == cache.resolve()
    assert go_module_cache({"GOMODCACHE": str(tmp_path / "missing")}) is None


def test_node_modules_is_mounted_and_linked_not_copied(tmp_path: Path) -> None:
    assert toolchain_mounts("node", tmp_path) == {}  # not installed: the runner will say so
    (tmp_path / "node_modules").mkdir()
    mounts = toolchain_mounts("node", tmp_path)
    assert mounts == {NODE_MODULES_MOUNT: (tmp_path / "node_modules").resolve()}
    assert toolchain_links(mounts) == {"node_modules": NODE_MODULES_MOUNT}
    assert toolchain_mounts(None, tmp_path) == {}
    assert toolchain_links({}) == {}


def linked_node_modules(project: Path, target: Path, *, committed: bool) -> None:
    """A git project whose `node_modules` is a link to `target`, committed or the person's
    own (ignored, as after installing into a shared directory)."""
    project.mkdir()
    (project / "node_modules").symlink_to(target)
    (project / ".gitignore").write_text("" if committed else "node_modules\n")
    repo = git.Repo.init(project)
    repo.git.add("-A")
    repo.index.commit("a package")


def test_a_committed_node_modules_leading_out_of_the_project_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    linked_node_modules(tmp_path / "project", outside, committed=True)
    with pytest.raises(MountRefused) as raised:
        toolchain_mounts("node", tmp_path / "project")
    assert str(raised.value) == (
        f"node_modules resolves to {outside}, outside the project, and git tracks "
        "node_modules: fixloop mounts only the project's own node_modules; remove the "
        "committed link and run `npm ci`"
    )


def test_node_modules_leading_to_the_host_root_is_never_mounted(tmp_path: Path) -> None:
    linked_node_modules(tmp_path / "project", Path("/"), committed=False)
    with pytest.raises(MountRefused, match=r"node_modules .* is the root of the host"):
        toolchain_mounts("node", tmp_path / "project")


def test_the_persons_own_node_modules_link_is_mounted(tmp_path: Path) -> None:
    shared = tmp_path / "shared" / "node_modules"
    shared.mkdir(parents=True)
    linked_node_modules(tmp_path / "project", shared, committed=False)
    assert toolchain_mounts("node", tmp_path / "project") == {NODE_MODULES_MOUNT: shared}


def test_a_go_module_cache_inside_the_project_is_refused(tmp_path: Path) -> None:
    cache = tmp_path / "project" / "cache"
    cache.mkdir(parents=True)
    with pytest.raises(MountRefused, match=r"Go's module cache .* is inside the project"):
        user_module_cache(tmp_path / "project", {"GOMODCACHE": str(cache)})


def test_toolchains_get_room_for_their_threads_and_the_address_space_they_reserve() -> None:
    base = Limits()
    assert toolchain_limits(None, base) == base
    go = toolchain_limits("go", base)
    assert go.pids == TOOLCHAIN_PIDS
    assert go.address_space_mb is not None
    jest = toolchain_limits("node", base)
    assert jest.pids == TOOLCHAIN_PIDS
    assert jest.address_space_mb is not None
    assert jest.address_space_mb > base.memory_mb
    assert jest.memory_mb == base.memory_mb  # what it may use does not change


# --- detection --------------------------------------------------------------------------------


def _package(root: Path, **fields: object) -> None:
    (root / "package.json").write_text(json.dumps({"name": "p", **fields}))


def test_a_go_module_is_tested_with_go_test(tmp_path: Path) -> None:
    (tmp_path / "go.mod").write_text("module example.com/x\n")
    assert detected_test_cmd(tmp_path) == GO_TEST_CMD


def test_a_package_is_tested_with_the_runner_it_depends_on(tmp_path: Path) -> None:
    _package(tmp_path, devDependencies={"jest": "29.7.0"})
    assert detected_test_cmd(tmp_path) == JEST_TEST_CMD
    _package(tmp_path, devDependencies={"vitest": "1.6.0"})
    assert detected_test_cmd(tmp_path) == VITEST_TEST_CMD
    _package(tmp_path, scripts={"test": "jest --coverage"})
    assert detected_test_cmd(tmp_path) == JEST_TEST_CMD
    _package(tmp_path, scripts={"test": "mocha"})
    assert detected_test_cmd(tmp_path) is None


@pytest.mark.parametrize("content", ["{not json", "[]", ""])
def test_a_broken_package_json_implies_nothing(tmp_path: Path, content: str) -> None:
    (tmp_path / "package.json").write_text(content)
    assert detected_test_cmd(tmp_path) is None


def test_a_python_project_keeps_pytest(tmp_path: Path) -> None:
    assert load_settings(tmp_path, {}, environ={}, user_config=tmp_path / "none").test_cmd is None


def test_the_detected_command_sits_under_what_the_person_configured(tmp_path: Path) -> None:
    (tmp_path / "go.mod").write_text("module example.com/x\n")
    user = tmp_path / "user.toml"
    user.write_text('test_cmd = "python -m pytest -x"\n')
    assert load_settings(tmp_path, {}, environ={}, user_config=user).test_cmd == GO_TEST_CMD
    (tmp_path / "pyproject.toml").write_text('[tool.fixloop]\ntest_cmd = "go test -v ./..."\n')
    settings = load_settings(tmp_path, {}, environ={}, user_config=user)
    assert settings.test_cmd == "go test -v ./..."
    flagged = load_settings(tmp_path, {"test_cmd": "go test ./a"}, environ={}, user_config=user)
    assert flagged.test_cmd == "go test ./a"


# --- JUnit XML files a test command writes ------------------------------------------------------

JUNIT = Path(__file__).parents[1] / "fixtures" / "captured" / "runners" / "junit"


def test_the_junit_files_a_stage_wrote_are_its_report_merged() -> None:
    stage = Stage(name="tests", kind=StageKind.TESTS, cmd="make test", report="out/*.xml")
    files = sorted(JUNIT.glob("*.xml"))[:2]
    result = ExecResult(
        exit_code=1,
        stdout="",
        stderr="",
        duration_ms=5,
        backend="gvisor",
        workdir="/fixloop/work",
        changes=[FileChange(path=f"out/{path.name}", content=path.read_bytes()) for path in files],
    )
    merged = parse_stage(stage, result, "nonce:").report
    singles = [parse_junit(path.read_text()) for path in files]
    assert merged is not None
    assert all(single is not None for single in singles)
    assert merged.counts.collected == sum(s.counts.collected for s in singles if s)
    assert len(merged.tests) == sum(len(s.tests) for s in singles if s)
    no_files = parse_stage(stage, result.model_copy(update={"changes": []}), "nonce:")
    assert no_files.report is None
    passed = parse_stage(stage, result.model_copy(update={"changes": [], "exit_code": 0}), "n:")
    doubts = pass_doubts([passed])
    assert "stage 'tests' gave no test report" in doubts[0]  # never an honest pass
