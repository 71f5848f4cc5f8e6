"""Hostile programs against the real gVisor backends: runsc directly, and through a
Docker-compatible engine (Podman with runsc as its runtime; Docker Engine with runsc for
the cases marked `also_on_docker_engine`).

Each test runs one kind of misbehaving job and asserts two things: how the
result is classified, and that the host is unchanged afterwards (no container,
cgroup, bundle or host process of ours left; no host file created or changed).
"""

from __future__ import annotations

import asyncio
import os
import re
import socket
import sys
import time
import tracemalloc
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox.bundle import INSIDE_DIR, SANDBOX_WORKDIR
from sandbox.contract import ExecRequest, Limits
from sandbox.docker.backend import DockerSandbox
from sandbox.errors import WorkspaceRefused
from sandbox.gvisor import GvisorSandbox
from sandbox.owners import skeleton_dir
from tests.conftest import also_on_docker_engine
from tests.sandbox.hostile_helpers import (
    assert_host_clean,
    host_process_count,
    leftovers,
    python_job,
    rss_bytes,
    sandbox_memory_bytes,
    settled_process_count,
    snapshot,
)

pytestmark = pytest.mark.sandbox

# Every test runs against both backends that isolate with gVisor (the `isolating`
# fixtures in conftest.py): runsc driven directly, and the docker backend on Podman. Those
# marked `also_on_docker_engine` run on Docker Engine as well: each limit, boundary and
# clean-up the engine enforces (timeout kill, pids, memory and OOM, read-only root, no
# network, environment, output cap, cancellation, user and capabilities, a warm pool's
# isolation). Left to Podman: cases that exercise only fixloop's own side (the workspace
# copy, links in it, pytest's exit codes, a long print, the shell's fork bomb), which every
# engine runs the same way; CI's time (~30 min on 2 cores) does not allow all of them twice.
Isolating = GvisorSandbox | DockerSandbox

MIB = 2**20


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A small project on the host, copied into each job's sandbox."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "hello.txt").write_text("hello from the host\n")
    (root / "pkg").mkdir()
    (root / "pkg" / "module.py").write_text("VALUE = 1\n")
    return root


@pytest.fixture
def home_canary() -> Iterator[tuple[Path, str]]:
    """A secret file in the host user's home: (its path, its content)."""
    secret = f"fixloop-secret-{uuid.uuid4().hex}"
    path = Path.home() / f".fixloop-canary-{uuid.uuid4().hex}"
    path.write_text(secret + "\n")
    try:
        yield path, secret
    finally:
        path.unlink(missing_ok=True)


# --- time, processes, memory --------------------------------------------------


@also_on_docker_engine()
async def test_infinite_loop_is_killed_at_the_timeout(isolating: Isolating) -> None:
    # Starting and removing a sandbox costs the same for every job; measure it
    # so the bound below is about the timeout alone.
    started = time.monotonic()
    await isolating.run(python_job("pass"))
    overhead = time.monotonic() - started

    started = time.monotonic()
    result = await isolating.run(python_job("while True: pass", timeout_s=2))
    elapsed = time.monotonic() - started

    assert result.timed_out
    assert result.exit_code == 124
    assert result.duration_ms < (2 + 2) * 1000
    assert elapsed - overhead < 2 + 2, f"{elapsed=:.1f} s, of which {overhead=:.1f} s for any job"
    await assert_host_clean(isolating)


PYTHON_FORK_BOMB = """
import os
while True:
    try:
        os.fork()
    except OSError:
        pass
"""

SHELL_FORK_BOMB = "bomb() { bomb | bomb & }; bomb; sleep 30"


async def _run_fork_bomb(isolating: Isolating, request: ExecRequest) -> None:
    """Run a fork bomb; it must end, stay bounded on the host and leave nothing."""
    baseline = host_process_count()
    peak = baseline
    running = asyncio.create_task(isolating.run(request))
    while not running.done():
        peak = max(peak, await asyncio.to_thread(host_process_count))
        await asyncio.sleep(0.05)
    result = running.result()

    assert result.timed_out or result.oom_killed or result.exit_code != 0, result
    # At most `pids` guest processes, each carried by one host stub, plus runsc's own.
    assert peak - baseline <= 2 * request.limits.pids, f"{peak=} {baseline=}"
    settled = await settled_process_count(at_most=baseline + 10)
    assert settled <= baseline + 10, f"{settled=} {baseline=}"
    await assert_host_clean(isolating)


