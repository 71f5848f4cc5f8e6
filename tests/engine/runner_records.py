"""Captured runs of Go, Jest and Vitest (tests/fixtures/captured/runners) made into stage results
the way the verifier makes them: workdir prefixes taken out, the output parsed into a report."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from pathlib import Path

from engine.verify.parsers import generic_excerpt
from engine.verify.results import StageKind, StageResult, TestReport

RUNNERS = Path(__file__).parents[1] / "fixtures" / "captured" / "runners"
WORKDIR = "/fixloop/work"

Parser = Callable[[str, list[str]], TestReport | None]


@cache
def record(case: str) -> dict[str, object]:
    data: dict[str, object] = json.loads((RUNNERS / f"{case}.json").read_text())
    return data


def output(case: str) -> str:
    """stdout then stderr, as a runner's parser is given them."""
    result = record(case)["result"]
    assert isinstance(result, dict)
    return f"{result['stdout']}\n{result['stderr']}"


def stage(case: str, parse: Parser) -> StageResult:
    result = record(case)["result"]
    stage_ = record(case)["stage"]
    assert isinstance(result, dict)
    assert isinstance(stage_, dict)
    prefix = WORKDIR + "/"
    stdout, stderr = (str(result[k]).replace(prefix, "") for k in ("stdout", "stderr"))
    report = parse(f"{stdout}\n{stderr}", [WORKDIR])
    exit_code = int(result["exit_code"])
    return StageResult(
        name="tests",
        kind=StageKind.TESTS,
        cmd=str(stage_["cmd"]),
        exit_code=exit_code,
        duration_ms=int(result["duration_ms"]),
        stdout=stdout,
        stderr=stderr,
        report=report,
        excerpt=generic_excerpt(stdout, stderr) if exit_code and report is None else "",
    )
