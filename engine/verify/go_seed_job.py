"""Building Go's build-cache seed (`go_seed.py` says what it is and why no project can
poison it): one sandbox job over fixloop's own scratch module, whose cache entries come back
as data, checked name by name, packed on the host and stored where `go_seed.seed_dir` says.
"""

from __future__ import annotations

import asyncio
import io
import os
import re
import tarfile
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from engine.verify.go_seed import SEED_ARCHIVE, seed_dir
from engine.verify.toolchains import toolchain_env, toolchain_limits, toolchain_of
from sandbox import ExecRequest, Limits, Sandbox, SandboxError
from sandbox.bundle import SANDBOX_WORKDIR

# The seed job's GOCACHE, inside its workspace so that its entries come back as changes.
SEED_CACHE_DIR = "go-build"
# The standard packages tests most often import, beyond `testing` itself: each one vetted in
# the seed is one a verification does not vet again.
SEED_IMPORTS = (
    "bufio",
    "bytes",
    "context",
    "encoding/json",
    "errors",
    "fmt",
    "io",
    "math",
    "os",
    "path/filepath",
    "reflect",
    "regexp",
    "sort",
    "strconv",
    "strings",
    "sync",
    "testing",
    "time",
)
# A Go build cache holds these names and nothing else.
_ENTRY = re.compile(r"[0-9a-f]{2}/[0-9a-f]{64}-[ad]")
_CACHE_FILES = frozenset({"README", "trim.txt"})
SEED_BYTES = 256 * 2**20
SEED_TIMEOUT_S = 600.0


def seed_archive(changes: Sequence[tuple[str, bytes | None]]) -> bytes:
    """The seed's tar from what the seed job sent back (workspace-relative path, content):
    Go's cache entries under `go-build/` only (`xx/<sha256>-a|-d`, README, trim.txt), as
    regular files readable by the sandbox's user. ValueError for anything else."""
    buffer = io.BytesIO()
    now = int(time.time())
    count = 0
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for path, content in sorted(changes):
            name = path.removeprefix(SEED_CACHE_DIR + "/")
            if name == path or not (_ENTRY.fullmatch(name) or name in _CACHE_FILES):
                raise ValueError(f"{path} is not a Go build-cache entry")
            if content is None:
                continue
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(content), 0o644, now
            archive.addfile(info, io.BytesIO(content))
            count += _ENTRY.fullmatch(name) is not None
    if count == 0:
        raise ValueError("the seed job cached nothing")
    return buffer.getvalue()


def scratch_module(root: Path) -> None:
    """An empty module that imports nothing of any project: one test importing the standard
    packages tests use most. Readable by the sandbox's user, who reads the copy it is given."""
    root.chmod(0o755)
    (root / "go.mod").write_text("module fixloop.invalid/goseed\n")
    imports = "\n".join(f'\t_ "{name}"' for name in SEED_IMPORTS if name != "testing")
    (root / "seed_test.go").write_text(
        f'package goseed\n\nimport (\n{imports}\n\t"testing"\n)\n\n'
        "func TestSeed(t *testing.T) {}\n"
    )


def seed_request(scratch: Path, limits: Limits) -> ExecRequest:
    """The job that builds a seed: `go test` of the scratch module with its GOCACHE in the
    workspace, whose files come back (only those: `changes_only`)."""
    env = toolchain_env("go", {})
    env["GOCACHE"] = f"{SANDBOX_WORKDIR}/{SEED_CACHE_DIR}"
    return ExecRequest(
        argv=["go", "test", "-count=1", "./..."],
        workdir=scratch,
        env=env,
        limits=toolchain_limits(
            "go",
            limits.model_copy(
                update={
                    "timeout_s": max(limits.timeout_s, SEED_TIMEOUT_S),
                    "tmpfs_mb": max(limits.tmpfs_mb, 512),
                    "changes_bytes": SEED_BYTES,
                }
            ),
        ),
        return_changes=True,
        changes_only=(f"{SEED_CACHE_DIR}/*",),
    )


async def build_seed(
    sandbox: Sandbox, limits: Limits | None = None, environ: dict[str, str] | None = None
) -> Path | None:
    """Build this toolchain's seed in a sandbox job and store it (atomically) unless one is
    there; its directory, or None when the job could not build one (Go verifications then
    stay cold: nothing else depends on it)."""
    where = await asyncio.to_thread(seed_dir, environ)
    if where is None:
        return None
    if await asyncio.to_thread((where / SEED_ARCHIVE).is_file):
        return where
    with tempfile.TemporaryDirectory(prefix="fixloop-goseed-") as scratch:
        await asyncio.to_thread(scratch_module, Path(scratch))
        try:
            result = await sandbox.run(seed_request(Path(scratch), limits or Limits()))
        except SandboxError:
            return None
    if result.exit_code != 0 or not result.changes or result.changes_truncated:
        return None
    try:
        archive = seed_archive([(change.path, change.content) for change in result.changes])
    except ValueError:
        return None
    return await asyncio.to_thread(store_seed, where, archive)


def store_seed(where: Path, archive: bytes) -> Path:
    """Write `archive` as the seed in `where`, the user's own and writable by nobody else
    (readable: the sandbox's user reads it): to a temporary file first, renamed into place,
    so a reader sees a whole seed or none."""
    where.mkdir(parents=True, exist_ok=True, mode=0o755)
    handle, temporary = tempfile.mkstemp(prefix=".seed-", dir=where)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(archive)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, 0o644)
        os.replace(temporary, where / SEED_ARCHIVE)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return where


def start_seeding(
    sandbox: Sandbox, commands: Sequence[str], limits: Limits | None = None
) -> asyncio.Task[Path | None] | None:
    """Build the seed alongside the first verification when one of `commands` runs Go and
    this toolchain has none yet: that verification runs cold, as without a seed, and the
    later ones start from it. None when there is nothing to build."""
    if not any(toolchain_of(cmd) == "go" for cmd in commands):
        return None
    where = seed_dir()
    if where is None or (where / SEED_ARCHIVE).exists():
        return None
    return asyncio.create_task(build_seed(sandbox, limits))
