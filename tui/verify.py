"""`fixloop-tui verify`: the verifier once over a working tree, its verdict and packet.

The settings and the verifying are a run's (engine/feedback/checkout.py); this prints them."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from engine.errors import ConfigError
from engine.feedback.checkout import verify_checkout
from engine.feedback.tree import Verification
from engine.project.settings import load_settings
from engine.run.exit_codes import EXIT_USAGE, VERDICT_EXIT_CODES
from engine.text.durations import said_duration
from engine.verify.learned_times import times_path
from engine.verify.verdict import Verdict
from tui.sandbox_warnings import unsafe_local_said_once

VERIFY_FLAGS = (
    "test_cmd",
    "test_report",
    "lint_cmd",
    "type_cmd",
    "format_cmd",
    "sandbox",
    "docker_url",
    "allow_runc",
    "image",
    "python",
    "exec_timeout",
    "test_timeout",
)


def _fail(message: str) -> int:
    print(f"fixloop-tui: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def verify_command(args: argparse.Namespace) -> int:
    root: Path = args.path.resolve()
    if not root.is_dir():
        return _fail(f"{args.path} is not a directory")
    if args.python is not None and not args.python.exists():
        return _fail(f"--python {args.python} does not exist")
    try:
        settings = load_settings(root, {key: getattr(args, key) for key in VERIFY_FLAGS})
    except ConfigError as exc:
        return _fail(str(exc))
    with unsafe_local_said_once(settings.sandbox, "the stages unsandboxed"):
        try:
            result = asyncio.run(verify_checkout(root, settings))
        except ConfigError as exc:
            return _fail(str(exc))
    if args.json:
        print(json.dumps(as_json(result)))
    else:
        print_human(root, result)
    return VERDICT_EXIT_CODES[result.judgement.verdict]


def as_json(result: Verification) -> dict[str, Any]:
    judgement = result.judgement
    tests = judgement.tests
    return {
        "status": judgement.verdict.value,
        "reasons": judgement.reasons,
        "stages": [
            {
                "name": stage.name,
                "cmd": stage.cmd,
                "exit_code": stage.exit_code,
                "duration_ms": stage.duration_ms,
                "timed_out": stage.timed_out,
                "oom_killed": stage.oom_killed,
            }
            for stage in result.stages
        ],
        "tests": tests.model_dump(exclude={"xpassed"}) if tests is not None else None,
        "error_class": judgement.classification.error_class.value,
        "env_cause": judgement.classification.env_cause,
        "signature": judgement.signature,
        "packet": result.packet.model_dump() if result.packet is not None else None,
        "packet_text": result.packet_text,
        "packet_tokens": result.packet_tokens,
        "notes": result.notes,
    }


def print_human(root: Path, result: Verification) -> None:
    judgement = result.judgement
    print(f"{root}: {judgement.verdict.value.upper().replace('_', ' ')}")
    width = max((len(stage.name) for stage in result.stages), default=0)
    for stage in result.stages:
        if stage.infrastructure_error:
            state = "sandbox error"
        elif stage.timed_out:
            state = "timed out"
        elif stage.oom_killed:
            state = "out of memory"
        else:
            state = "ok" if stage.exit_code == 0 else f"exit {stage.exit_code}"
        took = said_duration(stage.duration_ms / 1000)
        print(f"  {stage.name:<{width}}  {state:<13} {took:>6}  {stage.cmd}")
    if judgement.tests is not None:
        t = judgement.tests
        print(
            f"  tests: {t.collected} collected, {t.passed} passed, {t.failed} failed, "
            f"{t.errors} errors, {t.skipped} skipped, {t.xfailed} xfailed"
        )
    if judgement.verdict is not Verdict.FAILING:
        for reason in judgement.reasons:
            print(f"  - {reason}")
    for note in result.notes:
        print(f"  note: {note}")
    if hint := slow_tests_hint(root, result):
        print(f"  hint: {hint}")
    if result.packet_text:
        print(f"\nRepair packet ({result.packet_tokens} tokens):\n")
        print(result.packet_text)


def slow_tests_hint(root: Path, result: Verification) -> str | None:
    """What to do about tests stopped by the per-test limit, when they may only be slow: the
    sandbox runs some tests far slower than bare (threads handing a lock back and forth cost
    a system call each, and gVisor's system calls are slow). One verification that lets them
    pass teaches fixloop their times (`engine/verify/learned_times.py`), and every later one
    gives them what they need."""
    packet = result.packet
    stopped = [f for f in packet.failures if f.kind == "timeout"] if packet is not None else []
    if not stopped:
        return None
    tests = "test was" if len(stopped) == 1 else "tests were"
    kept = times_path(root)
    learns = (
        f"; fixloop then remembers their times (in {kept}) and later verifications and runs "
        "give them the time they need with the default limit"
        if kept is not None
        else ""
    )
    return (
        f"{len(stopped)} {tests} stopped by the per-test limit (--test-timeout, default 20 s). "
        "If they pass bare, they may only be slow in the sandbox (a test whose threads contend "
        "for a lock can run 50x slower under gVisor): run `fixloop-tui verify --test-timeout 0` "
        f"once, which leaves only the stage's --exec-timeout{learns}"
    )
