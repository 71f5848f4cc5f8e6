"""Self-contained images for the docker backend (`fixloop-tui sandbox build-image`).

Without an image the docker backend mounts the host's interpreter read-only into a
skeleton root, exactly like the gvisor backend. An image instead carries its own
Python with pytest, ruff, mypy and fixloop's pytest plugin, built one of two ways:

* from the host (no registry, no network): a minimal root made of an interpreter on
  this machine (its executable, standard library and the shared libraries they
  load) plus the installed distributions asked for, with their dependencies, all at
  the same paths as on the host, and sh/cat/mkfifo/sleep/env for the container's init;
* from a base image (default `python:X.Y-slim`, for users with a registry): pip on
  the host installs wheels for the base's Python into a directory the build copies
  in. Nothing runs inside the build: it would run under runsc without network.

Either way `--requirements FILE` adds the project's own dependencies with pip, and
the image's `fixloop.python` label says where its interpreter is, so the backend
can run jobs with it and mounts nothing of the host's but fixloop's own runner.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import docker
import docker.errors
import requests.exceptions

from sandbox.bundle import NOBODY, SANDBOX_LIB, SANDBOX_WORKDIR
from sandbox.errors import SandboxError, SandboxUnavailable
from sandbox.interpreter import Interpreter, probe

PYTHON_LABEL = "fixloop.python"
DEFAULT_PACKAGES = ("pytest", "ruff", "mypy")
PLUGIN = (
    Path(__file__).resolve().parent.parent / "engine" / "verify" / "plugin" / "fixloop_pytest.py"
)
# Where the backend mounts things, and where the verifier mounts fixloop's plugin.
MOUNT_POINTS = ("/proc", "/dev", SANDBOX_LIB, SANDBOX_WORKDIR, "/fixloop/plugins")
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
BUILD_TIMEOUT_S = 900


@dataclass(frozen=True)
class BuiltImage:
    tag: str
    interpreter: Interpreter
    size_bytes: int
    packages: dict[str, str]  # distribution -> version, as installed in the image


# --- the label ----------------------------------------------------------------------


def python_label(interpreter: Interpreter) -> str:
    """The interpreter inside an image, as one label value free of quotes and spaces."""
    return base64.urlsafe_b64encode(interpreter.model_dump_json().encode()).decode()


def image_interpreter(client: docker.DockerClient, tag: str) -> Interpreter:
    """The interpreter an image built by `sandbox build-image` carries."""
    try:
        labels = client.images.get(tag).labels or {}
    except docker.errors.ImageNotFound:
        raise SandboxUnavailable(
            f"no image {tag!r} in the engine; build it with `fixloop-tui sandbox build-image "
            f"--tag {tag}`"
        ) from None
    except (docker.errors.APIError, requests.exceptions.RequestException) as exc:
        raise SandboxUnavailable(f"cannot inspect the image {tag!r}: {exc}") from exc
    if PYTHON_LABEL not in labels:
        raise SandboxUnavailable(
            f"the image {tag!r} has no {PYTHON_LABEL} label, so fixloop does not know its "
            "interpreter; build it with `fixloop-tui sandbox build-image`"
        )
    return Interpreter.model_validate_json(base64.urlsafe_b64decode(labels[PYTHON_LABEL]))


# --- from the host --------------------------------------------------------------------

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
    destination: Path, interpreter: Interpreter, files: Sequence[str], *, everything: bool
) -> None:
    """Write the tar of a root made of `interpreter` and `files` to `destination`."""
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
        for point in MOUNT_POINTS:
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
        root.text(f"{site}/fixloop_pytest.py", PLUGIN.read_text(encoding="utf-8"))


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


def build_from_host(
    client: docker.DockerClient,
    *,
    python: Path,
    tag: str,
    packages: Sequence[str] = DEFAULT_PACKAGES,
    everything: bool = False,
) -> BuiltImage:
    """An image made of `python` from this machine: no registry, no network.

    `packages` (with their dependencies) are copied as installed in `python`'s
    environment; `everything` copies the whole environment (a project's venv).
    """
    found = probe(python)
    interpreter = placed(found)
    wanted = list(dict.fromkeys([*DEFAULT_PACKAGES, *packages]))
    files, versions = closure(python, wanted)
    with tempfile.TemporaryDirectory(prefix="fixloop-image-") as scratch:
        archive = Path(scratch) / "root.tar"
        host_root(archive, found, files, everything=everything)
        size = archive.stat().st_size
        path = ":".join(dict.fromkeys([str(interpreter.bin_dir), "/usr/local/bin", "/usr/bin"]))
        changes = [
            f"LABEL {PYTHON_LABEL}={python_label(interpreter)}",
            f"ENV PATH={path}:/bin",
            f"USER {NOBODY}",
        ]
        try:
            answer = client.api.import_image_from_file(str(archive), changes=changes)
            image_id = _imported_id(answer)
            repository, _, name = tag.rpartition(":")
            if not repository or "/" in name:
                repository, name = tag, "latest"
            client.api.tag(image_id, repository, name)
        except (docker.errors.APIError, requests.exceptions.RequestException) as exc:
            raise SandboxError(f"the engine did not import the image {tag}: {exc}") from exc
    return BuiltImage(tag=tag, interpreter=interpreter, size_bytes=size, packages=versions)


def _imported_id(answer: object) -> str:
    for line in str(answer).splitlines():
        with contextlib.suppress(ValueError, AttributeError):
            status = json.loads(line).get("status", "")
            if status.startswith("sha256:"):
                return str(status)
    raise SandboxError(f"the engine did not say which image it imported: {str(answer)[:200]}")


# --- from a base image -----------------------------------------------------------------

_BASE_PROBE = (
    "import json, sys, sysconfig; print(json.dumps({'executable': sys.executable, "
    "'prefix': sys.prefix, 'base_prefix': sys.base_prefix, 'version': sys.version.split()[0], "
    "'platform': sysconfig.get_platform(), 'abi': sys.implementation.cache_tag, "
    "'purelib': sysconfig.get_paths()['purelib']}))"
)


def probe_base(client: docker.DockerClient, base: str) -> dict[str, str]:
    """Where the base image's python3 is and which wheels it takes (one short container)."""
    container = None
    try:
        container = client.containers.create(
            base, ["python3", "-c", _BASE_PROBE], network_mode="none"
        )
        container.start()
        container.wait(timeout=120)
        output = container.logs(stdout=True, stderr=True)
    except docker.errors.ImageNotFound:
        raise SandboxUnavailable(
            f"no base image {base!r} here and the engine could not pull it; without a "
            "registry, build from the host instead: `sandbox build-image --from-host`"
        ) from None
    except (docker.errors.APIError, requests.exceptions.RequestException) as exc:
        raise SandboxError(f"cannot run python3 in the base image {base!r}: {exc}") from exc
    finally:
        if container is not None:  # also when it never started: no container is left
            with contextlib.suppress(docker.errors.APIError):
                container.remove(force=True)
    text = output.decode(errors="replace") if isinstance(output, bytes) else str(output)
    line = next((ln for ln in text.splitlines() if ln.startswith("{")), None)
    if line is None:
        raise SandboxError(f"the base image {base!r} has no working python3: {text[-300:]}")
    found: dict[str, str] = json.loads(line)
    return found


def install_for(
    target: Path, base: dict[str, str], packages: Sequence[str], requirements: Sequence[Path]
) -> dict[str, str]:
    """pip-install wheels for the base image's Python into `target`, here on the host.

    Nothing runs inside the build: this engine's runtime (runsc, no network) could
    not fetch anything, and Debian's runsc fails buildah's RUN steps outright.
    Returns the installed distributions and their versions.
    """
    version = "".join(base["version"].split(".")[:2])
    machine = base["platform"].split("-", 1)[-1]  # linux-x86_64 -> x86_64
    platforms = [f"manylinux_2_{v}_{machine}" for v in (17, 28, 34)]
    platforms += [f"manylinux2014_{machine}", f"linux_{machine}", "any"]
    command = [
        sys.executable, "-m", "pip", "install", "--quiet", "--no-compile", "--target", str(target),
        "--only-binary=:all:", "--python-version", version,
        "--implementation", "cp", "--abi", f"cp{version}", "--abi", "abi3", "--abi", "none",
        *[arg for platform in platforms for arg in ("--platform", platform)],
        *packages,
        *[arg for r in requirements for arg in ("-r", str(r))],
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)
    if done.returncode != 0:
        raise SandboxError(f"pip could not install the wheels: {done.stderr.strip()[-500:]}")
    versions = {}
    for info in target.glob("*.dist-info"):
        name, _, rest = info.name.removesuffix(".dist-info").partition("-")
        versions[name] = rest
    return versions


def _entry_points(scripts: Path, executable: Path) -> None:
    """pip wrote the host's interpreter into the scripts' first lines: use the image's."""
    for script in scripts.iterdir():
        data = script.read_bytes()
        if data.startswith(b"#!"):
            script.write_bytes(b"#!" + str(executable).encode() + data[data.index(b"\n") :])


def build_from_base(
    client: docker.DockerClient,
    *,
    base: str,
    tag: str,
    packages: Sequence[str] = DEFAULT_PACKAGES,
    requirements: Sequence[Path] = (),
) -> BuiltImage:
    """An image from `base` with `packages` and `requirements` installed (by pip, here)."""
    found = probe_base(client, base)
    interpreter = Interpreter.model_validate(found)
    wanted = list(dict.fromkeys([*DEFAULT_PACKAGES, *packages]))
    with tempfile.TemporaryDirectory(prefix="fixloop-image-") as scratch:
        context = Path(scratch)
        site, scripts, points = context / "site", context / "bin", context / "points"
        versions = install_for(site, found, wanted, requirements)
        if (site / "bin").is_dir():
            (site / "bin").rename(scripts)
            _entry_points(scripts, interpreter.executable)
        else:
            scripts.mkdir()
        shutil.copy(PLUGIN, site / "fixloop_pytest.py")
        for point in [*MOUNT_POINTS, "/tmp"]:
            (points / point.lstrip("/")).mkdir(parents=True, exist_ok=True)
        (context / "Dockerfile").write_text(
            f"FROM {base}\n"
            f"COPY site/ {found['purelib']}/\n"
            f"COPY bin/ {interpreter.bin_dir}/\n"
            "COPY points/ /\n"
            f"LABEL {PYTHON_LABEL}={python_label(interpreter)}\n"
            f"USER {NOBODY}\n"
        )
        log: list[str] = []
        try:
            for chunk in client.api.build(
                path=str(context), tag=tag, rm=True, forcerm=True, decode=True,
                timeout=BUILD_TIMEOUT_S,
            ):  # fmt: skip
                log.append(str(chunk.get("stream", "")))
                if "error" in chunk:
                    raise SandboxError(
                        f"the image build failed: {str(chunk['error']).strip()}\n"
                        + "".join(log)[-1500:]
                    )
            image = client.images.get(tag)
        except (docker.errors.APIError, requests.exceptions.RequestException) as exc:
            raise SandboxError(f"the engine did not build the image {tag}: {exc}") from exc
    size = int(image.attrs.get("Size") or 0)
    return BuiltImage(tag=tag, interpreter=interpreter, size_bytes=size, packages=versions)
