"""What one test run of a Go or JavaScript project costs in the sandbox, next to the host.

Times the test stage fixloop runs for examples/gostats (`go test -json ./...`) and
examples/jsstats (Jest with `--json`), as the verifier builds the job (`Verifier.request`:
the runner's report switched on, its environment, mounts and limits), over `--runs` runs
each (default 10, after one untimed run per mode), in three modes:

  * bare        - a plain subprocess on the host with the job's argv and environment
                  (mounts mapped to their host paths, /tmp to a fresh temporary directory,
                  so Go's build cache starts cold, as inside);
  * gvisor cold - every job starts its own sandbox;
  * gvisor warm - jobs take a pre-started sandbox (a pool of two, refilled before each run).

The examples fail two of their five tests on purpose; a run counts when the runner's
report came back. jsstats needs its node_modules first: `npm ci` in examples/jsstats.

    .venv/bin/python bench/toolchain_overhead.py [--runs N] [--only go|jest] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.sandbox_overhead import wait_pool_ready  # noqa: E402
from engine.project.detect import GO_TEST_CMD, JEST_TEST_CMD  # noqa: E402
from engine.verify.execute import Verifier  # noqa: E402
from engine.verify.results import StageKind  # noqa: E402
from engine.verify.stages import Stage  # noqa: E402
from sandbox.contract import BASE_ENV, ExecRequest  # noqa: E402
from sandbox.gvisor import GvisorSandbox  # noqa: E402

# name: (project, test command, a string every report of it holds)
EXAMPLES = {
    "go": (REPO / "examples" / "gostats", GO_TEST_CMD, '"Action":"fail"'),
    "jest": (REPO / "examples" / "jsstats", JEST_TEST_CMD, '"numTotalTests":5'),
}
POOL_SIZE = 2
Timed = Callable[[], Awaitable[tuple[float, str]]]


async def run_bare(request: ExecRequest) -> tuple[float, str]:
    assert request.workdir is not None
    with tempfile.TemporaryDirectory() as scratch:
        env = {**BASE_ENV, "PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(request.workdir)}
        for key, value in request.env.items():
            for destination, source in request.mounts.items():
                value = value.replace(destination, str(source))
            env[key] = value.replace("/tmp", scratch)
        env["TMPDIR"] = scratch
        started = time.perf_counter()
        process = await asyncio.create_subprocess_exec(
            *request.argv,
            cwd=request.workdir,
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
        out, _ = await process.communicate()
        return time.perf_counter() - started, out.decode(errors="replace")


async def run_sandboxed(sandbox: GvisorSandbox, request: ExecRequest) -> tuple[float, str]:
    if sandbox.pool.size > 0:
        await sandbox.warm(request)  # the loop starts them while the model thinks
        await wait_pool_ready(sandbox, request)
    started = time.perf_counter()
    result = await sandbox.run(request)
    return time.perf_counter() - started, result.stdout or result.stderr


async def measure(name: str, runs: int) -> list[dict[str, object]]:
    project, cmd, marker = EXAMPLES[name]
    stage = Stage(name="tests", kind=StageKind.TESTS, cmd=cmd)
    cold, warm = GvisorSandbox(pool_size=0), GvisorSandbox(pool_size=POOL_SIZE)
    request = Verifier(cold, [stage], project=project).request(stage, project, "unused")
    modes: dict[str, Timed] = {
        "bare": lambda: run_bare(request),
        "gvisor cold": lambda: run_sandboxed(cold, request),
        "gvisor warm": lambda: run_sandboxed(warm, request),
    }
    rows: list[dict[str, object]] = []
    try:
        for mode, timed in modes.items():
            times = []
            for _ in range(runs + 1):
                seconds, out = await timed()
                if marker not in out:
                    raise SystemExit(f"{name}, {mode}: no report in its output:\n{out[-1500:]}")
                times.append(seconds)
            times = times[1:]  # the first run of each mode fills the host's file cache
            rows.append(
                {
                    "project": name,
                    "mode": mode,
                    "runs": runs,
                    "median_s": round(statistics.median(times), 2),
                    "min_s": round(min(times), 2),
                }
            )
    finally:
        await cold.close()
        await warm.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="timed runs per mode (default 10)")
    parser.add_argument("--only", choices=sorted(EXAMPLES))
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args()
    names = [args.only] if args.only else list(EXAMPLES)
    if "go" in names and shutil.which("go") is None:
        raise SystemExit("go is not installed (apt-get install -y golang-go)")
    if "jest" in names and not (EXAMPLES["jest"][0] / "node_modules" / ".bin" / "jest").exists():
        raise SystemExit("examples/jsstats has no node_modules: run `npm ci` there first")
    rows = [row for name in names for row in asyncio.run(measure(name, args.runs))]
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"{'project':8} {'mode':12} {'median':>8} {'min':>8}   ({os.cpu_count()} cores)")
    for row in rows:
        print(f"{row['project']:8} {row['mode']:12} {row['median_s']:>7}s {row['min_s']:>7}s")


if __name__ == "__main__":
    main()