@also_on_docker_engine()
async def test_python_fork_bomb_is_contained(isolating: Isolating) -> None:
    await _run_fork_bomb(isolating, python_job(PYTHON_FORK_BOMB, timeout_s=3))


async def test_shell_fork_bomb_is_contained(isolating: Isolating) -> None:
    request = ExecRequest(argv=["sh", "-c", SHELL_FORK_BOMB], limits=Limits(timeout_s=3))
    await _run_fork_bomb(isolating, request)


MEMORY_BOMB = """
hoard = []
while True:
    hoard.append(bytearray(64 * 2**20))
"""

# Every child stays under RLIMIT_AS; together they are far over the cgroup limit.
FORKED_MEMORY_BOMB = """
import os, time
for _ in range(6):
    if os.fork() == 0:
        block = b"x" * (200 * 2**20)
        time.sleep(30)
        os._exit(0)
for _ in range(6):
    os.wait()
"""


@also_on_docker_engine()
async def test_memory_bomb_is_stopped_at_the_memory_limit(isolating: Isolating) -> None:
    rss_before = rss_bytes()
    result = await isolating.run(python_job(MEMORY_BOMB, memory_mb=256, timeout_s=15))

    assert result.oom_killed or "MemoryError" in result.stderr, result
    assert not result.timed_out
    assert rss_bytes() - rss_before < 50 * MIB
    await assert_host_clean(isolating)


@also_on_docker_engine()
async def test_memory_bomb_across_processes_is_oom_killed(isolating: Isolating) -> None:
    rss_before = rss_bytes()
    result = await isolating.run(python_job(FORKED_MEMORY_BOMB, memory_mb=256, timeout_s=15))

    assert result.oom_killed, result
    assert not result.timed_out
    assert result.exit_code != 0
    assert rss_bytes() - rss_before < 50 * MIB
    await assert_host_clean(isolating)


# --- files ----------------------------------------------------------------------

WRITE_ATTEMPTS = """
import sys
for path in sys.argv[1:]:
    try:
        with open(path, "a") as handle:
            handle.write("# fixloop-canary-write\\n")
    except OSError as exc:
        print(path, "DENIED", type(exc).__name__)
    else:
        print(path, "WROTE")
"""


@also_on_docker_engine()
async def test_writes_outside_the_workspace_never_reach_the_host(
    isolating: Isolating, workspace: Path
) -> None:
    tag = uuid.uuid4().hex[:8]
    home_target = Path.home() / "fixloop-canary-write"
    assert not home_target.exists(), f"remove the stale {home_target} first"
    # Where the job writes inside -> the host paths that would show the write.
    targets: dict[str, list[Path]] = {
        f"/etc/fixloop-canary-{tag}": [Path(f"/etc/fixloop-canary-{tag}")],
        "/etc/passwd": [Path("/etc/passwd")],
        f"/usr/fixloop-canary-{tag}": [Path(f"/usr/fixloop-canary-{tag}")],
        f"/fixloop-canary-{tag}": [Path(f"/fixloop-canary-{tag}")],
        str(home_target): [home_target],
        str(workspace / "fixloop-canary-write"): [workspace / "fixloop-canary-write"],
        # The interpreter trees and the zygote are real host dirs mounted read-only.
        f"{sys.prefix}/pyvenv.cfg": [Path(sys.prefix) / "pyvenv.cfg"],
        os.__file__: [Path(os.__file__)],
        "/fixloop/lib/zygote.py": [INSIDE_DIR / "zygote.py"],
        f"/fixloop/lib/fixloop-canary-{tag}": [INSIDE_DIR / f"fixloop-canary-{tag}"],
    }
    watched = [path for paths in targets.values() for path in paths]
    # The read-only roots all sandboxes share (not another process's half-built one).
    skeletons = [p for p in skeleton_dir().glob("rootfs-*") if "staging" not in p.name]
    before = snapshot(*watched, workspace, *skeletons)

    result = await isolating.run(python_job(WRITE_ATTEMPTS, *targets, workdir=workspace))

    outcomes = dict(line.split(" ", 1) for line in result.stdout.splitlines())
    assert {path: outcome.split()[0] for path, outcome in outcomes.items()} == dict.fromkeys(
        targets, "DENIED"
    ), result
    assert snapshot(*watched, workspace, *skeletons) == before
    await assert_host_clean(isolating)


