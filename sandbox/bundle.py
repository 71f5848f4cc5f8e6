"""The OCI bundle a gVisor sandbox starts from: a read-only skeleton root, the
interpreter's trees mounted read-only, tmpfs for everything writable, no
capabilities, no network, uid 65534, rlimits and cgroup limits.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from sandbox.contract import BASE_ENV, ExecRequest, Limits
from sandbox.interpreter import Interpreter, default_python, probe

INSIDE_DIR = Path(__file__).parent / "inside"
SANDBOX_LIB = "/fixloop/lib"
SANDBOX_WORKDIR = "/fixloop/work"
NOBODY = 65534
# Host threads of gVisor's own processes count against the pids cgroup (each guest thread
# is carried by a host thread, plus the sentry's own); a low value panics the sandbox, so
# guest processes are limited by RLIMIT_NPROC (Limits.pids) and this is room above it for a
# job at its limit, still a bound on what a fork bomb costs the host.
HOST_PIDS_LIMIT = 2048
MIB = 2**20
# Address space each process may reserve beyond its memory limit, for threads: each reserves
# its 8 MiB stack and glibc up to 8 malloc arenas of 64 MiB per core, all untouched (at 1 GiB
# a Python suite could start about 16 threads; a pool of 200 needs some 3 GiB). Memory used
# stays bounded by the cgroup, or rootless by the memory watch.
THREAD_ROOM_MB = 4096


@dataclass(frozen=True)
class Profile:
    """Everything a sandbox is created with. Sandboxes with equal profiles are interchangeable."""

    interpreter: Interpreter
    memory_mb: int
    cpus: float
    pids: int
    tmpfs_mb: int
    # The zygote warms up pytest before READY: worth it for a pooled sandbox that
    # will run Python (nobody waits yet), pure delay for anything else.
    preload: bool = False
    # Extra read-only directories: (destination, host source), sorted.
    mounts: tuple[tuple[str, str], ...] = ()
    address_space_mb: int | None = None  # None: from memory_mb (`address_space_bytes`)
    # Where the workspace copy appears inside (ExecRequest.workspace_path): its own tmpfs.
    workspace: str = SANDBOX_WORKDIR

    @classmethod
    def of(
        cls,
        interpreter: Interpreter,
        limits: Limits,
        *,
        preload: bool = False,
        mounts: dict[str, Path] | None = None,
        workspace: PurePosixPath | None = None,
    ) -> Profile:
        extra = tuple(sorted((dest, str(src)) for dest, src in (mounts or {}).items()))
        return cls(
            interpreter,
            limits.memory_mb,
            limits.cpus,
            limits.pids,
            limits.tmpfs_mb,
            preload,
            extra,
            limits.address_space_mb,
            str(workspace or SANDBOX_WORKDIR),
        )


def profile_for(
    request: ExecRequest, *, pooled: bool, interpreter: Interpreter | None = None
) -> Profile:
    """The profile a request needs. Only a pooled sandbox for a Python job warms up pytest
    before READY: without a pool the job is already waiting, and ruff or mypy gain nothing.
    `interpreter`: the one that runs the job, when not the request's (an image's own)."""
    command = os.path.basename(request.argv[0])
    python_job = command.startswith("python") or command == "pytest"
    return Profile.of(
        interpreter or probe(request.python or default_python()),
        request.limits,
        preload=pooled and python_job,
        mounts=request.mounts,
        workspace=request.workspace_path,
    )


def sandbox_path(interpreter: Interpreter) -> str:
    dirs = [str(interpreter.bin_dir), "/usr/local/bin", "/usr/bin", "/bin"]
    return ":".join(dict.fromkeys(dirs))


def base_environment(interpreter: Interpreter, workspace: str) -> dict[str, str]:
    """The whole environment of a job before the request's own variables; HOME is its
    workspace."""
    return {
        **BASE_ENV,
        "PATH": sandbox_path(interpreter),
        "HOME": workspace,
        "TMPDIR": "/tmp",
        "USER": "nobody",
    }


def skeleton_root(base: Path, mount_points: list[str]) -> Path:
    """A read-only root with just enough in it; shared by sandboxes with the same mounts."""
    key = hashlib.sha256("\n".join(sorted(mount_points)).encode()).hexdigest()[:16]
    root = base / f"rootfs-{key}"
    if root.is_dir():
        return root
    base.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="rootfs-staging-", dir=base))
    for name, target in (("bin", "usr/bin"), ("sbin", "usr/sbin"), ("lib", "usr/lib")):
        (staging / name).symlink_to(target)
    if Path("/lib64").exists():
        (staging / "lib64").symlink_to("usr/lib64")
    etc = staging / "etc"
    etc.mkdir()
    (etc / "passwd").write_text(
        f"root:x:0:0:root:/nonexistent:/usr/sbin/nologin\n"
        f"nobody:x:{NOBODY}:{NOBODY}:nobody:{SANDBOX_WORKDIR}:/usr/sbin/nologin\n"
    )
    (etc / "group").write_text(f"root:x:0:\nnogroup:x:{NOBODY}:\n")
    (etc / "hosts").write_text("127.0.0.1 localhost\n")
    (etc / "nsswitch.conf").write_text("passwd: files\ngroup: files\nhosts: files\n")
    for name in ("ld.so.cache", "localtime"):
        source = Path("/etc") / name
        if source.is_file():
            shutil.copyfile(source, etc / name)
    for point in mount_points:
        (staging / point.lstrip("/")).mkdir(parents=True, exist_ok=True)
    for path in [staging, *staging.rglob("*")]:
        if path.is_dir() and not path.is_symlink():
            path.chmod(0o755)
    try:
        staging.rename(root)
    except OSError:  # another process made it first
        shutil.rmtree(staging, ignore_errors=True)
    return root


def _bind(path: str) -> dict[str, Any]:
    return {
        "destination": path,
        "type": "bind",
        "source": path,
        "options": ["rbind", "ro", "nosuid", "nodev"],
    }


def _tmpfs(path: str, size_mb: int) -> dict[str, Any]:
    return {
        "destination": path,
        "type": "tmpfs",
        "source": "tmpfs",
        "options": ["nosuid", "nodev", f"size={size_mb}m", "mode=1777"],
    }


def address_space_bytes(memory_mb: int, *, rootless: bool) -> int:
    """RLIMIT_AS of each process: the memory limit plus THREAD_ROOM_MB for threads. As root
    the cgroup is the memory limit and this a second one; rootless, the memory watch is, so a
    process gets room to pass the limit and be killed as out of memory by it (a MemoryError
    would hide that) while still bounded."""
    limit = max(memory_mb, 256)
    return ((2 * limit if rootless else limit) + THREAD_ROOM_MB) * MIB


def sandbox_rlimits(profile: Profile, *, rootless: bool) -> list[tuple[str, int]]:
    """The rlimits of every process in a sandbox, by their names in `resource`: guest
    processes (RLIMIT_NPROC, see HOST_PIDS_LIMIT), file size, address space."""
    return [
        (
            "RLIMIT_AS",
            profile.address_space_mb * MIB
            if profile.address_space_mb is not None
            else address_space_bytes(profile.memory_mb, rootless=rootless),
        ),
        ("RLIMIT_NPROC", profile.pids),
        ("RLIMIT_FSIZE", profile.tmpfs_mb * MIB),
        ("RLIMIT_NOFILE", 1024),
        ("RLIMIT_CORE", 0),
    ]


def write_bundle(
    directory: Path,
    rootfs: Path,
    profile: Profile,
    cgroup_path: str | None,
    *,
    rootless: bool = False,
) -> None:
    """Write `config.json` for one sandbox whose first process is the zygote. `rootless`:
    for `runsc --rootless --ignore-cgroups`, which enforces no cgroup limit, so none is
    written (see `address_space_bytes`)."""
    interpreter = profile.interpreter
    env = base_environment(interpreter, profile.workspace)
    binds = ["/usr", *(str(p) for p in interpreter.mounts)]
    mounts = [
        {"destination": "/proc", "type": "proc", "source": "proc"},
        _tmpfs("/tmp", profile.tmpfs_mb),
        _tmpfs("/dev/shm", 64),
        *(_bind(path) for path in binds),
        {
            "destination": SANDBOX_LIB,
            "type": "bind",
            "source": str(INSIDE_DIR),
            "options": ["rbind", "ro", "nosuid", "nodev"],
        },
        *(
            {
                "destination": destination,
                "type": "bind",
                "source": source,
                "options": ["rbind", "ro", "nosuid", "nodev"],
            }
            for destination, source in profile.mounts
        ),
        _tmpfs(profile.workspace, profile.tmpfs_mb),
    ]
    # Parents before what sits in them: the project's own `.venv`, mounted read-only as the
    # interpreter's tree, lies inside the workspace at the project's path and must come after it.
    mounts.sort(key=lambda mount: len(PurePosixPath(mount["destination"]).parts))
    rlimits = sandbox_rlimits(profile, rootless=rootless)
    period = 100_000
    linux: dict[str, Any] = {
        "namespaces": [{"type": t} for t in ("pid", "network", "ipc", "uts", "mount")],
    }
    if not rootless:
        linux["resources"] = {
            "memory": {"limit": profile.memory_mb * MIB},
            "cpu": {"quota": int(profile.cpus * period), "period": period},
            "pids": {"limit": HOST_PIDS_LIMIT},
        }
    if cgroup_path is not None:
        linux["cgroupsPath"] = cgroup_path
    config = {
        "ociVersion": "1.0.2",
        "process": {
            "terminal": False,
            "user": {"uid": NOBODY, "gid": NOBODY},
            # Not -I: the zygote must honour the (fixloop-built) environment's
            # PYTHONHASHSEED/PYTHONUNBUFFERED like a plain `python` job would; -s
            # keeps a user site out and the zygote drops its own directory from sys.path.
            "args": [
                str(interpreter.executable),
                "-s",
                "-X",
                "utf8",
                f"{SANDBOX_LIB}/zygote.py",
                *([] if profile.preload else ["--no-preload"]),
            ],
            "env": [f"{k}={v}" for k, v in env.items()],
            "cwd": profile.workspace,
            "capabilities": {
                k: [] for k in ("bounding", "effective", "inheritable", "permitted", "ambient")
            },
            "rlimits": [{"type": t, "hard": v, "soft": v} for t, v in rlimits],
            "noNewPrivileges": True,
        },
        "root": {"path": str(rootfs), "readonly": True},
        "hostname": "fixloop-sandbox",
        "mounts": mounts,
        "linux": linux,
    }
    (directory / "config.json").write_text(json.dumps(config, indent=1))
    os.chmod(directory, 0o700)


def mounted_in_workspace(profile: Profile) -> frozenset[str]:
    """Workspace-relative paths where the interpreter's read-only trees sit inside the
    workspace (a project's own venv, whatever its name): never copied there, the mount is."""
    workspace = PurePosixPath(profile.workspace)
    inside = set()
    for mount in profile.interpreter.mounts:
        path = PurePosixPath(mount)
        if workspace in path.parents:
            inside.add(path.relative_to(workspace).as_posix())
    return frozenset(inside)


def mount_points(profile: Profile) -> list[str]:
    points = ["/proc", "/tmp", "/dev/shm", "/usr", SANDBOX_LIB, profile.workspace]
    points += [str(p) for p in profile.interpreter.mounts]
    points += [destination for destination, _ in profile.mounts]
    return points
