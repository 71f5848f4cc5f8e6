"""Which host paths a sandbox must see so the project's Python runs inside it."""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from sandbox.errors import InterpreterRefused, SandboxError
from sandbox.host_trees import is_within, owned_by_user, too_broad

VENV_CONFIG = "pyvenv.cfg"
_CONFIG_BYTES = 64 * 1024
_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")

_PROBE = (
    "import json, sys; print(json.dumps({'executable': sys.executable, 'prefix': sys.prefix,"
    " 'base_prefix': sys.base_prefix, 'version': sys.version.split()[0]}))"
)


class Interpreter(BaseModel):
    """A Python installation: the interpreter to start and the trees to mount read-only."""

    model_config = ConfigDict(frozen=True)

    executable: Path
    prefix: Path
    base_prefix: Path
    version: str

    @property
    def mounts(self) -> tuple[Path, ...]:
        """Host directories the interpreter needs, outermost first, without duplicates."""
        candidates = {self.prefix, self.base_prefix, self.executable.resolve().parent.parent}
        keep: list[Path] = []
        for path in sorted(candidates, key=lambda p: len(p.parts)):
            if path == Path("/") or path == Path("/usr") or Path("/usr") in path.parents:
                continue  # /usr is always mounted
            if not any(parent in path.parents for parent in keep):
                keep.append(path)
        return tuple(keep)

    @property
    def bin_dir(self) -> Path:
        return self.executable.parent


def default_python() -> Path:
    """The interpreter fixloop itself runs on."""
    return Path(sys.executable)


@dataclass(frozen=True)
class Venv:
    """A virtual environment as read from disk, never run: what Python itself would derive
    from `pyvenv.cfg` at start-up (`Modules/getpath.py`).

    `base_executable` is where bin/python really leads (its resolved symlink, or `home`'s
    interpreter for a venv of copies); `base_prefix` the first directory at or above `home`
    holding `lib/pythonX.Y/os.py`, as Python searches for its standard library.
    """

    prefix: Path
    home: Path
    base_executable: Path
    base_prefix: Path
    version: str
    system_site_packages: bool

    def interpreter(self, python: Path) -> Interpreter:
        """The interpreter `python` (this venv's bin/python, as given) as `probe` returns it."""
        return Interpreter(
            executable=python,
            prefix=self.prefix,
            base_prefix=self.base_prefix,
            version=self.version,
        )

    @property
    def site_packages(self) -> tuple[Path, ...]:
        """Where its imports are installed: its own site-packages, and the base's when
        `include-system-site-packages` says so."""
        short = "python" + ".".join(self.version.split(".")[:2])
        own = (self.prefix / "lib" / short / "site-packages",)
        if not self.system_site_packages:
            return own
        base = self.base_prefix
        return (
            *own,
            base / "lib" / short / "site-packages",
            base / "local" / "lib" / short / "dist-packages",
            base / "lib" / "python3" / "dist-packages",
        )


def venv_of(python: Path) -> Path | None:
    """The virtual environment `python` is the interpreter of (`<venv>/bin/python` with
    `<venv>/pyvenv.cfg`), or None."""
    venv = Path(os.path.abspath(python)).parent.parent
    return venv if (venv / VENV_CONFIG).is_file() else None


def read_venv(venv: Path, python: Path | None = None) -> Venv:
    """The venv at `venv` resolved statically: its `pyvenv.cfg` read, its symlinks followed,
    nothing in it executed. InterpreterRefused (one line) when it is not a venv fixloop can trust.

    Why a hostile repository cannot get past it: bin/python may be any script, but it only
    ever runs inside a sandbox, so what matters is which host trees it makes fixloop mount
    (the venv, `base_prefix`, and the directory above the resolved interpreter's bin/). The
    base interpreter must be a regular file outside the venv, owned by root or this user and
    writable by nobody else, so it is an installation someone trusted put there, not a file a
    checkout made; `base_prefix` must hold that Python's standard library (`lib/pythonX.Y/os.py`
    under it), so a `home` pointing at a secret directory finds none there and climbs to a
    real installation or to `/`; and no tree to mount may be `/`, the user's home or a
    directory above it. A venv git tracks, or whose trees lie in the project, is refused by
    the engine, which knows where the project is (`engine/project/paths.py`).
    """
    venv = Path(os.path.abspath(venv))
    python = Path(os.path.abspath(python or venv / "bin" / "python"))
    config = _venv_config(venv)
    home_value = config.get("home", "")
    if not home_value or not Path(home_value).is_absolute():
        raise InterpreterRefused(
            f"{venv / VENV_CONFIG} names no absolute `home`: recreate the venv"
        )
    home = Path(home_value)
    version = _venv_version(venv, config)
    short = ".".join(version.split(".")[:2])
    base_executable = _base_executable(python, home, short)
    if base_executable is None:
        raise InterpreterRefused(
            f"{venv}: no base interpreter behind {python.name} or in {home}: recreate the venv"
        )
    if is_within(base_executable, venv.resolve()):
        raise InterpreterRefused(
            f"{venv}: its base interpreter {base_executable} is inside the venv: recreate the venv"
        )
    if not owned_by_user(base_executable) or not owned_by_user(base_executable.parent):
        raise InterpreterRefused(
            f"{venv}: its base interpreter {base_executable} is not owned by root or you, or "
            "others may write to it: use an interpreter installed by root or by you"
        )
    base_prefix = _stdlib_prefix(home, short)
    if base_prefix is None:
        raise InterpreterRefused(
            f"{venv}: no Python {short} standard library at or above its home {home}: "
            "recreate the venv"
        )
    found = Venv(
        prefix=venv,
        home=home,
        base_executable=base_executable,
        base_prefix=base_prefix,
        version=version,
        system_site_packages=config.get("include-system-site-packages", "").lower() == "true",
    )
    refuse_broad_trees(found.interpreter(python), str(venv))
    return found


