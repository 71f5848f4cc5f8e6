"""The root filesystem of an image made from the host (`sandbox build-image --from-host`):
an interpreter on this machine (its executable, standard library and the shared libraries
they load) plus the installed distributions asked for, with their dependencies, all at the
same paths as on the host, and sh/cat/mkfifo/sleep/env for the container's init.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import tarfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from sandbox.bundle import NOBODY, SANDBOX_LIB, SANDBOX_WORKDIR
from sandbox.errors import SandboxError
from sandbox.interpreter import Interpreter

# Where the backend mounts things in every container (a caller adds its own, e.g. the
# verifier's plugin directory).
MOUNT_POINTS = ("/proc", "/dev", SANDBOX_LIB, SANDBOX_WORKDIR)
# Where the backend mounts a tmpfs in every container.
WRITABLE_POINTS = ("/tmp", "/dev/shm", SANDBOX_WORKDIR)
# A venv under a point the backend mounts over (a clone in /tmp) would be hidden in the
# container: the image carries it here instead.
RELOCATED_VENV = "/opt/fixloop/venv"
# What sandbox/inside/docker_init.sh runs besides the job.
INIT_TOOLS = ("sh", "cat", "mkfifo", "sleep", "env")
# Parts of a standard library no job needs (its own test suite alone is ~100 MB).
STDLIB_SKIPPED = frozenset(
    {"site-packages", "dist-packages", "test", "idlelib", "tkinter", "turtledemo", "ensurepip"}
)
# The standard library's own tests, wherever they are (distutils/tests, ctypes/test ...).
STDLIB_TESTS = frozenset({"test", "tests", "idle_test"})


# Run by the interpreter being packed: the files of the named distributions and of
# everything they require (extras left out), as installed there.
_CLOSURE = r"""
import json, os, re, sys
from importlib import metadata
try:
    from packaging.requirements import Requirement
except ImportError:
    Requirement = None

def requirement_name(text):
    if Requirement is not None:
        req = Requirement(text)
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            return None
        return req.name
    if ";" in text and "extra" in text.split(";", 1)[1]:
        return None
    return re.split(r"[\s;<>=!~\[(]", text.strip(), maxsplit=1)[0]

found, missing, todo = {}, [], list(sys.argv[1:])
while todo:
    name = todo.pop()
    key = re.sub(r"[-_.]+", "-", name).lower()
    if key in found:
        continue
    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        missing.append(name)
        found[key] = None
        continue
    found[key] = dist
    todo += [n for n in map(requirement_name, dist.requires or []) if n]
files = []
for dist in filter(None, found.values()):
    for part in dist.files or []:
        path = os.path.normpath(str(dist.locate_file(part)))
        if os.path.lexists(path):
            files.append(path)