SECRET_HUNT = """
import os, sys
canary, prune, tops = sys.argv[1], set(sys.argv[2].split(",")), sys.argv[3:]
try:
    print("DIRECT", open(canary).read())
except OSError as exc:
    print("DIRECT DENIED", type(exc).__name__)
scanned = 0
for top in tops:
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = [d for d in dirnames if os.path.join(dirpath, d) not in prune]
        for name in filenames:
            path = os.path.join(dirpath, name)
            try:
                if not os.path.isfile(path) or os.path.getsize(path) > 2**20:
                    continue
                data = open(path, "rb").read()
            except OSError:
                continue
            scanned += 1
            for line in data.splitlines():
                if b"fixloop-secret-" in line:
                    print("FOUND", path, line.decode(errors="replace"))
print("SCANNED", scanned)
"""


@also_on_docker_engine()
async def test_secret_in_host_home_is_invisible_inside(
    isolating: Isolating, workspace: Path, home_canary: tuple[Path, str]
) -> None:
    canary, secret = home_canary
    # A planted secret in the workspace proves the hunt finds what it can see.
    (workspace / "control.txt").write_text("fixloop-secret-control\n")
    # The interpreter trees are mounted on purpose and are large; the canary is not in them.
    prune = ",".join(dict.fromkeys([sys.prefix, sys.base_prefix]))
    tops = dict.fromkeys(
        [
            str(Path.home()),
            "/root",
            "/home",
            "/tmp",
            "/fixloop",
            "/work",
            "/run",
            "/var",
            "/mnt",
            "/srv",
            "/opt",
            "/etc",
            "/dev/shm",
        ]
    )

    result = await isolating.run(
        python_job(SECRET_HUNT, str(canary), prune, *tops, workdir=workspace)
    )

    assert "DIRECT DENIED FileNotFoundError" in result.stdout, result
    assert "FOUND /fixloop/work/control.txt fixloop-secret-control" in result.stdout, result
    assert secret not in result.stdout + result.stderr
    assert not result.truncated
    await assert_host_clean(isolating)


ENV_DUMP = """
import os
print("ENVIRON", dict(os.environ))
for pid in ["self", "1", *[p for p in os.listdir("/proc") if p.isdigit()]]:
    try:
        print(f"/proc/{pid}/environ", open(f"/proc/{pid}/environ", "rb").read())
    except OSError as exc:
        print(f"/proc/{pid}/environ DENIED", type(exc).__name__)
"""


@also_on_docker_engine()
async def test_host_api_key_is_not_in_the_jobs_environment(
    isolating: Isolating, monkeypatch: pytest.MonkeyPatch
) -> None:
    canary = f"sk-canary-{uuid.uuid4().hex}"
    monkeypatch.setenv("OPENAI_API_KEY", canary)
    request = ExecRequest(
        argv=["python", "-c", ENV_DUMP], env={"FIXLOOP_PROBE": "asked-for"}, limits=Limits()
    )

    result = await isolating.run(request)

    assert "'FIXLOOP_PROBE': 'asked-for'" in result.stdout, result  # the dump works
    assert "/proc/self/environ b'" in result.stdout
    assert "/proc/1/environ b'" in result.stdout
    assert canary not in result.stdout + result.stderr
    assert "OPENAI_API_KEY" not in result.stdout + result.stderr
    await assert_host_clean(isolating)


READ_THROUGH_LINK = """
import os, sys
link = sys.argv[1]
print("LINK", os.readlink(link))
try:
    if os.path.isdir(link):
        for name in os.listdir(link):
            print("ENTRY", name)
            print("CONTENT", open(os.path.join(link, name)).read())
    else:
        print("CONTENT", open(link).read())
except OSError as exc:
    print("DENIED", type(exc).__name__)
"""


