"""Runs inside every sandbox as its first process: the job runner.

Standalone on purpose (no fixloop imports): it is mounted read-only into the
sandbox and started by the project's interpreter. Before the job exists it runs
one throwaway pytest session (so pytest, its entry-point plugins and what a
session imports are loaded, plugins through pytest's own assertion rewriter),
says READY, then waits on stdin for exactly one job: a JSON header line followed
by a tar stream of the workspace. It unpacks the workspace, adopts the job's
environment and becomes the job — in-process for Python commands (so the warm
imports pay off), by exec for anything else.

A job that asks for its changes back (`return_changes`) runs in a forked child instead:
the zygote snapshots the workspace first, waits for the child, kills whatever the job
left running, then writes the frame of changed files (`changes.py`, beside this file) as
the last bytes of stdout and exits with the job's status.

The warm interpreter is used only when it behaves like a fresh one would: if
the workspace (or PYTHONPATH) shadows a module the warm-up imported, or the job
changes an environment variable the warm-up read or an interpreter setting, the
job gets a fresh interpreter instead (correct, just without the head start).
"""

from __future__ import annotations

import sys

# Modules of a bare interpreter start; a fresh `python` has these before sys.path[0] is set.
STARTUP_MODULES = frozenset(sys.modules)

import contextlib  # noqa: E402
import gc  # noqa: E402
import importlib  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import runpy  # noqa: E402
import shutil  # noqa: E402
import tarfile  # noqa: E402
import tempfile  # noqa: E402
from collections.abc import Iterator  # noqa: E402
from typing import Any  # noqa: E402

READY = b"FIXLOOP-READY\n"

# One passing and one failing test: the session imports what collecting, running,
# rewriting asserts and reporting a failure need.
WARMUP_TESTS = """\
import pytest


@pytest.mark.parametrize("n", [1, 2])
def test_passes(n):
    assert [n, {"k": "v"}] == [n, {"k": "v"}]


def test_fails():
    assert {"a": 1, "b": [1, 2], "c": "text"} == {"a": 1, "b": [1, 3], "c": "texts"}
"""

# Read by pytest at the start of every session, not at import: a job may set them.
SESSION_VARIABLES = frozenset(
    {"PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD", "PYTEST_VERSION"}
)
# Interpreter settings the zygote applies to itself when the job starts.
APPLIED_VARIABLES = frozenset({"PYTHONPATH", "PYTHONDONTWRITEBYTECODE"})


class Warm:
    """What the warm-up left behind, and what it depended on."""

    ok = False  # the warm-up finished and left the interpreter as it found it
    env: dict[str, str] = {}  # noqa: RUF012 - what the warm-up ran with (the job replaces it)
    env_read: frozenset[str] = frozenset()  # variables looked up during the warm-up
    modules: frozenset[str] = frozenset()  # top-level names it imported from files


@contextlib.contextmanager
def recording_environment_reads() -> Iterator[set[str]]:
    """Note every environment variable Python code looks up by name while inside.

    (Code that copies or iterates the whole environment, e.g. to restore it
    later, is not taken as depending on every variable.)
    """
    environ_type = type(os.environ)
    original = environ_type.__getitem__
    read: set[str] = set()

    def getitem(self: Any, key: Any) -> Any:
        read.add(key.decode(errors="replace") if isinstance(key, bytes) else key)
        return original(self, key)

    environ_type.__getitem__ = getitem  # type: ignore[method-assign]
    try:
        yield read
    finally:
        environ_type.__getitem__ = original  # type: ignore[method-assign]