versions = {d.metadata["Name"]: d.version for d in found.values() if d is not None}
print(json.dumps({"files": files, "missing": missing, "versions": versions}))
"""


class RootArchive:
    """A tar of host paths at the same paths, with the symlinks on the way to them; paths
    under `moved`'s first directory go under its second (links and `#!` lines follow)."""

    def __init__(self, archive: tarfile.TarFile, moved: tuple[str, str] | None = None) -> None:
        self.archive = archive
        self.added: set[str] = set()
        self.moved = moved

    def place(self, path: str) -> str:
        """Where a host path goes in the image (its archive name)."""
        if self.moved is not None:
            old, new = self.moved
            if path == old or path.startswith(old + "/"):
                path = new + path[len(old) :]
        return path.lstrip("/")

    def directory(self, path: str, mode: int = 0o755) -> None:
        if path in self.added or path == "/":
            return
        parent = os.path.dirname(path)
        self.directory(parent)
        if self.moved is not None and path == self.moved[0]:
            self.directory(os.path.dirname(self.moved[1]))
        entry = tarfile.TarInfo(self.place(path))
        entry.type, entry.mode = tarfile.DIRTYPE, mode
        self.archive.addfile(entry)
        self.added.add(path)

    def text(self, path: str, content: str, mode: int = 0o644) -> None:
        self.directory(os.path.dirname(path))
        data = content.encode()
        entry = tarfile.TarInfo(self.place(path))
        entry.size, entry.mode = len(data), mode
        self.archive.addfile(entry, io.BytesIO(data))
        self.added.add(path)

    def host_path(self, path: str, depth: int = 0) -> None:
        """`path` as on the host: every symlink on the way (and its target), then the file."""
        if depth > 40:
            raise SandboxError(f"too many symbolic links on the way to {path}")
        parts = Path(os.path.normpath(path)).parts
        for index in range(2, len(parts) + 1):
            prefix = os.path.join(*parts[:index])
            if os.path.islink(prefix):
                self._link(prefix)
                target = os.path.join(os.path.dirname(prefix), os.readlink(prefix), *parts[index:])
                self.host_path(target, depth + 1)
                return
            if index < len(parts) or os.path.isdir(prefix):
                self.directory(prefix)
            elif os.path.isfile(prefix):
                self._file(prefix)

    def _link(self, path: str) -> None:
        if path in self.added:
            return
        self.directory(os.path.dirname(path))
        entry = tarfile.TarInfo(self.place(path))
        target = os.readlink(path)
        if os.path.isabs(target):
            target = "/" + self.place(target)
        entry.type, entry.linkname = tarfile.SYMTYPE, target
        self.archive.addfile(entry)
        self.added.add(path)

    def _file(self, path: str) -> None:
        if path in self.added:
            return
        self.directory(os.path.dirname(path))
        entry = self.archive.gettarinfo(path, arcname=self.place(path))
        entry.uid = entry.gid = 0
        entry.uname = entry.gname = "root"
        entry.mode &= 0o755  # nothing writable by others, nothing setuid
        with open(path, "rb") as handle:
            data = handle.read()
        if self.moved is not None and data.startswith(b"#!" + self.moved[0].encode() + b"/"):
            # An entry point pip wrote for the venv where it was: name where it is now.
            line, _, rest = data.partition(b"\n")
            data = b"#!" + ("/" + self.place(line[2:].decode())).encode() + b"\n" + rest
            entry.size = len(data)
        self.archive.addfile(entry, io.BytesIO(data))
        self.added.add(path)

    def tree(self, top: str, skip: Iterable[str] = (), skip_anywhere: Iterable[str] = ()) -> None:
        """Everything under `top` (links as links), leaving out the top-level directories
        `skip` and the directories named `skip_anywhere` at any depth."""
        skipped, everywhere = set(skip), set(skip_anywhere)
        self.host_path(top)
        for directory, dirs, files in os.walk(top):
            dirs[:] = [
                d for d in dirs if d not in everywhere and not (directory == top and d in skipped)
            ]
            for name in [*dirs, *files]:
                path = os.path.join(directory, name)
                if os.path.islink(path) or not os.path.isdir(path):
                    self.host_path(path)
                else:
                    self.directory(path)


