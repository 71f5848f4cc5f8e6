"""The sandbox contract (ARCHITECTURE.md, "The sandbox contract"): what a job asks for and
what comes back.

Every backend takes an `ExecRequest` and returns an `ExecResult`; nothing else
crosses the seam, so a job never depends on where or how it ran.
"""

from __future__ import annotations

import posixpath
from pathlib import Path, PurePosixPath
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from sandbox.host_trees import too_broad

BackendName = Literal["gvisor", "docker", "unsafe-local"]

# A minimal environment: the job gets these plus what the request names, never
# anything inherited from the host process (API keys live there).
BASE_ENV: dict[str, str] = {
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONUNBUFFERED": "1",
    "PYTHONHASHSEED": "0",
}

# Host-side names never worth copying into a job's workspace.
DEFAULT_EXCLUDES: frozenset[str] = frozenset(
    {
        ".git",
        ".fixloop",
        ".venv",
        "venv",
        "__pycache__",
        ".mypy_cache",
        ".ruff_cache",
        ".pytest_cache",
        "node_modules",
    }
)


# Paths under /fixloop/ that the sandbox itself uses.
RESERVED_MOUNTS: frozenset[str] = frozenset({"lib", "work"})

# Where a workspace may never appear: the sandbox's own trees (the interpreter's /usr, its
# /proc, /dev, /tmp, fixloop's /fixloop) and the system's, which a workspace would shadow.
# Below /tmp is allowed (a project there is common), /tmp itself is not.
SYSTEM_DIRS: tuple[str, ...] = (
    "/bin", "/boot", "/dev", "/etc", "/fixloop", "/lib", "/lib32", "/lib64", "/libx32",
    "/proc", "/run", "/sbin", "/sys", "/usr",
)  # fmt: skip


# Threads and processes of one job: a real suite's thread pools (a few hundred threads) and
# multiprocessing pools fit; a fork bomb still stops here, inside its own gVisor kernel, and
# memory and the host's pids cgroup (bundle.HOST_PIDS_LIMIT) stand behind it.
DEFAULT_PIDS = 512


def refused_workspace_path(path: PurePosixPath) -> str | None:
    """Why `path` cannot be where a workspace appears inside a sandbox, or None."""
    text = str(path)
    if not path.is_absolute() or posixpath.normpath(text) != text or ".." in path.parts:
        return "must be an absolute, normalized path"
    if text in ("/", "/tmp"):
        return f"would hide the sandbox's own {text}"
    for system in SYSTEM_DIRS:
        if text == system or text.startswith(system + "/"):
            return f"is in {system}, which the sandbox keeps for itself"
    return None


class Limits(BaseModel):
    """Resource limits of one job. Time is enforced from outside the sandbox."""

    model_config = ConfigDict(frozen=True)

    timeout_s: float = Field(default=120.0, gt=0)
    memory_mb: int = Field(default=1024, ge=64)
    cpus: float = Field(default=1.0, gt=0)
    pids: int = Field(
        default=DEFAULT_PIDS,
        ge=8,
        description="processes and threads the job may run at once (RLIMIT_NPROC in its own"
        " sandbox's kernel: per job, never shared)",
    )
    tmpfs_mb: int = Field(default=256, ge=8, description="size of the writable workspace")
    output_bytes: int = Field(default=1_000_000, ge=1024, description="cap per stream")
    address_space_mb: int | None = Field(
        default=None,
        ge=256,
        description="RLIMIT_AS of each process (default: from memory_mb). V8 reserves gigabytes"
        " of address space it never touches; memory stays bounded by memory_mb either way",
    )
    changes_bytes: int = Field(
        default=16 * 2**20,
        ge=1024,
        description="cap on the changed files a job sends back (return_changes), encoded",
    )


