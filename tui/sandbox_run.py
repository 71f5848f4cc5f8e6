"""`fixloop-tui sandbox run -- CMD`: one command in a sandbox, exactly as fixloop runs a stage."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from engine.run.exit_codes import EXIT_OOM, EXIT_TIMEOUT, EXIT_USAGE
from sandbox import ExecRequest, ExecResult, Limits, open_sandbox
from tui.sandbox_warnings import unsafe_local_said_once


def sandbox_run_command(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    cmd = list(args.cmd)
    if cmd[:1] == ["--"]:
        cmd = cmd[1:]
    if not cmd:
        parser.error(
            "sandbox run needs a command after --, e.g. sandbox run -- python -c 'print(1)'"
        )
    workdir = args.workdir.resolve()
    if not workdir.is_dir():
        print(f"fixloop-tui: error: --workdir {args.workdir} is not a directory", file=sys.stderr)
        return EXIT_USAGE
    request = ExecRequest(
        argv=cmd,
        workdir=workdir,
        python=args.python,
        limits=Limits(timeout_s=args.timeout, memory_mb=args.memory),
    )

    async def go() -> ExecResult:
        backend = open_sandbox(
            args.backend, docker_url=args.docker_url, allow_runc=args.allow_runc, image=args.image
        )
        try:
            return await backend.run(request)
        finally:
            await backend.close()

    with unsafe_local_said_once(args.backend, "the command unsandboxed on this machine"):
        result = asyncio.run(go())
    if args.json:
        print(json.dumps(result.model_dump(exclude={"workdir"})))
    else:
        sys.stdout.write(result.stdout)
        sys.stderr.write(result.stderr)
        if result.truncated:
            print("fixloop-tui: output was truncated", file=sys.stderr)
        if result.timed_out:
            print(f"fixloop-tui: killed after the {args.timeout:g} s timeout", file=sys.stderr)
        if result.oom_killed:
            print(f"fixloop-tui: killed at the {args.memory} MB memory limit", file=sys.stderr)
    if result.timed_out:
        return EXIT_TIMEOUT
    if result.oom_killed:
        return EXIT_OOM
    return result.exit_code