@contextlib.contextmanager
def silenced_output() -> Iterator[None]:
    """The warm-up's own report goes nowhere; READY must be the first line out."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    os.close(devnull)
    try:
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(saved[0])
        os.close(saved[1])


def warm_up_pytest() -> None:
    """Run one pytest session on a throwaway test file, then undo its traces."""
    import pytest

    scratch = tempfile.mkdtemp(prefix="fixloop-warmup-")
    saved_path, saved_argv, saved_meta_path = list(sys.path), list(sys.argv), list(sys.meta_path)
    try:
        with open(os.path.join(scratch, "test_fixloop_warmup.py"), "w") as handle:
            handle.write(WARMUP_TESTS)
        with silenced_output():
            pytest.main([scratch, "-q", "-p", "no:cacheprovider"])
    finally:
        sys.path[:] = saved_path
        sys.argv[:] = saved_argv
        prefix = scratch + os.sep
        for name, module in list(sys.modules.items()):
            if (getattr(module, "__file__", None) or "").startswith(prefix):
                del sys.modules[name]
        shutil.rmtree(scratch, ignore_errors=True)
    # pytest removes its assertion-rewriting hook itself; a leftover one would
    # rewrite the job's imports with the warm-up's configuration.
    if sys.meta_path != saved_meta_path:
        raise RuntimeError("the warm-up session left an import hook behind")


def preload(warm_up: bool) -> None:
    """Import what a verifier job will need, while nobody is waiting (if asked to)."""
    Warm.env = dict(os.environ)
    if warm_up:
        try:
            with recording_environment_reads() as read:
                warm_up_pytest()
        except BaseException:  # a failed warm-up means fresh interpreters, not a failed start
            return
        Warm.env_read = frozenset(read)
    Warm.modules = frozenset(
        name.partition(".")[0]
        for name, module in list(sys.modules.items())
        if name not in STARTUP_MODULES and _from_file(module)
    )
    Warm.ok = True
    if warm_up:
        # Everything imported so far lives as long as the job: keep the collector
        # from walking it again (pytest runs gc.collect() five times per session).
        gc.collect()
        gc.freeze()


def _from_file(module: Any) -> bool:
    spec = getattr(module, "__spec__", None)
    return spec is not None and bool(spec.has_location) and spec.origin not in (None, "frozen")


def read_job() -> dict[str, Any]:
    stdin = sys.stdin.buffer
    header: dict[str, Any] = json.loads(stdin.readline())
    workdir = header["cwd"]
    os.makedirs(workdir, exist_ok=True)
    if header.get("has_files"):
        with tarfile.open(fileobj=stdin, mode="r|") as archive:
            # Inside the sandbox nothing outside the workspace is writable anyway;
            # 'tar' keeps the project's own symlinks as they are. Pythons before 3.11.4
            # (Debian 12's 3.11.2) have no filters and extract the same way.
            if hasattr(tarfile, "tar_filter"):
                archive.extractall(workdir, filter="tar")
            else:
                archive.extractall(workdir)
    # A mounted tree where the project's tools look for it (node_modules): never over a
    # file the workspace already has.
    for name, target in header.get("links", {}).items():
        if not os.path.lexists(os.path.join(workdir, name)):
            os.symlink(target, os.path.join(workdir, name))
    for directory, archive in header.get("unpack", {}).items():
        unpack_seed(archive, directory)
    return header


def unpack_seed(archive: str, directory: str) -> None:
    """A writable copy of a read-only seed (a build cache): the tar at `archive` unpacked into
    `directory`, regular files and directories only. A seed that is missing or broken leaves
    `directory` empty: the job then runs as it would without one."""
    try:
        os.makedirs(directory, exist_ok=True)
        with tarfile.open(archive, mode="r:") as seed:
            members = [m for m in seed.getmembers() if m.isfile() or m.isdir()]
            if hasattr(tarfile, "data_filter"):
                seed.extractall(directory, members=members, filter="data")
            else:
                for member in members:
                    _refuse_outside(directory, member.name)
                seed.extractall(directory, members=members)
    except (OSError, tarfile.TarError, ValueError):
        shutil.rmtree(directory, ignore_errors=True)
        os.makedirs(directory, exist_ok=True)


def _refuse_outside(directory: str, name: str) -> None:
    """Pythons without extraction filters (Debian 12's 3.11.2): no member leaves `directory`."""
    target = os.path.realpath(os.path.join(directory, name))
    if os.path.commonpath([target, os.path.realpath(directory)]) != os.path.realpath(directory):
        raise ValueError(f"{name} leaves {directory}")


def add_workspace_pth_paths() -> None:
    """The path lines of site-packages' .pth files that name directories which exist only
    now the workspace is here (an editable install's `src/`, at the project's own path):
    site.py skipped them when this interpreter started, a fresh one would not."""
    import site

    for sitedir in site.getsitepackages():
        with contextlib.suppress(OSError):
            names = sorted(n for n in os.listdir(sitedir) if n.endswith(".pth"))
            for name in names:
                with contextlib.suppress(OSError, UnicodeDecodeError):
                    with open(os.path.join(sitedir, name), encoding="utf-8") as pth:
                        lines = pth.read().splitlines()
                    for line in lines:
                        line = line.rstrip()
                        if not line or line.startswith(("#", "import ", "import\t")):
                            continue
                        path = os.path.abspath(os.path.join(sitedir, line))
                        if os.path.isdir(path) and path not in sys.path:
                            sys.path.append(path)


def detach_stdin() -> None:
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    sys.stdin = open(0, encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115


def adopt_environment(env: dict[str, str]) -> None:
    os.environ.clear()
    os.environ.update(env)
    sys.dont_write_bytecode = bool(env.get("PYTHONDONTWRITEBYTECODE"))
    for entry in reversed(python_path(env)):
        sys.path.insert(0, entry)


def python_path(env: dict[str, str]) -> list[str]:
    return [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]


def warm_fits(env: dict[str, str], workdir: str) -> bool:
    """Would a fresh interpreter run this job exactly as the warm one will?"""
    if not Warm.ok:
        return False
    changed = {k for k in env.keys() | Warm.env.keys() if env.get(k) != Warm.env.get(k)}
    for name in changed - SESSION_VARIABLES:
        if name in Warm.env_read or (name.startswith("PYTHON") and name not in APPLIED_VARIABLES):
            return False
    roots = [os.path.join(workdir, p) for p in python_path(env)]
    return not shadows(workdir, roots, Warm.modules)


def shadows(workdir: str, extra_roots: list[str], names: frozenset[str]) -> bool:
    """Does a directory that can end up on sys.path define one of `names`?

    Any workspace directory that is not a package can become a sys.path entry
    (the working directory, a script's directory, pytest's rootdir-relative
    insertions), so all of them are checked, plus the PYTHONPATH entries.
    """
    listings: list[tuple[str, list[str]]] = []
    for root in extra_roots:
        with contextlib.suppress(OSError):
            listings.append((root, os.listdir(root)))
    for dirpath, dirnames, filenames in os.walk(workdir):
        dirnames[:] = [d for d in dirnames if not d.startswith(".") and d != "__pycache__"]
        if "__init__.py" not in filenames:
            listings.append((dirpath, dirnames + filenames))
    for directory, entries in listings:
        for entry in entries:
            if entry.partition(".")[0] not in names:
                continue
            path = os.path.join(directory, entry)
            is_module = entry.endswith((".py", ".pyc", ".so")) and os.path.isfile(path)
            if is_module or os.path.isfile(os.path.join(path, "__init__.py")):
                return True
    return False


def same_interpreter(command: str) -> bool:
    found = shutil.which(command, path=os.environ.get("PATH"))
    if found is None:
        return False
    return os.path.realpath(found) == os.path.realpath(sys.executable)


def run_python(args: list[str], warm: bool) -> None:
    """Behave like `python ARGS` for the forms verifiers use; else re-exec python."""
    if warm and args[:1] == ["-m"] and len(args) >= 2:
        sys.argv = [args[1], *args[2:]]
        sys.path.insert(0, os.getcwd())
        runpy.run_module(args[1], run_name="__main__", alter_sys=True)
    elif warm and args[:1] == ["-c"] and len(args) >= 2:
        sys.argv = ["-c", *args[2:]]
        sys.path.insert(0, "")
        exec(compile(args[1], "<string>", "exec"), {"__name__": "__main__"})
    elif warm and args and not args[0].startswith("-"):
        sys.argv = list(args)
        sys.path.insert(0, os.path.dirname(os.path.abspath(args[0])))
        runpy.run_path(args[0], run_name="__main__")
    else:
        os.execv(sys.executable, [sys.executable, *args])


def lower_limits(args: list[str]) -> None:
    """Apply each `--rlimit=NAME=VALUE` (a `resource` name, soft = hard) to this process and
    so to every process the job starts: for engines that set no rlimits themselves
    (rootless Podman's Docker API ignores ulimits; none has RLIMIT_AS). Lowering a limit
    needs no privilege; the job, without capabilities, cannot raise it again."""
    import resource

    for arg in args:
        if arg.startswith("--rlimit="):
            name, value = arg[len("--rlimit=") :].split("=")
            resource.setrlimit(getattr(resource, name), (int(value), int(value)))
    # A fresh interpreter has not imported it: neither may the warm one the job gets.
    del sys.modules["resource"]


def load_changes_module() -> Any:
    """`changes.py` beside this file, loaded by path: never in sys.modules, where a job
    could import it or the warm-up's shadowing check would count it."""
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "changes.py")
    spec = importlib.util.spec_from_file_location("fixloop_changes", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_returning_changes(job: dict[str, Any]) -> None:
    """Fork: the child goes on to become the job; this process waits, ends every process
    the job left, and sends the changes frame. Never returns in the parent."""
    changes = load_changes_module()
    excludes = job.get("excludes", [])
    before = changes.snapshot(job["cwd"], excludes)
    sys.stdout.flush()
    sys.stderr.flush()
    child = os.fork()
    if child == 0:
        os.setsid()
        return
    _, status = os.waitpid(child, 0)
    end_every_other_process(child)
    payload = changes.collect(
        job["cwd"], before, excludes, int(job["changes_bytes"]), job.get("changes_only", [])
    )
    out = sys.stdout.buffer
    out.write(changes.frame(payload))
    out.flush()
    code = os.waitstatus_to_exitcode(status)
    os._exit(128 - code if code < 0 else code)


def end_every_other_process(child: int) -> None:
    """As the sandbox's first process (gvisor): every other process in it. Under the docker
    backend's init script (not pid 1): the job's session, which its child started."""
    import signal

    if os.getpid() == 1:
        with contextlib.suppress(ProcessLookupError):
            os.kill(-1, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            while True:
                os.waitpid(-1, 0)
    else:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass


def main() -> None:
    lower_limits(sys.argv[1:])
    # sys.path[0] is the zygote's own directory: neither warm-up nor job may import from it.
    if sys.path and os.path.abspath(sys.path[0]) == os.path.dirname(os.path.abspath(__file__)):
        del sys.path[0]
    preload(warm_up="--no-preload" not in sys.argv[1:])
    sys.stdout.buffer.write(READY)
    sys.stdout.flush()
    job = read_job()
    if job.get("return_changes"):
        run_returning_changes(job)
    # Finders cached directory listings before the workspace existed.
    importlib.invalidate_caches()
    add_workspace_pth_paths()
    detach_stdin()
    os.chdir(job["cwd"])
    warm = warm_fits(job["env"], job["cwd"])
    adopt_environment(job["env"])
    argv = job["argv"]
    command = os.path.basename(argv[0])
    if command.startswith("python") and same_interpreter(argv[0]):
        run_python(argv[1:], warm)
    elif warm and command == "pytest" and shutil.which("pytest") and _pytest_is_ours():
        sys.argv = list(argv)
        runpy.run_module("pytest", run_name="__main__", alter_sys=True)
    else:
        try:
            os.execvpe(argv[0], argv, os.environ)
        except FileNotFoundError:
            sys.stderr.write(f"{argv[0]}: command not found\n")
            sys.exit(127)
        except PermissionError:
            sys.stderr.write(f"{argv[0]}: permission denied\n")
            sys.exit(126)


def _pytest_is_ours() -> bool:
    """The `pytest` on PATH belongs to this interpreter's environment."""
    script = shutil.which("pytest")
    return script is not None and os.path.dirname(os.path.realpath(script)) == os.path.dirname(
        sys.executable
    )


if __name__ == "__main__":
    main()
