"""Which host paths a sandbox must see so the project's Python runs inside it."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from sandbox.errors import SandboxError

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


@functools.lru_cache(maxsize=16)
def probe(python: Path) -> Interpreter:
    """Ask `python` where it lives. Raises SandboxError if it does not run."""
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
    return Interpreter(
        executable=executable,
        prefix=Path(data["prefix"]),
        base_prefix=Path(data["base_prefix"]),
        version=data["version"],
    )