async def test_workspace_link_to_a_host_file_reads_nothing_of_it(
    isolating: Isolating, workspace: Path, home_canary: tuple[Path, str]
) -> None:
    canary, secret = home_canary
    (workspace / "leak").symlink_to(canary)

    with pytest.raises(WorkspaceRefused) as refused:  # refused before anything runs
        await isolating.run(python_job(READ_THROUGH_LINK, "leak", workdir=workspace))

    assert secret not in str(refused.value)
    await assert_host_clean(isolating)


async def test_workspace_link_to_the_host_home_shows_none_of_it(
    isolating: Isolating, workspace: Path, home_canary: tuple[Path, str]
) -> None:
    canary, secret = home_canary
    (workspace / "leakdir").symlink_to(Path.home())

    with pytest.raises(WorkspaceRefused) as refused:  # refused before anything runs
        await isolating.run(python_job(READ_THROUGH_LINK, "leakdir", workdir=workspace))

    assert canary.name not in str(refused.value)
    assert secret not in str(refused.value)
    await assert_host_clean(isolating)


# --- network --------------------------------------------------------------------

CONNECT = """
import socket, sys
for target in sys.argv[1:]:
    host, port = target.rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=2).close()
    except OSError as exc:
        print(target, "FAILED", type(exc).__name__)
    else:
        print(target, "CONNECTED")
print("INTERFACES", [name for _, name in socket.if_nameindex()])
"""


def _connect_outcomes(stdout: str) -> dict[str, str]:
    lines = [line.split() for line in stdout.splitlines() if not line.startswith("INTERFACES")]
    return {parts[0]: parts[1] for parts in lines}


@also_on_docker_engine()
async def test_host_loopback_listener_is_unreachable(isolating: Isolating) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.setblocking(False)
        target = f"127.0.0.1:{listener.getsockname()[1]}"

        result = await isolating.run(python_job(CONNECT, target))

        assert _connect_outcomes(result.stdout) == {target: "FAILED"}, result
        with pytest.raises(BlockingIOError):
            listener.accept()  # nobody ever connected
    await assert_host_clean(isolating)


@also_on_docker_engine()
async def test_public_addresses_are_unreachable(isolating: Isolating) -> None:
    targets = ["1.1.1.1:53", "8.8.8.8:53", "1.1.1.1:443"]

    result = await isolating.run(python_job(CONNECT, *targets))

    assert _connect_outcomes(result.stdout) == dict.fromkeys(targets, "FAILED"), result
    assert "INTERFACES ['lo']" in result.stdout
    await assert_host_clean(isolating)


DNS_LOOKUPS = """
import socket, struct
try:
    print("GETADDRINFO", socket.getaddrinfo("example.com", 443)[0][4])
except OSError as exc:
    print("GETADDRINFO FAILED", type(exc).__name__)
# One A-record question for example.com, recursion desired.
header = struct.pack(">6H", 0x1234, 0x0100, 1, 0, 0, 0)
query = header + b"\\x07example\\x03com\\x00" + struct.pack(">2H", 1, 1)
for server in ["1.1.1.1", "8.8.8.8"]:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        udp.settimeout(2)
        try:
            udp.sendto(query, (server, 53))
            print("UDP", server, "ANSWERED", len(udp.recv(512)))
        except OSError as exc:
            print("UDP", server, "FAILED", type(exc).__name__)
"""


@also_on_docker_engine()
async def test_dns_lookups_fail(isolating: Isolating) -> None:
    result = await isolating.run(python_job(DNS_LOOKUPS))

    assert "GETADDRINFO FAILED" in result.stdout, result
    assert "UDP 1.1.1.1 FAILED" in result.stdout
    assert "UDP 8.8.8.8 FAILED" in result.stdout
    assert "ANSWERED" not in result.stdout
    await assert_host_clean(isolating)


# --- output and lingering processes ---------------------------------------------

OUTPUT_FLOOD = """
import sys
block = b"x" * 2**20
for _ in range(50):
    sys.stdout.buffer.write(block)
sys.stdout.buffer.write(b"\\nEND-OF-FLOOD\\n")
"""


