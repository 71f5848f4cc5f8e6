"""How much slower is a job in the gVisor sandbox than the same job on the host?

Times two commands, each over `--runs` runs (default 20):

  * `python -c pass`                              (interpreter start, nothing else)
  * `python -m pytest -q -p no:cacheprovider`     (a generated 20-test file)

in these modes:

  * bare        - a plain subprocess on the host: the same interpreter, the same
                  temporary project, the same clean environment a job gets; the
                  physical limit, with no isolation at all;
  * gvisor cold - `GvisorSandbox(pool_size=0)`: every job starts its own sandbox;
  * gvisor warm - `GvisorSandbox(pool_size=2)`: jobs take a pre-started sandbox whose
                  zygote has already run a throwaway pytest session (imports done);
  * docker cold / docker warm - the same through `DockerSandbox` (a Docker-compatible
                  engine whose runtime is runsc; FIXLOOP_DOCKER_URL or fixloop's Podman
                  socket), with the host's interpreter mounted, or with `--image TAG`;
  * dockerd cold / dockerd warm - the same on Docker Engine (`--dockerd-url`, default
                  fixloop's own dockerd from `fixloop-tui sandbox engine --docker`).

A run is timed from the caller's `run()` call to its return (for bare: from
spawning the process to reaping it), which is what fixloop's loop waits for:
for gVisor that includes packing the workspace, handing the job over, and
killing and deleting the used sandbox. Taking a pooled sandbox schedules its
replacement in the background, so before each timed warm run the script waits
until every pooled sandbox is ready again (the loop has the model's think time
for that); the replacement that starts *during* a run is part of the run's cost.

Run as root on a host where the gvisor backend works (and, for the docker rows,
after `fixloop-tui sandbox engine`; for the dockerd rows, `... engine --docker`):

    .venv/bin/python bench/sandbox_overhead.py [--runs N] [--backends gvisor,docker,dockerd]
                                               [--dockerd-url URL] [--image TAG] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from sandbox.contract import BASE_ENV, ExecRequest, ExecResult  # noqa: E402
from sandbox.docker.backend import DockerSandbox  # noqa: E402
from sandbox.gvisor import GvisorSandbox, find_runsc  # noqa: E402

COMMANDS: dict[str, list[str]] = {
    "python -c pass": ["python", "-c", "pass"],
    "pytest 20 tests": ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider"],
}
TEST_COUNT = 20
POOL_SIZE = 2
POOL_READY_TIMEOUT_S = 120.0
SETTLE_S = 0.2  # after the pool is full, let the host go quiet before the next run

Timer = Callable[[ExecRequest], Awaitable[tuple[float, ExecResult | None]]]
Backend = GvisorSandbox | DockerSandbox
BACKENDS = ("gvisor", "docker", "dockerd")
DOCKERD_URL = "unix:///run/fixloop/docker.sock"  # fixloop's own dockerd (docker-service.sh)


@dataclass
class CommandTimes:
    mode: str
    command: str
    runs: int
    median_s: float
    p90_s: float
    inside_median_s: float | None  # the sandbox's own duration_ms: the job minus the plumbing
    ratio: float | None = None


def make_project(base: Path) -> Path:
    """A small project: one module under test and a file of TEST_COUNT tests."""
    project = base / "project"
    project.mkdir()
    (project / "calc.py").write_text(
        "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n"
    )
    tests = ["from calc import add, mul\n"]
    for i in range(TEST_COUNT):
        op = "add" if i % 2 == 0 else "mul"
        expected = i + 3 if op == "add" else i * 3
        tests.append(f"\ndef test_{op}_{i:02d}():\n    assert {op}({i}, 3) == {expected}\n")
    (project / "test_generated.py").write_text("".join(tests))
    return project


def p90(values: list[float]) -> float:
    if len(values) < 2:
        return values[0]
    return statistics.quantiles(values, n=10, method="inclusive")[-1]


def check(mode: str, argv: list[str], code: int, stdout: str, stderr: str) -> None:
    """A timing of a failing job would be meaningless: stop with its output."""
    ok = code == 0 and ("pytest" not in argv or f"{TEST_COUNT} passed" in stdout)
    if not ok:
        raise SystemExit(
            f"{mode} {' '.join(argv)} failed (exit {code}):\n{stdout[-2000:]}\n{stderr[-2000:]}"
        )


def bare_env(project: Path) -> dict[str, str]:
    """The clean environment a sandboxed job gets, with host paths."""
    bin_dir = str(Path(sys.executable).parent)
    return {
        **BASE_ENV,
        "PATH": ":".join(dict.fromkeys([bin_dir, "/usr/local/bin", "/usr/bin", "/bin"])),
        "HOME": str(project),
        "TMPDIR": tempfile.gettempdir(),
    }


async def time_bare(request: ExecRequest) -> tuple[float, ExecResult | None]:
    assert request.workdir is not None
    env = bare_env(request.workdir)
    executable = shutil.which(request.argv[0], path=env["PATH"])
    assert executable is not None
    started = time.perf_counter()
    process = await asyncio.create_subprocess_exec(
        executable,
        *request.argv[1:],
        cwd=request.workdir,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    elapsed = time.perf_counter() - started
    check("bare", request.argv, process.returncode or 0, out.decode(), err.decode())
    return elapsed, None


def sandbox_timer(sandbox: Backend) -> Timer:
    async def timed(request: ExecRequest) -> tuple[float, ExecResult | None]:
        started = time.perf_counter()
        result = await sandbox.run(request)
        return time.perf_counter() - started, result

    return timed


async def wait_pool_ready(sandbox: Backend, request: ExecRequest) -> None:
    """Wait until every sandbox pooled for `request` (incl. the last take's refill) is READY."""
    profile = sandbox.profile(request)
    deadline = time.monotonic() + POOL_READY_TIMEOUT_S
    while time.monotonic() < deadline:
        # The pool keeps one start task per slot; a finished task is a ready sandbox.
        slots = sandbox.pool._ready.get(profile, [])
        if len(slots) >= POOL_SIZE and all(task.done() for task in slots):
            await asyncio.sleep(SETTLE_S)
            return
        await asyncio.sleep(0.05)
    raise SystemExit("the warm pool did not refill in time")


async def measure(
    mode: str,
    command: str,
    request: ExecRequest,
    runs: int,
    timer: Timer,
    before_each: Callable[[], Awaitable[None]] | None = None,
) -> CommandTimes:
    times: list[float] = []
    inside: list[float] = []
    await timer(request)  # one untimed run: first-use costs (skeleton root, page cache)
    for _ in range(runs):
        if before_each is not None:
            await before_each()
        elapsed, result = await timer(request)
        if result is not None:
            check(mode, request.argv, result.exit_code, result.stdout, result.stderr)
            inside.append(result.duration_ms / 1000)
        times.append(elapsed)
    return CommandTimes(
        mode=mode,
        command=command,
        runs=runs,
        median_s=statistics.median(times),
        p90_s=p90(times),
        inside_median_s=statistics.median(inside) if inside else None,
    )


def open_backend(name: str, pool_size: int, image: str | None, dockerd_url: str) -> Backend:
    if name == "gvisor":
        return GvisorSandbox(pool_size=pool_size)
    url = dockerd_url if name == "dockerd" else None
    return DockerSandbox(pool_size=pool_size, url=url, image=image, allow_runc=False)


async def bench(
    runs: int,
    project: Path,
    progress: bool,
    backends: list[str],
    image: str | None,
    dockerd_url: str = DOCKERD_URL,
) -> list[CommandTimes]:
    rows: list[CommandTimes] = []

    def note(row: CommandTimes) -> None:
        rows.append(row)
        if progress:
            print(f"  {row.mode:<11} {row.command:<16} median {row.median_s:.3f} s", flush=True)

    requests = {name: ExecRequest(argv=argv, workdir=project) for name, argv in COMMANDS.items()}
    for name, request in requests.items():
        note(await measure("bare", name, request, runs, time_bare))

    for backend in backends:
        cold = open_backend(backend, 0, image, dockerd_url)
        try:
            for name, request in requests.items():
                note(await measure(f"{backend} cold", name, request, runs, sandbox_timer(cold)))
        finally:
            await cold.close()

        warm = open_backend(backend, POOL_SIZE, image, dockerd_url)
        try:
            for name, request in requests.items():
                await warm.warm(request)
                await wait_pool_ready(warm, request)
                refilled = functools.partial(wait_pool_ready, warm, request)
                timer = sandbox_timer(warm)
                note(await measure(f"{backend} warm", name, request, runs, timer, refilled))
        finally:
            await warm.close()

    bare = {row.command: row.median_s for row in rows if row.mode == "bare"}
    for row in rows:
        row.ratio = row.median_s / bare[row.command]
    return rows


def environment(backends: list[str], image: str | None, dockerd_url: str) -> dict[str, str]:
    runsc = find_runsc()
    version = subprocess.run([runsc, "--version"], capture_output=True, text=True, check=False)
    found = {
        "cpus": str(os.cpu_count()),
        "load_at_start": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "runsc": version.stdout.splitlines()[0] if version.stdout else "unknown",
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "interpreter": sys.executable,
        "kernel": platform.release(),
    }
    engines = {"docker": None, "dockerd": dockerd_url}
    for backend in (name for name in backends if name in engines):
        from sandbox.docker.engine_check import connect, engine_version
        from sandbox.docker.locate import engine_url

        url = engine_url(engines[backend])
        client = connect(url)
        found[f"{backend} engine"] = f"{engine_version(client, url)} at {url}"
        found["image"] = image or "skeleton + the host's interpreter mounted read-only"
        client.close()
    return found


def print_table(rows: list[CommandTimes], env: dict[str, str], runs: int) -> None:
    print()
    for key, value in env.items():
        print(f"{key + ':':<17}{value}")
    print(f"{'runs:':<17}{runs} timed per cell (after one untimed warm-up run)")
    notes = {
        "bare:": "same interpreter and project, the job's clean environment "
        "(PYTHONDONTWRITEBYTECODE=1: pytest re-rewrites plugin asserts every run)",
        "warm pool:": f"pool_size={POOL_SIZE}; before each timed run the script waits until "
        "the pool has refilled (polling it), so the run takes a READY sandbox; the refill "
        "started by that take runs in the background during the run",
    }
    for key, value in notes.items():
        print(f"{key:<17}{value}")
    print()
    header = (
        f"{'mode':<12} {'command':<17} {'median s':>9} {'p90 s':>8} {'x bare':>7} {'inside s':>9}"
    )
    print(header)
    print("-" * len(header))
    for row in rows:
        inside = f"{row.inside_median_s:9.3f}" if row.inside_median_s is not None else f"{'-':>9}"
        print(
            f"{row.mode:<12} {row.command:<17} {row.median_s:9.3f} {row.p90_s:8.3f} "
            f"{row.ratio or 0:7.2f} {inside}"
        )
    print()
    print("inside s: the sandbox's own measure of the job (ExecResult.duration_ms), i.e.")
    print("from handing over the job to the job's exit, without packing and teardown.")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="timed runs per cell (default 20)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument(
        "--backends",
        default="gvisor,docker",
        help=f"comma-separated, of {','.join(BACKENDS)} (default gvisor,docker)",
    )
    parser.add_argument(
        "--dockerd-url",
        default=DOCKERD_URL,
        help=f"the dockerd rows' engine (default {DOCKERD_URL})",
    )
    parser.add_argument("--image", help="docker backend: an image from `sandbox build-image`")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    backends = [name for name in args.backends.split(",") if name]
    if not backends or set(backends) - set(BACKENDS):
        parser.error(f"--backends: choose from {', '.join(BACKENDS)}")
    # Before the runs: the load average says how quiet the machine was.
    env = environment(backends, args.image, args.dockerd_url)
    with tempfile.TemporaryDirectory(prefix="fixloop-bench-") as scratch:
        project = make_project(Path(scratch))
        rows = asyncio.run(
            bench(
                args.runs,
                project,
                not args.json,
                backends=backends,
                image=args.image,
                dockerd_url=args.dockerd_url,
            )
        )
    if args.json:
        print(
            json.dumps(
                {"environment": env, "runs": args.runs, "rows": [asdict(r) for r in rows]}, indent=2
            )
        )
    else:
        print_table(rows, env, args.runs)


if __name__ == "__main__":
    main()
