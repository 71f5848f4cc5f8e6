"""The gvisor backend as a normal user: `runsc --rootless`, the user's own private
directories, rlimits and the memory watch instead of a cgroup, leftovers of a dead
process reaped, `auto` and `doctor`; and the docker backend under the user's rootless
Podman (`fixloop-tui sandbox engine`), which limits nothing itself. The real-sandbox tests
need a normal user:
they are marked `rootless`, left out of a plain `pytest`, and `.ci/rootless` runs them (and
the hostile suite) as one.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from engine.doctor import check_docker
from sandbox import choose_backend, open_sandbox
from sandbox.bundle import MIB, THREAD_ROOM_MB, Profile, write_bundle
from sandbox.contract import Limits
from sandbox.docker.backend import DockerSandbox
from sandbox.errors import SandboxUnavailable
from sandbox.gvisor import GvisorSandbox
from sandbox.interpreter import default_python, probe
from sandbox.memory_watch import stats_bytes, stats_command
from sandbox.owners import private_dir, runtime_dir, skeleton_dir
from sandbox.runsc import find_runsc, list_containers, user_namespace_problem
from tests.conftest import open_backend
from tests.sandbox.hostile_helpers import assert_host_clean, python_job

REPO = Path(__file__).resolve().parents[2]

# --- without a sandbox (as anyone) --------------------------------------------------


def test_user_namespaces_switched_off_name_the_sysctl_that_turns_them_on(tmp_path: Path) -> None:
    (tmp_path / "kernel").mkdir()
    (tmp_path / "user").mkdir()
    (tmp_path / "user" / "max_user_namespaces").write_text("15000\n")
    (tmp_path / "kernel" / "unprivileged_userns_clone").write_text("0\n")

    problem = user_namespace_problem(tmp_path)

    assert problem is not None
    assert "kernel.unprivileged_userns_clone = 0" in problem
    assert "sysctl -w kernel.unprivileged_userns_clone=1" in problem
    (tmp_path / "kernel" / "unprivileged_userns_clone").write_text("1\n")
    assert user_namespace_problem(tmp_path) is None


def test_a_kernel_without_the_knobs_does_not_block(tmp_path: Path) -> None:
    assert user_namespace_problem(tmp_path) is None


def test_a_private_dir_someone_else_made_first_is_refused(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        squatted = tmp_path / "fixloop-1001"
        squatted.mkdir(mode=0o777)
        os.chown(squatted, 65534, 65534)
    else:
        squatted = Path("/usr")  # root's: a normal user can neither own nor chmod it

    with pytest.raises(SandboxUnavailable, match="is not a directory of this user's"):
        private_dir(squatted)


def test_a_private_dir_that_cannot_be_made_says_which_variables_to_set(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory\n")

    with pytest.raises(SandboxUnavailable, match="set XDG_CACHE_HOME and XDG_RUNTIME_DIR"):
        private_dir(blocker / "runtime")


def test_a_private_dir_is_made_0700_and_tightened_if_ours_but_open(tmp_path: Path) -> None:
    made = private_dir(tmp_path / "new" / "runtime")
    assert stat.S_IMODE(made.stat().st_mode) == 0o700
    opened = tmp_path / "opened"
    opened.mkdir(mode=0o755)
    assert stat.S_IMODE(private_dir(opened).stat().st_mode) == 0o700


def test_a_rootless_bundle_claims_no_cgroup_limit_and_leaves_the_watch_room(
    tmp_path: Path,
) -> None:
    profile = Profile.of(probe(default_python()), Limits(memory_mb=300, pids=32))

    write_bundle(tmp_path, tmp_path, profile, None, rootless=True)

    config = json.loads((tmp_path / "config.json").read_text())
    assert "resources" not in config["linux"]  # runsc --ignore-cgroups would not enforce it
    rlimits = {r["type"]: r["hard"] for r in config["process"]["rlimits"]}
    # Over the limit, plus room for threads' stacks: the watch kills first.
    assert rlimits["RLIMIT_AS"] == (600 + THREAD_ROOM_MB) * MIB
    assert rlimits["RLIMIT_NPROC"] == 32
    assert rlimits["RLIMIT_FSIZE"] == profile.tmpfs_mb * MIB
    assert config["process"]["user"] == {"uid": 65534, "gid": 65534}


# Captured here: the command line of the sentry rootless Podman started (trimmed) and what
# `runsc events --stats` said of it while its job held 100 MiB.
ENGINE_SENTRY = [
    "runsc-sandbox",
    "--root=/tmp/xdg-1002/runsc",
    "--network=none",
    "--ignore-cgroups=true",
    "boot",
    "--proc-mount-sync-fd=22",
    "--bundle=/home/fxtest/.local/share/fixloop/podman/vfs-containers/a740/userdata",
    "a740",
]
ENGINE_STATS = (
    b'{"type":"stats","id":"a740","data":{"cpu":{"usage":{"total":58224033360732}},'
    b'"memory":{"usage":{"limit":0,"usage":122638336,"failcnt":0},"swap":{"limit":0,'
    b'"failcnt":0}},"pids":{"current":4}}}\n'
)


def test_a_rootless_engines_sentry_is_asked_with_the_flags_it_was_started_with() -> None:
    command = stats_command("/usr/bin/runsc", ENGINE_SENTRY, "a740")

    assert command == [
        "/usr/bin/runsc",
        "--root=/tmp/xdg-1002/runsc",
        "--network=none",
        "--ignore-cgroups=true",
        "events",
        "--stats",
        "a740",
    ]
    assert stats_bytes(ENGINE_STATS) == 122638336
    assert stats_bytes(b"container not found\n") == 0


# --- as a normal user, with the real sandbox ----------------------------------------


def as_a_user(test: Callable[..., object]) -> Callable[..., object]:
    """Runs only as a normal user: marked `rootless` (deselected by default) and failing as
    root."""
    return pytest.mark.rootless(pytest.mark.usefixtures("normal_user")(test))


@pytest.mark.sandbox
@as_a_user
async def test_a_users_sandboxes_live_in_private_dirs_of_their_own(
    gvisor: GvisorSandbox,
) -> None:
    result = await gvisor.run(python_job("print('hi')"))

    assert result.stdout == "hi\n", result
    assert runtime_dir() != Path("/run/fixloop")
    for directory in (runtime_dir(), runtime_dir() / "runsc", runtime_dir() / "bundles"):
        info = directory.stat()
        assert (info.st_uid, stat.S_IMODE(info.st_mode)) == (os.geteuid(), 0o700), directory
    assert list(skeleton_dir().glob("rootfs-*")), "no skeleton root in the user's cache"
    assert Path.home() in skeleton_dir().parents or "XDG_CACHE_HOME" in os.environ
    assert gvisor.description.startswith("gvisor (runsc --rootless")
    await assert_host_clean(gvisor)


MEMORY_BOMB = """
hoard = []
while True:
    hoard.append(bytearray(32 * 2**20))
