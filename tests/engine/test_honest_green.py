"""Honest green, end to end: the real sandbox, real pytest, a real git baseline.

One test per guard of ARCHITECTURE.md, "Honest green": what passes is `ok` only when every
check holds.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import git
import pytest

from engine.feedback.tree import Baseline, Verification, examine_tree, rendered
from engine.project.settings import Settings
from engine.verify.baseline_tests import BaselineTests, check_baseline_tests
from engine.verify.execute import Verifier
from engine.verify.results import TestCase
from engine.verify.stages import configured_stages
from engine.verify.verdict import Verdict
from sandbox.gvisor import GvisorSandbox

PROJECTS = Path(__file__).parents[1] / "fixtures" / "projects"
TESTS = "tests/test_slugs.py"

pytestmark = pytest.mark.sandbox


def checkout(name: str, tmp_path: Path) -> Path:
    """A copy of a fixture project, committed as the baseline, readable by the sandbox."""
    root = tmp_path / name
    shutil.copytree(PROJECTS / name, root)
    repo = git.Repo.init(root)
    repo.git.add("-A")
    repo.index.commit("baseline")
    tmp_path.chmod(0o755)
    return root


def readable(root: Path) -> None:
    for path in [root, *root.rglob("*")]:
        if ".git" not in path.parts:
            path.chmod(0o755 if path.is_dir() else 0o644)


async def verify(
    sandbox: GvisorSandbox,
    root: Path,
    *,
    test_cmd: str | None = None,
    baseline: Baseline | None = None,
) -> Verification:
    readable(root)
    verifier = Verifier(sandbox, configured_stages(Settings(test_cmd=test_cmd)))
    return rendered(await examine_tree(root, verifier, baseline=baseline or Baseline(repo=root)))


async def test_all_stages_green_with_tests_collected_is_ok(
    gvisor: GvisorSandbox, tmp_path: Path
) -> None:
    result = await verify(gvisor, checkout("test_pinning", tmp_path))
    assert result.judgement.verdict is Verdict.OK, result.judgement.reasons
    assert result.judgement.reasons == []
    assert result.judgement.tests is not None
    assert result.judgement.tests.passed == 3


async def test_exit_5_is_not_ok(gvisor: GvisorSandbox, tmp_path: Path) -> None:
    result = await verify(gvisor, checkout("no_tests", tmp_path))
    assert result.stages[0].exit_code == 5
    assert result.judgement.verdict is Verdict.FAILING
    assert result.judgement.classification.error_class.value == "no_tests"
    assert "collected no tests" in " ".join(result.judgement.reasons)


async def test_exit_5_stays_not_ok_when_the_command_swallows_it(
    gvisor: GvisorSandbox, tmp_path: Path
) -> None:
    root = checkout("no_tests", tmp_path)
    result = await verify(gvisor, root, test_cmd="python -m pytest -q || true")
    assert result.stages[0].exit_code == 0
    assert result.judgement.verdict is Verdict.FAILING


async def test_an_added_skip_marker_is_a_suspicious_pass(
    gvisor: GvisorSandbox, tmp_path: Path
) -> None:
    root = checkout("test_pinning", tmp_path)
    tests = root / TESTS
    tests.write_text(
        tests.read_text().replace(
            "def test_slugify_keeps_digits", "@pytest.mark.skip\ndef test_slugify_keeps_digits"
        )
    )
    tests.write_text("import pytest\n" + tests.read_text())
    result = await verify(gvisor, root)
    assert result.judgement.verdict is Verdict.SUSPICIOUS_PASS
    assert f"added @pytest.mark.skip at {TESTS}:" in " ".join(result.judgement.reasons)


async def test_an_edited_test_file_is_a_suspicious_pass(
    gvisor: GvisorSandbox, tmp_path: Path
) -> None:
    root = checkout("test_pinning", tmp_path)
    tests = root / TESTS
    tests.write_text(tests.read_text().replace('== "top-10-tips"', '!= "anything"'))
    result = await verify(gvisor, root)
    assert result.judgement.verdict is Verdict.SUSPICIOUS_PASS
    assert f"test file {TESTS} was modified since the baseline" in result.judgement.reasons


async def test_a_dropped_test_is_a_suspicious_pass(gvisor: GvisorSandbox, tmp_path: Path) -> None:
    root = checkout("test_pinning", tmp_path)
    before = await verify(gvisor, root)
    assert before.judgement.tests is not None
    collected = before.judgement.tests.collected
    # Drop a test and commit it, so only the count (not the pinned file) can tell.
    tests = root / TESTS
    text = tests.read_text()
    tests.write_text(text[: text.index("def test_slugify_keeps_digits")])
    repo = git.Repo(root)
    repo.git.add("-A")
    repo.index.commit("drop a test")
    result = await verify(gvisor, root, baseline=Baseline(repo=root, collected=collected))
    assert result.judgement.verdict is Verdict.SUSPICIOUS_PASS
    assert result.judgement.reasons == [f"the test count dropped from {collected} to 2"]


async def test_a_command_that_swallows_failure_makes_a_pass_suspicious(
    gvisor: GvisorSandbox, tmp_path: Path
) -> None:
    result = await verify(
        gvisor, checkout("test_pinning", tmp_path), test_cmd="python -m pytest -q || true"
    )
    assert result.judgement.verdict is Verdict.SUSPICIOUS_PASS
    assert "swallows failure" in result.judgement.reasons[0]


async def test_failing_tests_behind_or_true_are_still_failing(
    gvisor: GvisorSandbox, tmp_path: Path
) -> None:
    root = checkout("assertion_failure", tmp_path)
    result = await verify(gvisor, root, test_cmd="python -m pytest -q || true")
    assert result.stages[0].exit_code == 0
    assert result.judgement.verdict is Verdict.FAILING
    assert result.packet is not None


async def test_a_skip_from_the_code_under_test_is_a_suspicious_pass(
    gvisor: GvisorSandbox, tmp_path: Path
) -> None:
    """No test file changed and no skip marker was added, yet the baseline's tests stopped
    running: the code calls pytest.skip. Only the baseline's test ids can tell."""
    root = checkout("test_pinning", tmp_path)
    before = await verify(gvisor, root)
    tests = BaselineTests.of(before.stages)
    assert tests is not None
    assert len(tests.ids) == 3
    module = root / "slugs" / "__init__.py"
    module.write_text(
        module.read_text().replace(
            "    words =", '    __import__("pytest").skip("flaky")\n    words ='
        )
    )
    baseline = Baseline(repo=root, collected=3, tests=tests)
    result = await verify(gvisor, root, baseline=baseline)
    assert result.judgement.verdict is Verdict.SUSPICIOUS_PASS
    reasons = " ".join(result.judgement.reasons)
    assert "3 baseline tests now skipped: tests/test_slugs.py::test_slugify_lowercases" in reasons


