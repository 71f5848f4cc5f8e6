"""What each test runner needs to run honestly in the sandbox (ARCHITECTURE.md, "Beyond
Python"): its structured output switched on, an environment that never downloads (caches on
the sandbox's tmpfs, Go's proxy off), the read-only trees it reads (Go's module cache, the
project's `node_modules`) and room for its threads.

Pure apart from finding the host trees a runner reads (where the person keeps Go's module
cache, where the project's node_modules resolves): the verifier asks per stage.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Literal

from engine.project.paths import in_repository, tracked_path
from engine.verify.go_seed import JOB_GOFLAGS, SEED_ARCHIVE, usable_seed
from sandbox import Limits
from sandbox.errors import MountRefused
from sandbox.host_trees import is_within, owned_by_user, refuse_broad

Runner = Literal["pytest", "go", "jest", "vitest"]
Toolchain = Literal["go", "node"]

GO_MODCACHE_MOUNT = "/fixloop/gomodcache"
GO_SEED_MOUNT = "/fixloop/goseed"
GO_CACHE = "/tmp/go-build"
NODE_MODULES_MOUNT = "/fixloop/node_modules"
# The Go tool, a compile and a test binary each run a dozen threads, Node's libuv and V8 as
# many; the sandbox counts threads against its process limit (measured: `go test` under 64
# aborts in pthread_create).
TOOLCHAIN_PIDS = 512
TOOLCHAIN_ADDRESS_SPACE_MB = 16 * 1024
_WORD = r"(^|[\s/;&|(])"


def runner_of(cmd: str) -> Runner | None:
    """The test runner a stage command starts, when we can read its structured output."""
    if re.search(_WORD + r"(py\.test|pytest)(\s|$)", cmd):
        return "pytest"
    if re.search(r"(^|[\s;&|(])go\s+test(\s|$)", cmd):
        return "go"
    if re.search(_WORD + r"vitest(\.mjs)?(\s|$)", cmd):
        return "vitest"
    if re.search(_WORD + r"jest(\.js)?(\s|$)", cmd):
        return "jest"
    return None


_NODE_PROGRAMS = frozenset({"node", "npm", "npx", "yarn", "pnpm", "jest", "vitest", "tsc"})


def toolchain_of(cmd: str) -> Toolchain | None:
    """The toolchain a command runs on (its environment, read-only trees and limits follow),
    whether or not fixloop reads its report: `go vet`, `node --test`, `npm test` too."""
    words = {Path(word).name for word in re.split(r"[\s;&|()]+", cmd) if word}
    if "go" in words:
        return "go"
    if words & _NODE_PROGRAMS or "node_modules/.bin/" in cmd:
        return "node"
    return None


def runner_argv(runner: Runner | None, argv: list[str]) -> list[str]:
    """`argv` with the runner's machine-readable report switched on, unless the command
    already chose one. A shell command (`sh -c ...`) is left as it is."""
    if argv[0] == "sh" or runner is None:
        return argv
    if runner == "go" and "test" in argv and not _has_option(argv, "-json"):
        at = argv.index("test") + 1
        return [*argv[:at], "-json", *argv[at:]]
    if runner == "jest":
        extra = [] if _has_option(argv, "--json") else ["--json"]
        if not _has_option(argv, "--testLocationInResults"):
            extra.append("--testLocationInResults")
        return [*argv, *extra]
    if runner == "vitest" and not _has_option(argv, "--reporter"):
        return [*argv, "--reporter=json"]
    return argv


def _has_option(args: list[str], option: str) -> bool:
    return any(arg == option or arg.startswith(option + "=") for arg in args)


def toolchain_env(toolchain: Toolchain | None, mounts: dict[str, Path]) -> dict[str, str]:
    """Variables the toolchain needs inside: nothing may try the network or write outside
    the workspace and /tmp."""
    if toolchain == "go":
        return {
            "GOCACHE": GO_CACHE,
            "GOPATH": "/tmp/go",
            "GOMODCACHE": GO_MODCACHE_MOUNT if GO_MODCACHE_MOUNT in mounts else "/tmp/go/pkg/mod",
            "GOFLAGS": JOB_GOFLAGS,
            "GOPROXY": "off",
            "GOSUMDB": "off",
            "GOTOOLCHAIN": "local",
            "GOTELEMETRY": "off",
        }
    if toolchain == "node":
        # CI: no watch mode, no interactive reporter, snapshots never written.
        return {"CI": "true", "FORCE_COLOR": "0"}
    return {}


def toolchain_mounts(toolchain: Toolchain | None, project: Path | None) -> dict[str, Path]:
    """Read-only trees from the host: Go's module cache (the modules `go.sum` names, already
    downloaded by the person: `user_module_cache`) and its build-cache seed when fixloop has
    built one (`engine/verify/go_seed.py`), the project's own `node_modules` (never
    copied: it is large and excluded from the workspace; `project_node_modules`). MountRefused
    (a SandboxError: the verification's environment failure) when one may not be mounted."""
    if toolchain == "go":
        cache = user_module_cache(project)
        seed = usable_seed(project)
        return {
            **({GO_MODCACHE_MOUNT: cache} if cache is not None else {}),
            **({GO_SEED_MOUNT: seed} if seed is not None else {}),
        }
    if toolchain == "node" and project is not None:
        modules = project_node_modules(project)
        return {NODE_MODULES_MOUNT: modules} if modules is not None else {}
    return {}


def project_node_modules(project: Path) -> Path | None:
    """The project's `node_modules`, resolved, when it is a directory; None when there is none.

    Why a hostile repository cannot abuse it: the mount is judged by where it resolves, so a
    committed `node_modules -> /` (or `-> ~/.ssh`) is refused, never followed: it must resolve
    inside the project, or be a link git does not track (one the person made, as a shared
    install), and never to `/`, the home directory or above it. What the links inside the tree
    point at is resolved inside the sandbox, where no other host path exists."""
    modules = project / "node_modules"
    if not modules.is_dir():
        return None
    resolved = modules.resolve()
    if is_within(resolved, project.resolve()):
        return resolved
    committed = tracked_path(project, "node_modules")
    if committed is not None:
        raise MountRefused(
            f"node_modules resolves to {resolved}, outside the project, and git tracks "
            f"{committed}: fixloop mounts only the project's own node_modules; remove the "
            "committed link and run `npm ci`"
        )
    if not in_repository(project):
        raise MountRefused(
            f"node_modules resolves to {resolved}, outside the project, and no git repository "
            "says you made the link: run `npm ci` to install it inside the project"
        )
    return refuse_broad(modules, "node_modules")


def user_module_cache(project: Path | None, environ: dict[str, str] | None = None) -> Path | None:
    """Go's module cache of the person running fixloop (`go_module_cache`), resolved; None
    when there is none.

    Why a hostile repository cannot abuse it: where it is comes from the person's environment
    or `go env` run from `/` with a bare environment (never the project's go.mod, go.work,
    toolchain line or GOFLAGS), and it is refused when it resolves inside the project (where a
    committed symlink could steer it), to `/`, the home directory or above it, or to a
    directory that is not root's or the person's own."""
    cache = go_module_cache(environ)
    if cache is None:
        return None
    resolved = refuse_broad(cache, "Go's module cache")
    if project is not None and is_within(resolved, project.resolve()):
        raise MountRefused(
            f"Go's module cache {resolved} is inside the project: fixloop mounts only your own "
            "cache; set GOMODCACHE to a directory outside it"
        )
    if not owned_by_user(resolved):
        raise MountRefused(
            f"Go's module cache {resolved} is not owned by root or you, or others may write "
            "to it: set GOMODCACHE to your own cache"
        )
    return resolved


def toolchain_unpack(mounts: dict[str, Path]) -> dict[str, str]:
    """Go's GOCACHE starts as a copy of the mounted seed, on the job's own tmpfs: Go writes to
    its cache, and the seed stays read-only (measured in gVisor: unpacking its tar takes
    0.2 s, copying the tree file by file 0.9 s; a verification of examples/gostats falls from
    10.6 s to 4.8 s)."""
    return {GO_CACHE: f"{GO_SEED_MOUNT}/{SEED_ARCHIVE}"} if GO_SEED_MOUNT in mounts else {}


def toolchain_links(mounts: dict[str, Path]) -> dict[str, str]:
    """`node_modules` in the workspace points at the mounted one, where Node looks."""
    return {"node_modules": NODE_MODULES_MOUNT} if NODE_MODULES_MOUNT in mounts else {}


def toolchain_limits(toolchain: Toolchain | None, limits: Limits) -> Limits:
    """More threads for the toolchains, and the address space they reserve without using it
    (measured: Jest aborts with RLIMIT_AS at 1 GiB, runs at 1.25 GiB; `go test` fails one run
    in two in pthread_create, each thread's stack being reserved): the memory they may use
    stays `memory_mb`, bounded by the cgroup or the memory watch."""
    update: dict[str, int] = {}
    if toolchain is not None and limits.pids < TOOLCHAIN_PIDS:
        update["pids"] = TOOLCHAIN_PIDS
    if toolchain is not None and limits.address_space_mb is None:
        update["address_space_mb"] = TOOLCHAIN_ADDRESS_SPACE_MB
    return limits.model_copy(update=update) if update else limits


def go_module_cache(environ: dict[str, str] | None = None) -> Path | None:
    """Where `go` keeps downloaded modules on this host (GOMODCACHE, else GOPATH's first
    entry, else what `go env GOMODCACHE` says outside any project, else ~/go/pkg/mod), when
    it exists."""
    env = os.environ if environ is None else environ
    if env.get("GOMODCACHE"):
        path = Path(env["GOMODCACHE"])
    elif env.get("GOPATH", "").split(os.pathsep)[0]:
        path = Path(env["GOPATH"].split(os.pathsep)[0]) / "pkg" / "mod"
    else:
        path = _go_env_modcache(env.get("PATH", os.defpath)) or Path.home() / "go" / "pkg" / "mod"
    return path.resolve() if path.is_dir() else None


@functools.lru_cache(maxsize=4)
def _go_env_modcache(search_path: str) -> Path | None:
    """`go env GOMODCACHE` as the person's own go would say it (their `go env -w` file
    included), asked from `/` with a bare environment and GOTOOLCHAIN=local: no project's
    go.mod, go.work or toolchain line can steer it, and no toolchain is downloaded."""
    go = shutil.which("go", path=search_path)
    if go is None:
        return None
    env = {"PATH": search_path, "HOME": str(Path.home()), "GOTOOLCHAIN": "local", "GOFLAGS": ""}
    try:
        done = subprocess.run(
            [go, "env", "GOMODCACHE"],
            capture_output=True,
            text=True,
            timeout=20,
            cwd="/",
            env=env,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    value = done.stdout.strip()
    return Path(value) if done.returncode == 0 and Path(value).is_absolute() else None
