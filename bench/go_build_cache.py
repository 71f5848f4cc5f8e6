"""What Go's build-cache seed saves: a Go verification's test stage (examples/gostats,
`go test -json ./...`, built as the verifier builds it) timed cold (no seed: GOCACHE starts
empty, the standard library is vetted again) and seeded (GOCACHE unpacked from the seed),
on each gVisor backend, `--runs` runs each (default 5, after one untimed run), every job in
its own sandbox. Also timed once per backend: building the seed itself, and a cold
verification while the seed builds beside it (what the first verification of a run costs).

Seeds are built into a temporary XDG_CACHE_HOME: the person's own cache is not touched.

    .venv/bin/python bench/go_build_cache.py [--runs N] [--only gvisor|docker] [--json]
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
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from engine.project.detect import GO_TEST_CMD  # noqa: E402
from engine.verify.execute import Verifier  # noqa: E402
from engine.verify.go_seed_job import build_seed  # noqa: E402
from engine.verify.results import StageKind  # noqa: E402
from engine.verify.stages import Stage  # noqa: E402
from engine.verify.toolchains import GO_SEED_MOUNT  # noqa: E402
from sandbox import BackendName, Sandbox, open_sandbox  # noqa: E402

PROJECT = REPO / "examples" / "gostats"
MARKER = '"Action":"fail"'  # the example fails two tests on purpose
STAGE = Stage(name="tests", kind=StageKind.TESTS, cmd=GO_TEST_CMD)


async def verification(sandbox: Sandbox, *, seeded: bool) -> float:
    verifier = Verifier(sandbox, [STAGE], project=PROJECT)
    request = verifier.request(STAGE, PROJECT, "unused")
    if (GO_SEED_MOUNT in request.mounts) != seeded:
        raise SystemExit(f"expected a {'seeded' if seeded else 'cold'} job: {request.mounts}")
    started = time.perf_counter()
    result = await sandbox.run(request)
    seconds = time.perf_counter() - started
    if MARKER not in result.stdout:
        output = result.stdout + result.stderr
        raise SystemExit(f"no report in the job's output:\n{output[-1500:]}")
    return seconds


async def timed(sandbox: Sandbox, runs: int, *, seeded: bool) -> list[float]:
    times = [await verification(sandbox, seeded=seeded) for _ in range(runs + 1)]
    return times[1:]  # the first fills the host's file cache


async def measure(backend: BackendName, runs: int) -> list[dict[str, object]]:
    sandbox = open_sandbox(backend, pool_size=0)
    rows: list[dict[str, object]] = []

    def row(mode: str, times: list[float]) -> None:
        rows.append(
            {
                "backend": backend,
                "mode": mode,
                "runs": len(times),
                "median_s": round(statistics.median(times), 2),
                "min_s": round(min(times), 2),
            }
        )

    with tempfile.TemporaryDirectory(prefix="fixloop-bench-gocache-") as home:
        os.environ["XDG_CACHE_HOME"] = home
        try:
            row("cold", await timed(sandbox, runs, seeded=False))
            started = time.perf_counter()
            first, seed = await asyncio.gather(
                verification(sandbox, seeded=False), build_seed(sandbox)
            )
            row("first, seeding beside", [first])
            row("  both done", [time.perf_counter() - started])
            if seed is None:
                raise SystemExit(f"{backend}: the seed could not be built")
            row("seeded", await timed(sandbox, runs, seeded=True))
        finally:
            await sandbox.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="timed runs per mode (default 5)")
    parser.add_argument("--only", choices=["gvisor", "docker"])
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args()
    if shutil.which("go") is None:
        raise SystemExit("go is not installed (apt-get install -y golang-go)")
    backends: list[BackendName] = [args.only] if args.only else ["gvisor", "docker"]
    rows = [row for backend in backends for row in asyncio.run(measure(backend, args.runs))]
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"{'backend':8} {'mode':22} {'median':>8} {'min':>8}   ({os.cpu_count()} cores)")
    for row in rows:
        print(f"{row['backend']:8} {row['mode']:22} {row['median_s']:>7}s {row['min_s']:>7}s")


if __name__ == "__main__":
    main()
