"""The fix pass (`fix_cmd`) in the loop, without gVisor: a sandbox whose "formatter" rewrites
double spaces and sends the changed files back as `return_changes` does, over real git."""

from __future__ import annotations

import json
import re
from pathlib import Path

import git

from engine.project.workspace import Workspace
from engine.run.loop import Deps, FixLoop
from engine.run.outcome import RunConfig, RunResult
from engine.run.run_directory import RunDirectory
from engine.verify.execute import Verifier
from engine.verify.fix import FixRun, write_changes
from engine.verify.results import StageKind
from engine.verify.stages import Stage
from sandbox import ExecRequest, ExecResult, FileChange
from tests.engine.test_loop import (
    BROKEN,
    FIXED,
    RUN_ID,
    TEST,
    ScriptedGate,
    ScriptedModel,
    TreeSandbox,
    answer,
    events,
    project,
)

UGLY_FIX = "VALUE  =  2\n"  # FIXED, badly formatted
FIX_CMD = "ruff format ."
CHECK_CMD = "ruff format --check ."


def formatted(text: str) -> str:
    """Runs of spaces inside a line become one (indentation stays)."""
    return re.sub(r"(?<=\S) {2,}", " ", text)


class FormattingSandbox(TreeSandbox):
    """TreeSandbox's tests, plus a formatter (`ruff format .`: collapses runs of spaces in
    every .py file, sent back as changes; `fails` makes it exit 1) and its check."""

    def __init__(self, fails: bool = False) -> None:
        super().__init__()
        self.fails = fails
        self.fixes = 0

    async def run(self, request: ExecRequest) -> ExecResult:
        assert request.workdir is not None
        sources = sorted(request.workdir.rglob("*.py"))
        if request.argv[:3] == ["ruff", "format", "--check"]:
            ugly = [p for p in sources if formatted(p.read_text()) != p.read_text()]
            said = "".join(f"Would reformat: {p.relative_to(request.workdir)}\n" for p in ugly)
            return self.done(1 if ugly else 0, said)
        if request.argv[:2] == ["ruff", "format"]:
            assert request.return_changes
            self.fixes += 1
            if self.fails:
                return self.done(2, "error: Failed to parse app.py:1:1")
            changes = [
                FileChange(
                    path=p.relative_to(request.workdir).as_posix(),
                    content=formatted(p.read_text()).encode(),
                )
                for p in sources
                if formatted(p.read_text()) != p.read_text()
            ]
            return self.done(0, f"{len(changes)} files reformatted", changes)
        return await super().run(request)

    @staticmethod
    def done(code: int, stdout: str, changes: list[FileChange] | None = None) -> ExecResult:
        return ExecResult(
            exit_code=code,
            stdout=stdout,
            stderr="",
            duration_ms=5,
            backend="unsafe-local",
            workdir="/work",
            changes=changes,
        )


async def run_formatting(
    tmp_path: Path,
    model: ScriptedModel,
    sandbox: FormattingSandbox,
    *,
    test: str = TEST,
    check: bool = True,
    **config: object,
) -> RunResult:
    root = project(tmp_path, BROKEN)
    if test != TEST:
        (root / "tests" / "test_app.py").write_text(test)
        repo = git.Repo(root)
        repo.git.add(A=True)
        repo.index.commit("the test, as the project has it")
    stages = [Stage(name="test", kind=StageKind.TESTS, cmd="pytest -q")]
    if check:
        stages.insert(0, Stage(name="format", kind=StageKind.FORMAT, cmd=CHECK_CMD))
    fix = Stage(name="fix", kind=StageKind.FORMAT, cmd=FIX_CMD)
    deps = Deps(
        model=model,
        verifier=Verifier(sandbox, stages, fix=fix),
        workspace=Workspace.create(root, RUN_ID),
        gate=ScriptedGate(),
        run_dir=RunDirectory.create(root, RUN_ID),
        approval="step",
        versions={"fixloop-tui": "test"},
    )
    config = {"model": model.model, "no_progress_limit": 9, **config}
    return await FixLoop(RunConfig.model_validate(config), deps).run()


def branch_log(result: RunResult) -> list[str]:
    root = Path(result.run_dir).parents[2]
    with git.Repo(root) as repo:
        return [c.summary for c in repo.iter_commits(f"fixloop/{RUN_ID}", max_count=3)]


def branch_file(result: RunResult, path: str) -> str:
    root = Path(result.run_dir).parents[2]
    with git.Repo(root) as repo:
        return repo.git.show(f"fixloop/{RUN_ID}:{path}") + "\n"


async def test_a_badly_formatted_fix_ends_ok_with_a_formatted_commit_and_one_model_call(
    tmp_path: Path,
) -> None:
    model = ScriptedModel(answer(("app.py", UGLY_FIX)))
    result = await run_formatting(tmp_path, model, FormattingSandbox())
    assert (result.status.value, result.reason) == ("ok", "verified green on iteration 1")
    assert len(model.prompts) == 1
    assert branch_log(result) == [
        "fixloop[iter 1/4]: formatted",
        "fixloop[iter 1/4]: try",
        "baseline",
    ]
    assert branch_file(result, "app.py") == FIXED
    said = [e for e in events(result) if e["type"] == "Formatted"]
    assert [(e["n"], e["files"], e["commit"] is not None) for e in said] == [
        (0, [], False),
        (1, ["app.py"], True),
    ]
    trail = json.loads((Path(result.run_dir) / "iterations" / "01" / "format.json").read_text())
    assert trail["applied"] == ["app.py"]


