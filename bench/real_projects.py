"""Do real projects, in their ordinary dev setup, stay green in fixloop, and how much slower
is `fixloop-tui verify` than the project's own `pytest`?

Each project is a pinned sdist from PyPI (exact version and sha256 below, fetched at bench
time, never vendored) set up the way its developer has it: unpacked into
`$XDG_CACHE_HOME/fixloop/bench-projects/<name>-<version>` (re-used when present), a git
repository with one commit, its own `.venv` made with the interpreter given by `--python`
(default: the one running this script, which is fixloop's) holding the project installed
editable and its pinned test dependencies. No `[tool.fixloop]`: the test command and the
interpreter are passed on the command line, as a person would.

Per project it prints: tests collected, the bare suite time (`.venv/bin/python -m pytest -q
-p no:cacheprovider` on the host, the command fixloop runs), `fixloop-tui verify` cold (the
first run) and warm (the second), warm/bare, and whether the verdict matches bare (green bare
must be `verify` ok; anything else is a fixloop bug); and for an iteration still red on one
failing test, its time with failing-tests-first and with the whole suite (`red iter s`:
first/whole, and the share; the acceptance line is under 20%).

fixloop remembers a project's passing test times in the person's cache and sizes later
per-test limits from them (`engine/verify/learned_times.py`). So that a bench does not depend
on what earlier ones taught, each project's verifications keep their times in a cache of their
own, empty at the start (the cold run starts from nothing; the warm runs have what it learned).
With `--learned`, two more verifications per project in another empty cache: one with
`--test-timeout 0` that teaches the times (`teach s`), then one with the default limits
(`learned s` and its verdict): what a person sees after that one run.

    python -m bench.real_projects [--backend gvisor|docker] [--projects a,b] [--runs N]
                                  [--python PATH] [--test-timeout S] [--learned] [--json]

Run it from the repository, as root or as a normal user (then `--python /usr/bin/python3`
or another interpreter that user can read); the docker backend needs an engine
(FIXLOOP_DOCKER_URL=unix:///run/fixloop/podman.sock).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import cast

from bench.errors import BenchFailed
from engine.batch.task_outcome import plain_members

REPO = Path(__file__).resolve().parent.parent
BARE_CMD = ["-m", "pytest", "-q", "-p", "no:cacheprovider"]
TEST_CMD = "python -m pytest -q"  # fixloop adds -p no:cacheprovider and its plugin
BACKENDS = ("gvisor", "docker")
SETUP_TIMEOUT_S = 900
SUITE_TIMEOUT_S = 1800
# Set-up files never committed: the developer's .gitignore has them (sdists rarely ship it).
IGNORED = ".venv/\n*.egg-info/\n__pycache__/\n.pytest_cache/\n.hypothesis/\nbuild/\n"


@dataclass(frozen=True)
class RealProject:
    """One project: where its sdist is, what it is pinned to, what it covers."""

    name: str
    version: str
    url: str  # the sdist on files.pythonhosted.org, as PyPI's simple index names it
    sha256: str
    licence: str
    covers: str
    test_deps: tuple[str, ...]  # pinned, installed next to `pip install -e .`

    @property
    def slug(self) -> str:
        return f"{self.name}-{self.version}"


PYTEST = "pytest==9.2.0"

PROJECTS: dict[str, RealProject] = {
    p.name: p
    for p in (
        RealProject(
            name="cachetools",
            version="8.0.3",
            url="https://files.pythonhosted.org/packages/de/4a/"
            "e1204e16df86b6381abdba73cde2e59cda5fbedb110400f335c5dd86fade/cachetools-8.0.3.tar.gz",
            sha256="79245d0d90464e29355f13658cd769e57d98ed06242d3c6fbd71796ca0938ef9",
            licence="MIT",
            covers="src layout installed editable; threaded tests (Barrier of 10 threads)",
            test_deps=(PYTEST,),
        ),
        RealProject(
            name="more-itertools",
            version="11.2.1",
            url="https://files.pythonhosted.org/packages/52/b8/"
            "c63995bebbb9ac9c059350e0fb8c82c2420c85aeca7d34e40aecf3df9281/"
            "more_itertools-11.2.1.tar.gz",
            sha256="cbf08fd0af284dc69718b9b76a8e6203df624d70209ea511e4219d350c856f63",
            licence="MIT",
            covers="a module of 5,644 lines (more.py); flat layout installed editable",
            test_deps=(PYTEST,),
        ),
        RealProject(
            name="boltons",
            version="26.2.0",
            url="https://files.pythonhosted.org/packages/71/56/"
            "14c4a4931910a81ddeccfbe227925ea738e3c445d3e2af960f0bcbba1616/boltons-26.2.0.tar.gz",
            sha256="d39cfd15c1a1c3bd4d705c82252fa9edb8e4f5e8cc039f8e39afac7b1b47e92c",
            licence="BSD-3-Clause",
            covers="threads serving sockets on localhost; many small modules",
            test_deps=(PYTEST,),
        ),
    )
}


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "fixloop" / "bench-projects"


def clean_env(**extra: str) -> dict[str, str]:
    """The caller's environment without what would leak this script's own imports or venv
    into the project's processes."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(extra)
    return env


