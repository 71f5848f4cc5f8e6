"""Spec mode with the embedded CPU model (a few CPU minutes; never in parallel): the example
spec examples/specs/parse_duration.toml, headless, in the real sandbox.

A 1.5B model may or may not get there; either ending is fine if it is honest: `ok` with every
example passing, or a report that lists every example and constraint with what kept failing.
Run with `-s` to see the iterations and the wall time:

    pytest -s -m manual tests/e2e/test_spec_local_model.py

It is `manual` (left out of the default run and CI): it takes several CPU minutes, and CI keeps
one local-model end-to-end test, the demo's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.spec.definition import load_spec
from tests.e2e.test_spec import spec_project
from tests.engine.test_local_model import require_local_extra

REPO = Path(__file__).parents[2]
SPEC = REPO / "examples" / "specs" / "parse_duration.toml"


@pytest.mark.manual
@pytest.mark.local_model
@pytest.mark.sandbox
@pytest.mark.usefixtures("needs_gvisor")
def test_the_local_model_builds_the_example_spec_or_reports_why_not(tmp_path: Path) -> None:
    require_local_extra()
    root = spec_project(tmp_path)
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "tui.cli", str(root), "--headless", "--json", "--spec", str(SPEC)],
        capture_output=True,
        text=True,
        cwd=REPO,
        # The real HOME: the joined model file is cached there (~/.cache/fixloop/models).
        env={"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", str(tmp_path))},
        timeout=1800,
        check=False,
    )
    wall = time.monotonic() - started
    result = json.loads(done.stdout)
    statuses = [it["status"] for it in result["iterations"]]
    print(f"\n[spec, local model] {result['status']} after {len(statuses)} iterations {statuses}")
    print(f"[spec, local model] wall {wall:.0f} s, tokens {result['tokens']}: {result['reason']}")
    print(done.stderr)
    assert result["status"] != "error", result["reason"]
    if result["status"] == "ok":
        assert done.returncode == 0
        last = result["iterations"][-1]["tests"]
        assert last["passed"] == last["collected"] >= len(load_spec(SPEC).examples)
        return
    report = Path(result["report"]).read_text(encoding="utf-8")
    print(report)
    assert "## The spec: what kept failing" in report
    for number, example in enumerate(load_spec(SPEC).examples, start=1):
        assert f"| example {number}: {example.line()} |" in report
    assert "### Which requirement looks ambiguous" in report