def closure(python: Path, packages: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """The installed files of `packages` and their dependencies in `python`'s environment."""
    done = subprocess.run(
        [str(python), "-I", "-c", _CLOSURE, *packages],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0:
        raise SandboxError(f"cannot list the packages of {python}: {done.stderr.strip()[-300:]}")
    found = json.loads(done.stdout)
    if found["missing"]:
        names = " ".join(found["missing"])
        raise SandboxError(
            f"{python} has no {names} installed; install them there first "
            f"({python} -m pip install {names}), or name another --python"
        )
    return list(found["files"]), dict(found["versions"])


def shared_libraries(paths: Iterable[str]) -> set[str]:
    """The shared libraries (and the loader) that these executables and modules load."""
    elves = [p for p in paths if _is_elf(p)]
    libraries: set[str] = set()
    for start in range(0, len(elves), 200):
        done = subprocess.run(
            ["ldd", *elves[start : start + 200]],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        for line in done.stdout.splitlines():
            match = re.search(r"(?:=>\s*)?(/\S+)\s+\(0x", line)
            if match:
                libraries.add(match.group(1))
    return libraries


def _is_elf(path: str) -> bool:
    try:
        with open(path, "rb") as handle:
            return handle.read(4) == b"\x7fELF"
    except OSError:
        return False


def shadowed(path: Path) -> bool:
    """Whether the backend mounts something over `path` in every container."""
    return any(path == Path(p) or Path(p) in path.parents for p in WRITABLE_POINTS)


def placed(interpreter: Interpreter) -> Interpreter:
    """The interpreter as the image carries it: a venv under a shadowed directory moves to
    RELOCATED_VENV (a venv finds itself from its executable's place)."""
    if not shadowed(interpreter.prefix) or interpreter.prefix == interpreter.base_prefix:
        if shadowed(interpreter.base_prefix):
            raise SandboxError(
                f"the interpreter {interpreter.executable} lives under a directory every "
                "container mounts over (/tmp, /dev/shm or the work dir): build from one "
                "installed elsewhere (--python)"
            )
        return interpreter
    if shadowed(interpreter.base_prefix):
        raise SandboxError(
            f"the base interpreter of {interpreter.executable} ({interpreter.base_prefix}) lives "
            "under a directory every container mounts over: build from one installed elsewhere"
        )
    inside = interpreter.executable.relative_to(interpreter.prefix)
    return interpreter.model_copy(
        update={"prefix": Path(RELOCATED_VENV), "executable": Path(RELOCATED_VENV) / inside}
    )


def host_root(
    destination: Path,
    interpreter: Interpreter,
    files: Sequence[str],
    *,
    everything: bool,
    site_modules: Sequence[Path] = (),
    mount_points: Sequence[str] = (),
) -> None:
    """Write the tar of a root made of `interpreter` and `files` to `destination`, with
    `site_modules` in its site-packages and directories for the caller's `mount_points`."""
    base = interpreter.base_prefix
    stdlib = base / "lib" / f"python{'.'.join(interpreter.version.split('.')[:2])}"
    executable = os.path.realpath(interpreter.executable)
    # As the init script names them (/bin/sh) and as PATH finds them.
    tools = [f"/bin/{tool}" for tool in INIT_TOOLS]
    tools += [found for tool in INIT_TOOLS if (found := shutil.which(tool, path="/usr/bin:/bin"))]
    site = _site_packages(interpreter)
    inside = placed(interpreter)
    moved = None if inside == interpreter else (str(interpreter.prefix), str(inside.prefix))
    with tarfile.open(destination, "w") as archive:
        root = RootArchive(archive, moved)
        for point in [*MOUNT_POINTS, *mount_points]:
            root.directory(point)
        for point in WRITABLE_POINTS:
            root.directory(point, 0o1777)
        _etc(root)
        configs = {name for name in _names(stdlib) if name.startswith("config-")}
        root.tree(str(stdlib), skip=STDLIB_SKIPPED | configs, skip_anywhere=STDLIB_TESTS)
        root.host_path(str(interpreter.executable))
        root.host_path(executable)
        for name in ("python", "python3"):
            if os.path.lexists(interpreter.executable.parent / name):
                root.host_path(str(interpreter.executable.parent / name))
        if interpreter.prefix != base:  # a venv: its configuration and entry points
            root.host_path(str(interpreter.prefix / "pyvenv.cfg"))
            if everything:
                root.tree(str(interpreter.prefix))
        elif everything:
            for site in ("site-packages", "dist-packages"):
                if (stdlib / site).is_dir():
                    root.tree(str(stdlib / site))
        for path in [*files, *tools]:
            root.host_path(path)
        elves = [executable, *tools, *files, *_walk_files(stdlib / "lib-dynload")]
        if everything:
            elves += _walk_files(interpreter.prefix)
        for library in sorted(shared_libraries(elves)):
            root.host_path(library)
        for name in ("ld.so.cache", "localtime"):
            if os.path.isfile(f"/etc/{name}"):
                root.host_path(f"/etc/{name}")
        for module in site_modules:
            root.text(f"{site}/{module.name}", module.read_text(encoding="utf-8"))


def _names(directory: Path) -> list[str]:
    try:
        return os.listdir(directory)
    except OSError:
        return []


def _walk_files(top: Path) -> list[str]:
    return [os.path.join(d, f) for d, _, files in os.walk(top) for f in files]


def _site_packages(interpreter: Interpreter) -> str:
    """Where the interpreter itself installs pure packages (Debian's: .../dist-packages)."""
    done = subprocess.run(
        [str(interpreter.executable), "-I", "-c", _PURELIB],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if done.returncode != 0 or not done.stdout.strip():
        raise SandboxError(f"cannot ask {interpreter.executable} for its site-packages")
    return done.stdout.strip()


_PURELIB = "import sysconfig; print(sysconfig.get_paths()['purelib'])"


def _etc(root: RootArchive) -> None:
    root.text(
        "/etc/passwd",
        "root:x:0:0:root:/nonexistent:/usr/sbin/nologin\n"
        f"nobody:x:{NOBODY}:{NOBODY}:nobody:{SANDBOX_WORKDIR}:/usr/sbin/nologin\n",
    )
    root.text("/etc/group", f"root:x:0:\nnogroup:x:{NOBODY}:\n")
    root.text("/etc/hosts", "127.0.0.1 localhost\n")
    root.text("/etc/nsswitch.conf", "passwd: files\ngroup: files\nhosts: files\n")