def refuse_broad_trees(interpreter: Interpreter, what: str) -> Interpreter:
    """`interpreter`, or InterpreterRefused when a tree it needs mounted (its prefix, base_prefix or
    the directory above its resolved bin/) resolves to `/`, the user's home or above it."""
    trees = (interpreter.prefix, interpreter.base_prefix, interpreter.executable.resolve().parent)
    for tree in (*trees[:2], trees[2].parent):
        reason = too_broad(tree.resolve())
        if reason is not None:
            raise InterpreterRefused(f"{what}: the tree {tree} it needs mounted {reason}")
    return interpreter


def _venv_config(venv: Path) -> dict[str, str]:
    """`pyvenv.cfg` as Python reads it: `key = value` lines, keys in lower case."""
    try:
        with (venv / VENV_CONFIG).open("rb") as file:
            text = file.read(_CONFIG_BYTES).decode("utf-8", errors="replace")
    except OSError as exc:
        raise InterpreterRefused(f"cannot read {venv / VENV_CONFIG}: {exc.strerror}") from None
    config: dict[str, str] = {}
    for line in text.splitlines():
        key, equals, value = line.partition("=")
        if equals:
            config.setdefault(key.strip().lower(), value.strip())
    return config


def _venv_version(venv: Path, config: dict[str, str]) -> str:
    """The venv's Python version: `version` (venv) or `version_info` (uv, virtualenv), else
    the one `lib/pythonX.Y` directory in it."""
    for key in ("version", "version_info"):
        matched = _VERSION.match(config.get(key, ""))
        if matched:
            return ".".join(part for part in matched.groups() if part is not None)
    found = sorted(path.name[len("python") :] for path in (venv / "lib").glob("python*.*"))
    versions = [version for version in found if _VERSION.fullmatch(version)]
    if len(versions) == 1:
        return versions[0]
    raise InterpreterRefused(
        f"{venv}: its Python version is not in {VENV_CONFIG}: recreate the venv"
    )


def _base_executable(python: Path, home: Path, short: str) -> Path | None:
    """Where the venv's interpreter leads, as Python decides it: the resolved symlink, or for
    a copy the interpreter of the same name in `home` (else python3, pythonX.Y)."""
    resolved = python.resolve()
    if resolved != python:
        return resolved if resolved.is_file() else None
    for name in dict.fromkeys((python.name, "python3", f"python{short}")):
        candidate = home / name
        if candidate.is_file():
            return candidate.resolve()
    return None


def _stdlib_prefix(home: Path, short: str) -> Path | None:
    """The first of `home` and its parents holding `lib/pythonX.Y/os.py`: Python's own search
    for its standard library, which is the venv's `sys.base_prefix`."""
    for directory in (home, *home.parents):
        if (directory / "lib" / f"python{short}" / "os.py").is_file():
            return directory
    return None


@functools.lru_cache(maxsize=16)
def probe(python: Path) -> Interpreter:
    """Where `python` lives. A venv's interpreter is read, never run (`read_venv`): its
    bin/python may be a script a repository committed. Any other interpreter is one the
    person named, or fixloop's own, and is asked by running it isolated (`-I`, a bare
    environment). Raises SandboxError if it cannot be read or does not run."""
    venv = venv_of(python)
    if venv is not None:
        return read_venv(venv, python).interpreter(Path(os.path.abspath(python)))
    try:
        done = subprocess.run(
            [str(python), "-I", "-c", _PROBE],
            capture_output=True,
            text=True,
            timeout=30,
            env={"PATH": "/usr/bin:/bin"},
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SandboxError(f"cannot run the interpreter {python}: {exc}") from exc
    if done.returncode != 0:
        raise SandboxError(f"the interpreter {python} failed: {done.stderr.strip()[:200]}")
    data = json.loads(done.stdout)
    # Keep the venv path as given (not resolved): that is how the venv finds itself.
    executable = Path(data["executable"])
    if not executable.is_absolute():
        executable = Path(python).absolute()
    found = Interpreter(
        executable=executable,
        prefix=Path(data["prefix"]),
        base_prefix=Path(data["base_prefix"]),
        version=data["version"],
    )
    return refuse_broad_trees(found, f"the interpreter {python}")