@also_on_docker_engine()
async def test_50_mb_of_output_is_capped_without_growing_fixloop(isolating: Isolating) -> None:
    cap = 1_000_000
    tracemalloc.start()
    try:
        result = await isolating.run(python_job(OUTPUT_FLOOD, output_bytes=cap, timeout_s=30))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert result.exit_code == 0, result.stderr
    assert result.truncated
    assert len(result.stdout.encode()) <= cap + 100
    assert result.stdout.endswith("END-OF-FLOOD\n")  # the tail was drained, not cut off
    dropped = re.search(r"fixloop dropped (\d+) bytes", result.stdout)
    assert dropped is not None
    assert int(dropped.group(1)) >= 49 * MIB
    assert peak < 10 * MIB, f"fixloop allocated {peak / MIB:.1f} MiB reading the output"
    await assert_host_clean(isolating)


async def test_a_long_unbuffered_print_reaches_the_host_whole(isolating: Isolating) -> None:
    # Jobs run with PYTHONUNBUFFERED=1, so each print is one write() of the whole line.
    code = "print('y' * 500_000)\nprint('END')"

    result = await isolating.run(python_job(code, output_bytes=2_000_000))

    assert result.exit_code == 0, result.stderr
    assert result.stdout == "y" * 500_000 + "\nEND\n"
    await assert_host_clean(isolating)


LINGERING_CHILDREN = """
import os, signal, time
if os.fork() == 0:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    time.sleep(1000)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(1000)  # the daemon still holds stdout and stderr
    os._exit(0)
print("main done", flush=True)
"""


@also_on_docker_engine()
async def test_job_ends_when_its_main_process_exits_despite_lingering_children(
    isolating: Isolating,
) -> None:
    result = await isolating.run(python_job(LINGERING_CHILDREN, timeout_s=30))

    assert result.exit_code == 0, result
    assert not result.timed_out
    assert result.stdout == "main done\n"
    assert result.duration_ms < 5000
    await assert_host_clean(isolating)


# Sleeps holding memory the host can see, so the test knows the job has begun.
SLEEP_HOLDING_BALLAST = """
import time
ballast = b"x" * (300 * 2**20)
time.sleep(30)
"""


@also_on_docker_engine()
async def test_cancelling_the_caller_mid_job_leaves_nothing(isolating: Isolating) -> None:
    job = asyncio.create_task(
        isolating.run(python_job(SLEEP_HOLDING_BALLAST, memory_mb=1024, timeout_s=60))
    )
    while await asyncio.to_thread(sandbox_memory_bytes) < 250 * MIB:
        assert not job.done(), job
        await asyncio.sleep(0.1)
    await asyncio.sleep(1)

    job.cancel()
    cancelled_at = time.monotonic()
    with pytest.raises(asyncio.CancelledError):
        await job

    assert time.monotonic() - cancelled_at < 5
    await assert_host_clean(isolating)


# --- pytest inside --------------------------------------------------------------

PYTEST = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider"]

MIXED_TESTS = """
import pytest

def test_one():
    assert True

def test_two():
    assert True

def test_three():
    assert True

def test_four():
    assert 1 == 2

@pytest.mark.skip(reason="not today")
def test_five():
    pass
"""


def _pytest_job(workdir: Path) -> ExecRequest:
    return ExecRequest(argv=PYTEST, workdir=workdir, limits=Limits(timeout_s=30))


@also_on_docker_engine()
async def test_pytest_inside_counts_passes_failures_and_skips(
    isolating: Isolating, tmp_path: Path
) -> None:
    (tmp_path / "test_mixed.py").write_text(MIXED_TESTS)

    result = await isolating.run(_pytest_job(tmp_path))

    assert result.exit_code == 1, result
    assert "1 failed, 3 passed, 1 skipped" in result.stdout
    await assert_host_clean(isolating)


async def test_pytest_inside_exits_0_when_all_pass(isolating: Isolating, tmp_path: Path) -> None:
    (tmp_path / "test_ok.py").write_text("def test_a():\n    pass\n\ndef test_b():\n    pass\n")

    result = await isolating.run(_pytest_job(tmp_path))

    assert result.exit_code == 0, result
    assert "2 passed" in result.stdout
    await assert_host_clean(isolating)