"""


@pytest.mark.sandbox
@as_a_user
async def test_a_memory_bomb_is_killed_as_oom_not_left_to_a_memory_error(
    gvisor: GvisorSandbox,
) -> None:
    result = await gvisor.run(python_job(MEMORY_BOMB, memory_mb=256, timeout_s=20))

    assert result.oom_killed, result
    # Killed by the memory watch, not ended by a MemoryError (exit 1). On a loaded machine the
    # watch (one look per 50 ms) may come after RLIMIT_AS (twice the limit) has already
    # raised a MemoryError in the job, whose traceback then is in stderr: the job is still
    # killed, and reported, as out of memory.
    assert result.exit_code == 128 + signal.SIGKILL
    assert not result.timed_out
    await assert_host_clean(gvisor)


@pytest.mark.sandbox
@as_a_user
async def test_memory_under_the_limit_is_no_oom(gvisor: GvisorSandbox) -> None:
    code = "block = b'x' * (120 * 2**20)\nprint(len(block) // 2**20)"

    result = await gvisor.run(python_job(code, memory_mb=256))

    assert (result.exit_code, result.stdout, result.oom_killed) == (0, "120\n", False), result


@pytest.mark.sandbox
@as_a_user
def test_auto_takes_the_rootless_gvisor_backend(tmp_path: Path) -> None:
    choice = choose_backend("auto", docker_url=f"unix://{tmp_path}/no-engine.sock")
    backend = open_sandbox(choice)

    assert choice == "gvisor"
    assert isinstance(backend, GvisorSandbox)
    assert backend.description.startswith("gvisor (runsc --rootless")


@pytest.mark.sandbox
@as_a_user
def test_doctor_as_a_user_exits_0_and_every_line_is_ok_or_optional_with_its_fix(
    tmp_path: Path,
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tui.cli", "doctor", "--json", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={"PATH": "/usr/bin:/bin", "HOME": str(Path.home())},
        timeout=300,
        check=False,
    )

    assert done.returncode == 0, done.stdout + done.stderr
    checks = {c["name"]: c for c in json.loads(done.stdout)["checks"]}
    assert checks["gvisor sandbox"]["ok"], checks["gvisor sandbox"]
    assert "runsc --rootless" in checks["gvisor sandbox"]["detail"]
    assert "memory watched from outside" in checks["limits"]["detail"]
    for check in checks.values():
        assert check["ok"] or (not check["needed"] and check["fix"]), check


# Runs a job that holds memory the host can see, says so once it does, and waits to be killed.
HOLDER = """
import asyncio, sys
sys.path.insert(0, {repo!r})
from sandbox.gvisor import GvisorSandbox
from tests.sandbox.hostile_helpers import python_job, sandbox_memory_bytes

