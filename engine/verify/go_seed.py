"""Go's build-cache seed (ARCHITECTURE.md, "Beyond Python"): the standard library's compiled
and vetted packages, built once per toolchain by fixloop itself in a sandbox job over an empty
scratch module, kept in the user's cache, and unpacked into each Go job's own GOCACHE so a
verification does not spend seconds re-vetting the standard library.

Why a hostile repository or candidate cannot poison it: the only job that ever writes a seed
runs fixloop's own scratch module (no file of any project, no project setting), and what it
sends back is data, checked name by name (Go's cache entries, nothing else) before the host
packs it. Every other job gets the seed read-only and unpacks a copy into its own tmpfs: what
a candidate writes there dies with its sandbox. Where it lives comes from the person's
environment (XDG_CACHE_HOME), never the project; a seed inside the project, not the person's
own, or writable by others is not used. Go names cache entries by the hash of everything that
went into them, so a seed from another toolchain can only miss, never answer wrongly.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

from sandbox.errors import MountRefused
from sandbox.host_trees import is_within, owned_by_user, refuse_broad

# The seed's file in its directory, and what it must be named in the job that builds it.
SEED_ARCHIVE = "seed.tar"
# Bump when the seed's contents or the job that builds it change.
SEED_FORMAT = 1
# The GOFLAGS every Go job runs with (toolchains.toolchain_env), part of the seed's key.
JOB_GOFLAGS = "-mod=mod"
# Where the sandbox looks for `go` (bundle.sandbox_path, without the interpreter's own bin).
SANDBOX_SEARCH_PATH = "/usr/local/bin:/usr/bin:/bin"


def seeds_home(environ: dict[str, str] | None = None) -> Path:
    """Where fixloop keeps Go seeds: `$XDG_CACHE_HOME/fixloop/go-build` or `~/.cache/...`."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "fixloop" / "go-build"


def seed_key(search_path: str = SANDBOX_SEARCH_PATH) -> str | None:
    """The toolchain a Go job would run, as a directory name: its version, GOROOT, GOOS/
    GOARCH, cgo and experiments, and the GOFLAGS jobs run with; None without a `go`."""
    identity = _go_identity(search_path)
    if identity is None:
        return None
    digest = hashlib.sha256(
        json.dumps([SEED_FORMAT, JOB_GOFLAGS, identity], sort_keys=True).encode()
    ).hexdigest()[:16]
    version = re.sub(r"[^0-9A-Za-z.]", "", identity.get("GOVERSION", "go"))
    return f"{version}-{identity.get('GOOS')}-{identity.get('GOARCH')}-{digest}"


@functools.lru_cache(maxsize=4)
def _go_identity(search_path: str) -> dict[str, str] | None:
    """`go env` of the `go` a job finds, asked from `/` with GOENV=off and a bare environment:
    inside the sandbox HOME is the workspace, so the person's `go env -w` file is not read
    there either, and no project's go.mod or toolchain line can steer it."""
    go = shutil.which("go", path=search_path)
    if go is None:
        return None
    names = ["GOVERSION", "GOROOT", "GOOS", "GOARCH", "CGO_ENABLED", "GOEXPERIMENT", "GOAMD64"]
    env = {"PATH": search_path, "HOME": "/", "GOENV": "off", "GOTOOLCHAIN": "local", "GOFLAGS": ""}
    try:
        done = subprocess.run(
            [go, "env", "-json", *names],
            capture_output=True,
            text=True,
            timeout=20,
            cwd="/",
            env=env,
            check=False,
        )
        found = json.loads(done.stdout) if done.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired, json.JSONDecodeError):
        return None
    if not isinstance(found, dict) or not found.get("GOVERSION"):
        return None
    return {name: str(found.get(name, "")) for name in names}


def seed_dir(environ: dict[str, str] | None = None) -> Path | None:
    """This toolchain's seed directory (it may not exist yet); None without a `go`."""
    key = seed_key()
    return None if key is None else seeds_home(environ) / key


def usable_seed(project: Path | None, environ: dict[str, str] | None = None) -> Path | None:
    """The seed directory a Go job may mount read-only, or None: there is none yet, or it is
    refused (then the job runs cold, as without one). Refused: inside the project, at `/` or
    the home directory or above, not the person's own or writable by others (the directory
    and its archive), or an archive that is no regular file."""
    where = seed_dir(environ)
    if where is None or not (where / SEED_ARCHIVE).is_file():
        return None
    try:
        resolved = refuse_broad(where, "Go's build-cache seed")
    except MountRefused:
        return None
    if project is not None and is_within(resolved, project.resolve()):
        return None
    archive = resolved / SEED_ARCHIVE
    if archive.is_symlink() or not (owned_by_user(resolved) and owned_by_user(archive)):
        return None
    return resolved
