"""`fixloop-tui doctor`: the engine's checks of this machine, printed (or as JSON)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys


def doctor_command(args: argparse.Namespace) -> int:
    from engine.doctor import diagnose

    diagnosis = asyncio.run(diagnose(args.path.resolve()))
    if args.json:
        print(
            json.dumps(
                {
                    "sandbox_works": diagnosis.sandbox_works,
                    "checks": [c.model_dump() for c in diagnosis.checks],
                }
            )
        )
    else:
        width = max(len(c.name) for c in diagnosis.checks)
        for check in diagnosis.checks:
            mark = "ok  " if check.ok else ("FAIL" if check.needed else "--  ")
            line = f"{mark} {check.name:<{width}}  {check.detail}"
            if not check.ok and check.fix:
                line += f"  -> {check.fix}"
            print(line)
        if not diagnosis.sandbox_works:
            print("no sandbox works here: fixloop will not run model-written code", file=sys.stderr)
    return 0 if diagnosis.sandbox_works else 1
