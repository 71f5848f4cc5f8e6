"""What the candidate's code does inside the sandbox is the candidate's failure, told to the
model, once the baseline passed its environment checks; an environment failure ends a run
only before any edit, or when the sandbox itself failed. The pytest outputs are whole,
unedited outputs of real runs in gVisor (tests/fixtures/captured/sandbox/)."""

from __future__ import annotations

from pathlib import Path

from engine.feedback.distill import distill
from engine.verify.classify import Classification, ErrorClass, classify
from engine.verify.results import StageKind, StageResult
from engine.verify.verdict import Verdict, judge

CAPTURED = Path(__file__).parents[1] / "fixtures" / "captured" / "sandbox"


def pytest_stage(output: str) -> StageResult:
    return StageResult(
        name="tests",
        kind=StageKind.TESTS,
        cmd="python -m pytest -q",
        exit_code=1,
        duration_ms=2080,
        stdout=output,
        excerpt=output,
    )


def captured(name: str) -> StageResult:
    return pytest_stage((CAPTURED / name).read_text())


def after_baseline(stage: StageResult) -> Classification:
    return classify([stage], project_modules=frozenset(), after_baseline=True, tmpfs_mb=64)


def test_a_candidate_that_fills_the_disk_fails_saying_so() -> None:
    result = after_baseline(captured("disk_full.txt"))
    assert result.error_class is ErrorClass.SANDBOX_LIMIT
    assert result.env_cause is None
    assert result.primary == (
        "your code filled the sandbox's disk (64 MiB tmpfs): tests/test_p.py::test_x: "
        "OSError: [Errno 28] No space left on device"
    )


def test_a_candidate_that_tries_the_network_fails_saying_so() -> None:
    result = after_baseline(captured("network_dns.txt"))
    assert result.error_class is ErrorClass.SANDBOX_LIMIT
    assert result.primary.startswith(
        "your code tried the network, which the sandbox does not have: tests/test_p.py::test_x: "
    )


def test_no_route_to_host_is_the_network() -> None:
    baseline = classify([captured("network_no_route.txt")], project_modules=frozenset())
    assert baseline.error_class is ErrorClass.ENV_FAILURE
    assert baseline.env_cause == (
        "a test tried to reach the network (no route to host): the sandbox has no network; mock it"
    )
    assert after_baseline(captured("network_no_route.txt")).error_class is ErrorClass.SANDBOX_LIMIT


def test_the_baseline_filling_the_disk_is_still_an_environment_failure() -> None:
    result = classify([captured("disk_full.txt")], project_modules=frozenset())
    assert result.error_class is ErrorClass.ENV_FAILURE


def test_a_candidates_full_disk_is_a_failing_verdict_with_the_line_in_its_packet() -> None:
    stage = captured("disk_full.txt")
    classification = after_baseline(stage)
    assert judge([stage], classification).verdict is Verdict.FAILING
    packet = distill([stage], classification, iteration=2, max_iterations=4)
    assert packet.notes[0].startswith("your code filled the sandbox's disk (64 MiB tmpfs)")
    assert packet.error_class == "sandbox_limit"
    assert "your code filled the sandbox's disk (64 MiB tmpfs)" in packet.render(2000, len)


def test_a_missing_module_after_the_baseline_is_still_an_environment_failure() -> None:
    output = (
        "E   ModuleNotFoundError: No module named 'yaml'\n"
        "ERROR tests/test_p.py - ModuleNotFoundError: No module named 'yaml'\n"
    )
    assert after_baseline(pytest_stage(output)).error_class is ErrorClass.ENV_FAILURE


def test_the_sandbox_failing_after_the_baseline_is_still_an_environment_failure() -> None:
    broken = pytest_stage("").model_copy(
        update={"exit_code": -1, "infrastructure_error": "runsc: cannot create sandbox"}
    )
    result = after_baseline(broken)
    assert result.error_class is ErrorClass.ENV_FAILURE
    assert judge([broken], result).verdict is Verdict.ENV_FAILURE


def test_a_refused_workspace_link_is_an_environment_failure_in_its_own_words() -> None:
    line = (
        "workspace link up -> ../../.. points outside the workspace: fixloop will not copy it "
        "into the sandbox; remove the link or point it at a file inside the project"
    )
    refused = pytest_stage("").model_copy(update={"exit_code": -1, "infrastructure_error": line})
    result = classify([refused], project_modules=frozenset())
    assert result.error_class is ErrorClass.ENV_FAILURE
    assert result.env_cause == line