def run(
    argv: list[str], cwd: Path, timeout: float, **extra: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv,
        cwd=cwd,
        env=clean_env(**extra),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def must(done: subprocess.CompletedProcess[str], what: str) -> None:
    if done.returncode != 0:
        raise BenchFailed(
            f"{what} failed (exit {done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )


def fetch_sdist(project: RealProject, downloads: Path) -> Path:
    """The sdist, downloaded once and checked against its pinned sha256 every time."""
    downloads.mkdir(parents=True, exist_ok=True)
    path = downloads / project.url.rsplit("/", 1)[1]
    if not path.exists():
        partial = path.with_suffix(".part")
        with urllib.request.urlopen(project.url, timeout=120) as response:
            partial.write_bytes(response.read())
        partial.rename(path)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != project.sha256:
        path.unlink()
        raise BenchFailed(f"{path.name}: sha256 {digest}, expected {project.sha256}; run again")
    return path


def unpack(sdist: Path, into: Path) -> None:
    """The sdist's one top directory becomes `into`: regular files and directories only."""
    scratch = Path(tempfile.mkdtemp(prefix=".unpack-", dir=into.parent))
    try:
        with tarfile.open(sdist) as archive:
            members = plain_members(archive)  # inside the archive, no links, never set-id
            for member in members:
                # Owned by whoever runs the bench: git refuses a repository another user owns.
                member.uid, member.gid = os.getuid(), os.getgid()
                member.uname = member.gname = ""
            archive.extractall(scratch, members=members)
        (top,) = scratch.iterdir()
        top.rename(into)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def set_up(project: RealProject, python: Path, root: Path) -> Path:
    """The project's checkout, committed, with `.venv` holding it editable and its test
    dependencies; made once, a `.fixloop-bench-ready` stamp in `.git` marks it done."""
    checkout = root / project.slug
    stamp = checkout / ".git" / "fixloop-bench-ready"
    if stamp.exists():
        return checkout
    if checkout.exists():
        shutil.rmtree(checkout)  # an earlier set-up that did not finish
    root.mkdir(parents=True, exist_ok=True)
    unpack(fetch_sdist(project, root / "downloads"), checkout)
    gitignore = checkout / ".gitignore"
    gitignore.write_text((gitignore.read_text() if gitignore.exists() else "") + IGNORED)
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@fixloop.invalid"]
    must(run(["git", "init", "-q", "-b", "main"], checkout, 60), "git init")
    must(run(["git", "add", "-A"], checkout, 60), "git add")
    must(run([*git, "commit", "-q", "-m", project.slug], checkout, 60), "git commit")
    must(run([str(python), "-m", "venv", ".venv"], checkout, 300), f"{python} -m venv .venv")
    pip = [str(checkout / ".venv" / "bin" / "python"), "-m", "pip", "install", "-q"]
    must(
        run([*pip, "-e", ".", *project.test_deps], checkout, SETUP_TIMEOUT_S),
        f"{project.slug}: pip install -e . {' '.join(project.test_deps)}",
    )
    status = run(["git", "status", "--porcelain"], checkout, 60)
    if status.stdout.strip():
        raise BenchFailed(f"{project.slug}: the set-up left changes in the tree:\n{status.stdout}")
    stamp.write_text(f"{python}\n")
    return checkout


@dataclass
class ProjectTimes:
    project: str
    covers: str
    collected: int | None = None
    bare_summary: str = ""
    bare_ok: bool = False
    bare_s: float = 0.0
    verify_status: list[str] = field(default_factory=list)  # one per verify run
    verify_s: list[float] = field(default_factory=list)  # cold first, then warm
    red_iteration_s: tuple[float, float] | None = None
    problem: str = ""  # the first not-ok verify's output, when bare was green
    # --learned: the teaching run (--test-timeout 0), then default limits from its times
    teach_s: float | None = None
    learned_s: float | None = None
    learned_status: str = ""

    @property
    def cold_s(self) -> float:
        return self.verify_s[0]

    @property
    def warm_s(self) -> float:
        return statistics.median(self.verify_s[1:]) if len(self.verify_s) > 1 else self.cold_s

    @property
    def ratio(self) -> float:
        return self.warm_s / self.bare_s if self.bare_s else 0.0

    @property
    def matches(self) -> bool:
        statuses = [*self.verify_status, *([self.learned_status] if self.learned_status else [])]
        ok = all(status == "ok" for status in statuses)
        return ok if self.bare_ok else not ok


SUMMARY = re.compile(r"^=*\s*(\d+ (passed|failed|error).*?)\s*=*$")


def bare(checkout: Path, runs: int) -> tuple[bool, str, float]:
    """The suite on the host, as its developer runs it: one untimed run (bytecode, page
    cache), then the median of `runs`."""
    argv = [str(checkout / ".venv" / "bin" / "python"), *BARE_CMD]
    times: list[float] = []
    done = run(argv, checkout, SUITE_TIMEOUT_S)
    for _ in range(runs):
        started = time.perf_counter()
        done = run(argv, checkout, SUITE_TIMEOUT_S)
        times.append(time.perf_counter() - started)
    lines = [m.group(1) for line in done.stdout.splitlines() if (m := SUMMARY.match(line))]
    return (
        done.returncode == 0,
        lines[-1] if lines else done.stdout[-200:],
        statistics.median(times),
    )


def verify(
    checkout: Path, backend: str, times: Path, test_timeout: float | None = None
) -> tuple[float, dict[str, object], str]:
    """`fixloop-tui verify` as a person runs it on the checkout, its test times kept under
    `times` (its XDG_CACHE_HOME): wall time, its JSON, output."""
    argv = [
        sys.executable, "-m", "tui.cli", "verify", str(checkout), "--json",
        "--sandbox", backend,
        "--python", str(checkout / ".venv" / "bin" / "python"),
        "--test-cmd", TEST_CMD,
        *(("--test-timeout", f"{test_timeout:g}") if test_timeout is not None else ()),
    ]  # fmt: skip
    started = time.perf_counter()
    done = run(argv, REPO, SUITE_TIMEOUT_S, XDG_CACHE_HOME=str(times))
    elapsed = time.perf_counter() - started
    try:
        result = json.loads(done.stdout)
    except json.JSONDecodeError:
        result = {"status": f"no JSON (exit {done.returncode})"}
    return elapsed, result, done.stdout[-4000:] + done.stderr[-4000:]


RED_TEST = "test_fixloop_bench_red.py"
RED_BODY = (
    "def test_fixloop_bench_red():\n"
    "    assert sum([1, 1]) == 3, 'the failing test the bench added'\n"
)


def red_iteration_times(
    checkout: Path, backend: str, runs: int, times: Path, test_timeout: float | None = None
) -> tuple[float, float]:
    """An iteration that is still red on one failing test, timed both ways: (with
    failing-tests-first, the whole suite), seconds, the median of `runs` each. One test that
    fails is added to the project's tests (removed after, never committed); a verification of
    the whole suite is the previous one, as in a run, and the next verification is timed with
    failing-tests-first (only that test runs) and without (the whole command again). Both
    are the engine's own `examine_tree` in one sandbox, as the loop calls it: no CLI start."""
    tests = checkout / "tests"
    red = (tests if tests.is_dir() else checkout) / RED_TEST
    red.write_text(RED_BODY)
    try:
        return asyncio.run(_red_times(checkout, backend, runs, times, test_timeout))
    finally:
        red.unlink()


async def _red_times(
    checkout: Path, backend: str, runs: int, times: Path, test_timeout: float | None
) -> tuple[float, float]:
    from engine.feedback.checkout import configured_verifier, open_configured_sandbox
    from engine.feedback.tree import examine_tree
    from engine.project.settings import load_settings
    from engine.verify.stages import configured_stages
    from engine.verify.verdict import Verdict
    from sandbox import BackendName

    python = checkout / ".venv" / "bin" / "python"
    flags = {"test_cmd": TEST_CMD, "sandbox": backend, "python": python}
    if test_timeout is not None:
        flags["test_timeout"] = test_timeout
    settings = load_settings(checkout, flags)
    sandbox = open_configured_sandbox(settings, cast(BackendName, backend))
    try:
        verifier = configured_verifier(
            sandbox,
            configured_stages(settings),
            settings,
            python,
            checkout,
            environ={"XDG_CACHE_HOME": str(times)},
        )
        whole_times: list[float] = []
        narrowed_times: list[float] = []
        previous = None
        for _ in range(runs):
            verifier.failing_first = False
            started = time.perf_counter()
            whole = await examine_tree(checkout, verifier, baseline=None)
            whole_times.append(time.perf_counter() - started)
            if whole.judgement.verdict is not Verdict.FAILING:
                raise BenchFailed(f"{checkout.name}: the suite with {RED_TEST} did not fail")
            previous = whole.stages
            verifier.failing_first = True
            started = time.perf_counter()
            narrowed = await examine_tree(checkout, verifier, baseline=None, previous=previous)
            narrowed_times.append(time.perf_counter() - started)
            ran = [stage.focus for stage in narrowed.stages if stage.focus is not None]
            if not ran or narrowed.judgement.verdict is not Verdict.FAILING:
                raise BenchFailed(f"{checkout.name}: failing-tests-first did not narrow the run")
    finally:
        await sandbox.close()
    return statistics.median(narrowed_times), statistics.median(whole_times)


def bench_project(
    project: RealProject,
    python: Path,
    backend: str,
    runs: int,
    test_timeout: float | None,
    learned: bool = False,
) -> ProjectTimes:
    checkout = set_up(project, python, cache_root())
    row = ProjectTimes(project=project.slug, covers=project.covers)
    row.bare_ok, row.bare_summary, row.bare_s = bare(checkout, runs)
    with tempfile.TemporaryDirectory(prefix="fixloop-bench-times-") as times:
        for _ in range(1 + runs):
            elapsed, result, output = verify(checkout, backend, Path(times), test_timeout)
            status = str(result.get("status"))
            row.verify_s.append(elapsed)
            row.verify_status.append(status)
            tests = result.get("tests")
            if isinstance(tests, dict) and row.collected is None:
                row.collected = tests.get("collected")
            if status != "ok" and row.bare_ok and not row.problem:
                row.problem = output
        row.red_iteration_s = red_iteration_times(
            checkout, backend, runs, Path(times), test_timeout
        )
    if learned:
        learn_times(row, checkout, backend)
    return row


def learn_times(row: ProjectTimes, checkout: Path, backend: str) -> None:
    """In an empty cache: one verification with no per-test limit, which teaches fixloop the
    suite's times, then one with the default limits, sized from them."""
    with tempfile.TemporaryDirectory(prefix="fixloop-bench-learned-") as times:
        row.teach_s, taught, output = verify(checkout, backend, Path(times), 0)
        if taught.get("status") != "ok" and row.bare_ok and not row.problem:
            row.problem = output
        row.learned_s, result, output = verify(checkout, backend, Path(times))
        row.learned_status = str(result.get("status"))
        if row.learned_status != "ok" and row.bare_ok and not row.problem:
            row.problem = output


def environment(backend: str, python: Path) -> dict[str, str]:
    runsc = shutil.which("runsc")
    version = (
        subprocess.run([runsc, "--version"], capture_output=True, text=True, check=False).stdout
        if runsc
        else ""
    )
    return {
        "cpus": str(os.cpu_count()),
        "load_at_start": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "user": f"uid {os.getuid()}",
        "backend": backend,
        "runsc": version.splitlines()[0] if version else "not found",
        "venv python": f"{python} ({platform.python_version()} runs fixloop)",
        "kernel": platform.release(),
    }


def seconds(value: float) -> str:
    return f"{value:.1f}"


def print_table(rows: list[ProjectTimes], env: dict[str, str], runs: int) -> None:
    print()
    for key, value in env.items():
        print(f"{key + ':':<15}{value}")
    print(f"{'runs:':<15}bare: 1 untimed, then the median of {runs}; verify: cold = the first,")
    print(f"{'':<15}warm = the median of the next {runs}; wall time of the whole command")
    print()
    header = (
        f"{'project':<22} {'tests':>6} {'bare s':>7} {'cold s':>7} {'warm s':>7} "
        f"{'warm/bare':>9} {'verdict':<14} {'red iter s':>11} {'share':>6}"
    )
    learned = any(row.learned_status for row in rows)
    if learned:
        header += f" {'teach s':>8} {'learned s':>9} {'learned':<8}"
    print(header)
    print("-" * len(header))
    for row in rows:
        verdict = ("ok" if row.bare_ok else "red") + (" = " if row.matches else " != ")
        verdict += "/".join(dict.fromkeys(row.verify_status))
        red = "n/a" if row.red_iteration_s is None else "/".join(map(seconds, row.red_iteration_s))
        share = (
            f"{row.red_iteration_s[0] / row.red_iteration_s[1]:.0%}"
            if row.red_iteration_s and row.red_iteration_s[1]
            else "n/a"
        )
        line = (
            f"{row.project:<22} {row.collected if row.collected is not None else '?':>6} "
            f"{seconds(row.bare_s):>7} {seconds(row.cold_s):>7} {seconds(row.warm_s):>7} "
            f"{row.ratio:>8.2f}x {verdict:<14} {red:>11} {share:>6}"
        )
        if learned:
            teach = seconds(row.teach_s) if row.teach_s is not None else "n/a"
            after = seconds(row.learned_s) if row.learned_s is not None else "n/a"
            line += f" {teach:>8} {after:>9} {row.learned_status or 'n/a':<8}"
        print(line)
    print()
    for row in rows:
        print(f"{row.project}: bare: {row.bare_summary}; covers: {row.covers}")
    for row in rows:
        if not row.matches:
            print(f"\n{row.project}: MISMATCH: bare {row.bare_summary}, verify {row.verify_status}")
            print(row.problem)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=BACKENDS, default="gvisor")
    parser.add_argument(
        "--projects", default=",".join(PROJECTS), help=f"of {','.join(PROJECTS)} (default all)"
    )
    parser.add_argument("--runs", type=int, default=1, help="timed warm runs (default 1)")
    parser.add_argument(
        "--python",
        type=Path,
        default=Path(sys.executable),
        help="interpreter the projects' .venv are made with (default: this one)",
    )
    parser.add_argument(
        "--test-timeout",
        type=float,
        help="fixloop's per-test limit (default: fixloop's own, 20 s; 0 for none)",
    )
    parser.add_argument(
        "--learned",
        action="store_true",
        help="also: one verify with --test-timeout 0 that teaches fixloop the suite's times, "
        "then one with the default limits (in a cache of their own)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args()
    names = [name for name in args.projects.split(",") if name]
    unknown = set(names) - set(PROJECTS)
    if not names or unknown:
        parser.error(f"--projects: choose from {', '.join(PROJECTS)}")
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    env = environment(args.backend, args.python)
    rows: list[ProjectTimes] = []
    try:
        for name in names:
            print(f"real-projects: {name} ...", file=sys.stderr, flush=True)
            rows.append(
                bench_project(
                    PROJECTS[name],
                    args.python,
                    args.backend,
                    args.runs,
                    args.test_timeout,
                    learned=args.learned,
                )
            )
    except BenchFailed as exc:
        sys.exit(f"real-projects: {exc}")
    if args.json:
        print(json.dumps({"environment": env, "rows": [asdict(r) for r in rows]}, indent=2))
    else:
        print_table(rows, env, args.runs)
    sys.exit(0 if all(row.matches for row in rows) else 1)


if __name__ == "__main__":
    main()