async def main():
    backend = GvisorSandbox()
    job = "import time; ballast = b'x' * (100 * 2**20); time.sleep(600)"
    running = asyncio.create_task(backend.run(python_job(job, timeout_s=900)))
    while sandbox_memory_bytes() < 100 * 2**20:
        await asyncio.sleep(0.1)
    print("RUNNING", flush=True)
    await running

asyncio.run(main())
"""


def processes_naming(prefix: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and prefix.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


@pytest.mark.sandbox
@as_a_user
def test_sandboxes_of_a_killed_user_process_are_reaped_by_the_next() -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(HOLDER.format(repo=str(REPO)))],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    assert holder.stdout is not None
    assert holder.stdout.readline() == "RUNNING\n"
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    prefix = f"fixloop-{holder.pid}-"
    runsc = find_runsc()
    bundles = runtime_dir() / "bundles"
    assert [n for n in list_containers(runsc) if n.startswith(prefix)], "nothing was left"
    assert processes_naming(prefix), "the dead process's sandbox no longer runs"

    GvisorSandbox()  # opening the backend reaps what dead processes left

    assert not [n for n in list_containers(runsc) if n.startswith(prefix)]
    assert not [p for p in bundles.iterdir() if p.name.startswith(prefix)]
    assert not processes_naming(prefix)


# --- the docker backend under the user's rootless Podman (`fixloop-tui sandbox engine`) ---


@pytest.fixture
async def rootless_engine() -> AsyncIterator[DockerSandbox]:
    backend = open_backend("docker-podman", pool_size=0)
    assert isinstance(backend, DockerSandbox)
    try:
        yield backend
    finally:
        await backend.close()


LIMITS_INSIDE = """
import resource
for name in ("RLIMIT_AS", "RLIMIT_NPROC", "RLIMIT_FSIZE", "RLIMIT_NOFILE", "RLIMIT_CORE"):
    print(name, *resource.getrlimit(getattr(resource, name)))
"""


@pytest.mark.sandbox
@as_a_user
async def test_a_rootless_engines_jobs_get_the_rlimits_its_api_would_drop(
    rootless_engine: DockerSandbox,
) -> None:
    result = await rootless_engine.run(python_job(LIMITS_INSIDE, memory_mb=300))

    assert rootless_engine.rootless
    assert rootless_engine.description.endswith("rootless: rlimits and a memory watch)")
    tmpfs = Limits().tmpfs_mb * MIB
    space = (600 + THREAD_ROOM_MB) * MIB  # over the limit, and threads: the watch kills first
    assert result.stdout == (
        f"RLIMIT_AS {space} {space}\n"
        f"RLIMIT_NPROC {Limits().pids} {Limits().pids}\n"
        f"RLIMIT_FSIZE {tmpfs} {tmpfs}\n"
        "RLIMIT_NOFILE 1024 1024\n"
        "RLIMIT_CORE 0 0\n"
    ), result
    await assert_host_clean(rootless_engine)


@pytest.mark.sandbox
@as_a_user
async def test_a_memory_bomb_under_a_rootless_engine_is_killed_as_oom(
    rootless_engine: DockerSandbox,
) -> None:
    result = await rootless_engine.run(python_job(MEMORY_BOMB, memory_mb=256, timeout_s=20))

    assert result.oom_killed, result
    # Killed by the memory watch, not ended by a MemoryError (exit 1). On a loaded machine the
    # watch (one look per 50 ms) may come after RLIMIT_AS (twice the limit) has already
    # raised a MemoryError in the job, whose traceback then is in stderr: the job is still
    # killed, and reported, as out of memory.
    assert result.exit_code == 128 + signal.SIGKILL
    assert not result.timed_out
    await assert_host_clean(rootless_engine)


@pytest.mark.sandbox
@as_a_user
async def test_memory_under_the_limit_is_no_oom_under_a_rootless_engine(
    rootless_engine: DockerSandbox,
) -> None:
    code = "block = b'x' * (120 * 2**20)\nprint(len(block) // 2**20)"

    result = await rootless_engine.run(python_job(code, memory_mb=256))

    assert (result.exit_code, result.stdout, result.oom_killed) == (0, "120\n", False), result


@pytest.mark.sandbox
@as_a_user
async def test_doctor_says_what_holds_under_the_users_rootless_engine(
    rootless_engine: DockerSandbox,
) -> None:
    check = await asyncio.to_thread(check_docker, rootless_engine.url)

    assert check.ok, check
    assert "rootless: memory watched from outside" in check.detail