async def test_the_formatted_commit_is_the_one_verified(tmp_path: Path) -> None:
    model = ScriptedModel(answer(("app.py", UGLY_FIX)))
    result = await run_formatting(tmp_path, model, FormattingSandbox())
    kinds = [e["type"] for e in events(result) if e.get("n") == 1]
    formatted_at = kinds.index("Formatted")
    assert "Committed" in kinds[:formatted_at]
    assert kinds.index("PacketReady") > formatted_at
    assert kinds[formatted_at + 1 :].count("StageStarted") == 2  # format check, tests


async def test_a_pinned_test_file_is_not_formatted_and_the_model_is_told(tmp_path: Path) -> None:
    ugly_test = TEST.replace("assert VALUE == 2", "assert VALUE  ==  2")
    model = ScriptedModel(answer(("app.py", "VALUE = 3\n")), answer(("app.py", FIXED)))
    result = await run_formatting(tmp_path, model, FormattingSandbox(), test=ugly_test, check=False)
    assert result.status.value == "ok"
    assert branch_file(result, "tests/test_app.py") == ugly_test
    said = [e for e in events(result) if e["type"] == "Formatted"]
    assert all(e["held_back"] == ["tests/test_app.py"] and not e["files"] for e in said)
    assert "tests/test_app.py" in model.prompt(2)
    assert "pinned" in model.prompt(2)


async def test_a_failing_fix_command_applies_nothing_and_is_a_failing_stage(
    tmp_path: Path,
) -> None:
    model = ScriptedModel(answer(("app.py", FIXED)), answer(("app.py", "VALUE = 2  # again\n")))
    result = await run_formatting(
        tmp_path,
        model,
        FormattingSandbox(fails=True),
        check=False,
        max_iterations=2,
        code_noop=False,  # the second answer adds only a comment: an edit only without it
    )
    assert result.status.value != "ok"
    assert "formatted" not in " ".join(branch_log(result))
    said = [e for e in events(result) if e["type"] == "Formatted"]
    assert said
    assert all(e["failed"] and not e["files"] for e in said)
    assert "fix" in model.prompt(2)
    assert "Failed to parse" in model.prompt(2)


async def test_candidates_are_formatted_before_they_are_verified(tmp_path: Path) -> None:
    model = ScriptedModel(answer(("app.py", UGLY_FIX)), answer(("app.py", "VALUE  =  3\n")))
    sandbox = FormattingSandbox()
    result = await run_formatting(tmp_path, model, sandbox, candidates=2)
    assert result.status.value == "ok"
    assert len(model.prompts) == 2  # one iteration's two candidates, nothing more
    assert branch_log(result)[0] == "fixloop[iter 1/4]: formatted"
    chosen = [e for e in events(result) if e["type"] == "CandidateVerified" and e["k"] == 1]
    assert chosen[0]["verdict"] == "ok"


def test_only_existing_files_are_rewritten_and_never_through_a_link(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "a.py").write_text("a  =  1\n")
    (root / "run.sh").write_text("echo\n")
    outside = tmp_path / "outside.txt"
    outside.write_text("host file\n")
    (root / "link.txt").symlink_to(outside)
    (root / "linked").symlink_to(tmp_path)
    changes = [
        FileChange(path="pkg/a.py", content=b"a = 1\n"),
        FileChange(path="run.sh", content=b"echo\n", executable=True),
        FileChange(path="link.txt", content=b"overwritten\n"),
        FileChange(path="linked/outside.txt", content=b"overwritten\n"),
        FileChange(path="pkg/new.py", content=b"created\n"),
        FileChange(path="pkg/a.py.orig", content=None),
        FileChange(path=".git/config", content=b"[core]\n"),
    ]
    written, refused = write_changes(root, changes)
    assert written == ["pkg/a.py", "run.sh"]
    assert refused == [
        "link.txt",
        "linked/outside.txt",
        "pkg/new.py",
        "pkg/a.py.orig",
        ".git/config",
    ]
    assert (root / "pkg" / "a.py").read_text() == "a = 1\n"
    assert (root / "run.sh").stat().st_mode & 0o100
    assert outside.read_text() == "host file\n"
    assert not (root / "pkg" / "new.py").exists()
    assert not (root / ".git").exists()


def test_the_note_on_held_back_files_names_five_and_counts_the_rest() -> None:
    fixtures = [f"tests/fixtures/case_{i}.json" for i in range(8)]
    [note] = FixRun.model_construct(held_back=fixtures).notes()
    assert note.endswith("tests/fixtures/case_4.json and 3 more.")
    assert "case_5" not in note