class ExecRequest(BaseModel):
    """One command to run in a fresh sandbox over a copy of `workdir`."""

    model_config = ConfigDict(frozen=True)

    argv: list[str] = Field(min_length=1)
    workdir: Path | None = Field(
        default=None, description="copied into the sandbox's writable workspace; never mounted"
    )
    workspace_path: PurePosixPath | None = Field(
        default=None,
        description="where the workspace copy appears inside the sandbox (default"
        " /fixloop/work). The engine passes the person's own checkout path, so every path its"
        " dev setup recorded (an editable install's .pth, absolute paths in config) names the"
        " copy. Only a name: nothing of the host is mounted there (the workspace is a fresh"
        " tmpfs holding the copy), and it must be absolute, normalized, never / or /tmp, never"
        " in the system's or the sandbox's own trees (SYSTEM_DIRS), so a hostile repository"
        " that chose it could at most hide its own copy",
    )
    env: dict[str, str] = Field(default_factory=dict)
    limits: Limits = Field(default_factory=Limits)
    python: Path | None = Field(
        default=None,
        description="interpreter whose environment is mounted read-only (default: fixloop's own)",
    )
    excludes: frozenset[str] = DEFAULT_EXCLUDES
    mounts: dict[str, Path] = Field(
        default_factory=dict,
        description="read-only directories: destination under /fixloop/ -> host directory;"
        " never one that resolves to /, the user's home or above it",
    )
    links: dict[str, str] = Field(
        default_factory=dict,
        description="symlinks made in the workspace after the copy: name -> a mount's destination"
        " (a project's node_modules, read-only, where its tools look for it)",
    )
    unpack: dict[str, str] = Field(
        default_factory=dict,
        description="writable copies of read-only seeds, made before the command starts: a"
        " directory under /tmp -> a tar archive inside one of the mounts (a build cache's seed:"
        " the job writes to its own copy on its tmpfs, never to the seed). The archive is"
        " unpacked inside the sandbox, as data (regular files and directories only); one that"
        " is missing or broken leaves the directory empty, as if there were no seed. The"
        " unsafe-local backend has no /tmp of its own and ignores it",
    )
    network: Literal[False] = False
    return_changes: bool = Field(
        default=False,
        description="send back the regular files the job changed in its workspace copy",
    )
    changes_only: tuple[str, ...] = Field(
        default=(),
        description="with return_changes: only files whose workspace-relative path matches one"
        " of these globs (a runner's report files, say, not its build output)",
    )

    @field_validator("workspace_path")
    @classmethod
    def _workspace_path_shadows_nothing(cls, path: PurePosixPath | None) -> PurePosixPath | None:
        if path is not None and (reason := refused_workspace_path(path)) is not None:
            raise ValueError(f"workspace path {path} {reason}")
        return path

    @field_validator("mounts")
    @classmethod
    def _mounts_stay_in_fixloop(cls, mounts: dict[str, Path]) -> dict[str, Path]:
        for destination, source in mounts.items():
            parts = PurePosixPath(destination).parts
            if parts[:2] != ("/", "fixloop") or len(parts) != 3 or parts[2] in RESERVED_MOUNTS:
                raise ValueError(
                    f"mount destination {destination!r} must be /fixloop/<name> "
                    f"(not {', '.join(sorted(RESERVED_MOUNTS))})"
                )
            if not source.is_absolute():
                raise ValueError(f"mount source {source} must be an absolute path")
            # Judged where it resolves, as the bind will: a name that is a symlink (a
            # repository's `node_modules -> /`) cannot widen what the job sees.
            reason = too_broad(source.resolve())
            if reason is not None:
                raise ValueError(f"mount source {source} {reason}: it is never mounted")
        return mounts

    @model_validator(mode="after")
    def _unpack_from_mounts_into_tmp(self) -> ExecRequest:
        for directory, archive in self.unpack.items():
            path = PurePosixPath(directory)
            if (
                posixpath.normpath(directory) != directory
                or path.parts[:2] != ("/", "tmp")
                or len(path.parts) < 3
            ):
                raise ValueError(f"unpack into {directory!r}: it must be a directory under /tmp")
            if posixpath.normpath(archive) != archive or not any(
                archive.startswith(destination + "/") for destination in self.mounts
            ):
                raise ValueError(f"unpack {archive!r}: the archive must be inside a mount")
        return self

    @model_validator(mode="after")
    def _links_point_at_mounts(self) -> ExecRequest:
        for name, target in self.links.items():
            if not name or "/" in name or name in (".", ".."):
                raise ValueError(f"link name {name!r} must be one file name in the workspace")
            if target not in self.mounts:
                raise ValueError(f"link {name!r} -> {target!r}: the target must be a mount")
        return self


class FileChange(BaseModel):
    """One regular file a job created, changed or deleted in its workspace copy.

    `path` is workspace-relative and posix, checked here (never absolute, never `..`,
    never empty parts), so no consumer has to trust the sandbox for it; `content` None
    means deleted. Symlinks, devices, FIFOs and excluded names never become one.
    """

    model_config = ConfigDict(frozen=True)

    path: str
    content: bytes | None
    executable: bool = False

    @field_validator("path")
    @classmethod
    def _path_stays_in_the_workspace(cls, path: str) -> str:
        parts = path.split("/")
        if (
            not path
            or "\0" in path
            or path.startswith("/")
            or any(part in ("", ".", "..") for part in parts)
        ):
            raise ValueError(f"{path!r} is not a workspace-relative path")
        return path


class ExecResult(BaseModel):
    """What a job did. `exit_code` is the command's own; see the flags for why it ended.

    `changes` (only when the request asked, `return_changes`): the files the job changed,
    or None when they could not be collected (the job was killed: timeout, memory).
    `changes_truncated`: they were over `Limits.changes_bytes`; `changes` is then empty
    and a caller must apply nothing.
    """

    exit_code: int
    stdout: str
    stderr: str
    duration_ms: int
    timed_out: bool = False
    oom_killed: bool = False
    truncated: bool = False
    backend: BackendName
    workdir: str = Field(description="where the workspace was inside the sandbox")
    changes: list[FileChange] | None = None
    changes_truncated: bool = False


class Sandbox(Protocol):
    """Runs untrusted commands. One fresh sandbox per job; nothing survives it."""

    @property
    def name(self) -> BackendName: ...

    async def run(self, request: ExecRequest) -> ExecResult: ...

    async def close(self) -> None: ...


def describe(sandbox: Sandbox) -> str:
    """The backend's name, plus what it runs on when the backend says (the docker
    backend: which engine, and whether under gVisor). For the audit trail."""
    return str(getattr(sandbox, "description", sandbox.name))
