"""`fixloop-tui verify`: the verifier once over a working tree, its verdict and packet."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import warnings
from pathlib import Path
from typing import Any

import git

from engine.doctor import project_python
from engine.verify.execute import Verifier
from engine.verify.stages import StageConfigError, configured_stages
from engine.verify.tree import Baseline, Verification, verify_tree, working_tree_diff
from engine.verify.verdict import Verdict
from sandbox import Limits, open_sandbox

EXIT_CODES = {
    Verdict.OK: 0,
    Verdict.FAILING: 1,
    Verdict.ENV_FAILURE: 3,
    Verdict.SUSPICIOUS_PASS: 4,
    Verdict.ERROR: 6,
}
EXIT_USAGE = 2


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
        stages = configured_stages(
            root,
            test_cmd=args.test_cmd,
            lint_cmd=args.lint_cmd,
            type_cmd=args.type_cmd,
            format_cmd=args.format_cmd,
        )
    except StageConfigError as exc:
        return _fail(str(exc))
    baseline, diff, touched = _baseline(root)
    python = args.python or project_python(root)
    if args.sandbox == "unsafe-local":
        print("fixloop-tui: warning: unsafe-local runs the stages unsandboxed", file=sys.stderr)

    async def go() -> Verification:
        backend = open_sandbox(
            args.sandbox, docker_url=args.docker_url, allow_runc=args.allow_runc, image=args.image
        )
        verifier = Verifier(
            backend, stages, python=python, limits=Limits(timeout_s=args.exec_timeout)
        )
        try:
            return await verify_tree(
                root, verifier, baseline=baseline, touched=touched, last_diff=diff or None
            )
        finally:
            await backend.close()

    with warnings.catch_warnings():
        from sandbox.local import UnsafeLocalWarning

        # The unsafe-local warning was printed above; a runc warning is printed per job.
        warnings.simplefilter("ignore", UnsafeLocalWarning)
        result = asyncio.run(go())
    if args.json:
        print(json.dumps(as_json(result)))
    else:
        print_human(root, result)
    return EXIT_CODES[result.judgement.verdict]


def _baseline(root: Path) -> tuple[Baseline | None, str, list[str]]:
    """HEAD of the repository holding `root`, the uncommitted diff and the paths it touches."""
    try:
        repo = git.Repo(root, search_parent_directories=False)
        repo.head.commit  # noqa: B018 - raises on a repository without commits
    except (git.InvalidGitRepositoryError, git.NoSuchPathError, ValueError):
        return None, "", []
    diff, touched = working_tree_diff(root)
    return Baseline(repo=root), diff, touched


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
        print(f"  {stage.name:<{width}}  {state:<13} {stage.duration_ms / 1000:6.2f}s  {stage.cmd}")
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
    if result.packet_text:
        print(f"\nRepair packet ({result.packet_tokens} tokens):\n")
        print(result.packet_text)