async def test_pytest_inside_exits_5_without_tests(isolating: Isolating, tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("no tests here\n")

    result = await isolating.run(_pytest_job(tmp_path))

    assert result.exit_code == 5, result
    assert "no tests ran" in result.stdout
    await assert_host_clean(isolating)


# --- the workspace and who the job is -------------------------------------------

WORKSPACE_EDITS = """
import os, shutil
with open("new.txt", "w") as handle:
    handle.write("made inside\\n")
with open("hello.txt", "a") as handle:
    handle.write("edited inside\\n")
os.remove("pkg/module.py")
os.makedirs("made/inside")
shutil.rmtree("pkg")
print(os.getcwd(), sorted(os.listdir(".")), open("new.txt").read().strip())
"""


async def test_workspace_is_a_writable_copy_whose_edits_stay_inside(
    isolating: Isolating, workspace: Path
) -> None:
    before = snapshot(workspace)

    result = await isolating.run(python_job(WORKSPACE_EDITS, workdir=workspace))

    assert result.exit_code == 0, result
    assert result.stdout == f"{SANDBOX_WORKDIR} ['hello.txt', 'made', 'new.txt'] made inside\n"
    assert snapshot(workspace) == before
    await assert_host_clean(isolating)


IDENTITY = """
import os
status = dict(line.split(":", 1) for line in open("/proc/self/status"))
print("IDS", os.getuid(), os.geteuid(), os.getgid(), os.getegid())
# An engine may list the primary group again as a supplementary one; that grants nothing.
print("OTHER GROUPS", sorted(set(os.getgroups()) - {os.getgid()}))
for name in ("CapEff", "CapPrm", "CapBnd", "CapAmb"):
    if name in status:
        print(name, status[name].strip())
"""


@also_on_docker_engine()
async def test_job_runs_as_nobody_without_capabilities(isolating: Isolating) -> None:
    result = await isolating.run(python_job(IDENTITY))

    assert "IDS 65534 65534 65534 65534\n" in result.stdout, result
    assert "OTHER GROUPS []\n" in result.stdout
    assert "CapEff 0000000000000000" in result.stdout
    assert "CapPrm 0000000000000000" in result.stdout
    assert "CapBnd 0000000000000000" in result.stdout
    await assert_host_clean(isolating)


# --- the warm pool ---------------------------------------------------------------

LEAVE_TRACES = """
import subprocess
for path in ("/fixloop/work/trace.txt", "/tmp/trace.txt", "/dev/shm/trace.txt"):
    with open(path, "w") as handle:
        handle.write("left by job 1\\n")
subprocess.Popen(["sleep", "1000"], start_new_session=True)
print("traces left")
"""

LOOK_FOR_TRACES = """
import os
for path in ("/fixloop/work/trace.txt", "/tmp/trace.txt", "/dev/shm/trace.txt"):
    print(path, "SEEN" if os.path.exists(path) else "ABSENT")
for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
    try:
        print("PROCESS", open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\\0", b" "))
    except OSError:
        pass
"""


@also_on_docker_engine("isolating_pool")
async def test_pooled_job_sees_no_trace_of_the_previous_job(
    isolating_pool: Isolating,
) -> None:
    first = await isolating_pool.run(python_job(LEAVE_TRACES))
    assert first.stdout == "traces left\n", first

    second = await isolating_pool.run(python_job(LOOK_FOR_TRACES))

    # No file of job 1 (lines of the listing only: a command line may quote the code).
    seen = [line for line in second.stdout.splitlines() if line.startswith("/")]
    assert [line.rsplit(" ", 1)[1] for line in seen] == ["ABSENT"] * 3, second
    processes = [line for line in second.stdout.splitlines() if line.startswith("PROCESS")]
    assert processes  # the job sees at least itself
    assert not [line for line in processes if "sleep" in line]  # nor its process
    await isolating_pool.close()
    await assert_host_clean(isolating_pool)


async def test_closing_the_pool_leaves_nothing_even_while_sandboxes_start(
    isolating_pool: Isolating,
) -> None:
    request = python_job("print('ok')")
    await isolating_pool.warm(request)
    result = await isolating_pool.run(request)  # took a warm sandbox, so a replacement starts
    assert result.stdout == "ok\n", result
    assert (await asyncio.to_thread(leftovers, isolating_pool)).containers

    await isolating_pool.close()

    await assert_host_clean(isolating_pool)