async def test_a_pass_resting_only_on_the_models_new_tests_is_suspicious(
    gvisor: GvisorSandbox, tmp_path: Path
) -> None:
    """The baseline's tests are still collected but none pass (a conftest hook the model
    would need is not there, so this uses a baseline whose tests all xfail), while a new test
    passes: the new test is listed, and the pass is not honest."""
    root = checkout("test_pinning", tmp_path)
    before = await verify(gvisor, root)
    tests = BaselineTests.of(before.stages)
    assert tests is not None
    (root / "tests" / "test_smoke.py").write_text("def test_smoke():\n    assert True\n")
    baseline = Baseline(repo=root, collected=3, tests=tests.model_copy(update={"not_run": []}))
    stages = [
        stage.model_copy(
            update={
                "report": stage.report.model_copy(
                    update={
                        "tests": [
                            TestCase(nodeid=nodeid, outcome="xfailed") for nodeid in tests.ids
                        ]
                    }
                )
            }
        )
        if stage.report is not None
        else stage
        for stage in (await verify(gvisor, root, baseline=baseline)).stages
    ]
    check = check_baseline_tests(tests, stages)
    assert check.new_tests == ["tests/test_smoke.py::test_smoke"]
    assert (
        "the pass rests only on new tests by the model (1 passed); "
        "none of the baseline's 3 tests passed"
    ) in check.doubts


FLIPPING_CONFTEST = """\
import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        report.outcome = "passed"
"""


async def test_a_conftest_that_rewrites_failures_as_passes_is_not_ok(
    gvisor: GvisorSandbox, tmp_path: Path
) -> None:
    """The repository itself carries the lying hook (so no pin can tell): the plugin sees a
    test that raised reported as passed, and the verdict names the hook and its file."""
    root = checkout("test_pinning", tmp_path)
    (root / "conftest.py").write_text(FLIPPING_CONFTEST)
    module = root / "slugs" / "__init__.py"
    module.write_text(module.read_text().replace("[a-z0-9]+", "[a-z]+"))  # the hidden bug
    repo = git.Repo(root)
    repo.git.add("-A")
    repo.index.commit("a hostile repository")
    result = await verify(gvisor, root)
    assert result.stages[0].exit_code == 0
    assert result.judgement.verdict is Verdict.SUSPICIOUS_PASS
    assert result.judgement.reasons == [
        "stage 'tests': the failed report of tests/test_slugs.py::test_slugify_keeps_digits "
        "(call) was rewritten as passed by the project's report hooks: "
        "pytest_runtest_makereport in conftest.py:4"
    ]
