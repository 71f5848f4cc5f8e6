"""The images the docker backend's jobs run in: the skeleton root the host's interpreter is
mounted into (imported on demand), and self-contained ones (`fixloop-tui sandbox
build-image`) that carry their own Python with pytest, ruff and mypy, built one of two ways:

* from the host (no registry, no network): see `image_root`;
* from a base image (default `python:X.Y-slim`, for users with a registry): pip on
  the host installs wheels for the base's Python into a directory the build copies
  in. Nothing runs inside the build: it would run under runsc without network.

Either way `--requirements FILE` adds the project's own dependencies with pip, the
caller's `site_modules` (fixloop's pytest plugin) are copied into site-packages, and
the image's `fixloop.python` label says where its interpreter is, so the backend can
run jobs with it and mounts nothing of the host's but fixloop's own runner.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker
import docker.errors
import requests.exceptions

from sandbox.bundle import NOBODY, skeleton_root
from sandbox.docker.image_root import (
    MOUNT_POINTS,
    WRITABLE_POINTS,
    closure,
    host_root,
    placed,
)
from sandbox.errors import SandboxError, SandboxUnavailable
from sandbox.interpreter import Interpreter, probe
from sandbox.owners import runtime_dir

IMAGE_REPOSITORY = "localhost/fixloop-sandbox"
IMAGE_FORMAT = "2"  # bump when the image's content changes for the same mount points
PYTHON_LABEL = "fixloop.python"
DEFAULT_PACKAGES = ("pytest", "ruff", "mypy")
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


# --- the skeleton ---------------------------------------------------------------------


def skeleton_image(client: docker.DockerClient, points: list[str]) -> str:
    """The sandbox image for these mount points, imported from a skeleton root if missing.

    No registry and no package manager: the image is the gvisor backend's skeleton
    root (a few symlinks and /etc files plus empty mount points); `/usr` and the
    interpreter's trees are mounted read-only at run time.
    """
    root = skeleton_root(runtime_dir(), points)
    tag = f"{IMAGE_REPOSITORY}:{root.name.removeprefix('rootfs-')}-{IMAGE_FORMAT}"
    with contextlib.suppress(docker.errors.ImageNotFound):
        client.images.get(tag)
        return tag

    def writable_points(entry: tarfile.TarInfo) -> tarfile.TarInfo:
        # Podman copies a tmpfs's mode from the directory beneath it (tmpcopyup), over
        # the mode=1777 asked for; runsc does not, other runtimes do.
        if entry.isdir() and "/" + entry.name.removeprefix("./") in WRITABLE_POINTS:
            entry.mode = 0o1777
        return entry

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        archive.add(str(root), arcname=".", filter=writable_points)
    try:
        answer = client.api.import_image_from_data(buffer.getvalue())
        image_id = _imported_id(answer)
        client.api.tag(image_id, IMAGE_REPOSITORY, tag.rsplit(":", 1)[1])
    except docker.errors.APIError as exc:
        raise SandboxError(f"cannot import the sandbox image {tag}: {exc.explanation}") from exc
    return tag


def _imported_id(answer: Any) -> str:
    """The image id in the engine's answer to an import."""
    for line in str(answer).splitlines():
        with contextlib.suppress(ValueError, AttributeError):
            status = json.loads(line).get("status", "")
            if status.startswith("sha256:"):
                return str(status)
    raise SandboxError(f"the engine did not say which image it imported: {str(answer)[:200]}")


# --- from the host --------------------------------------------------------------------


def build_from_host(
    client: docker.DockerClient,
    *,
    python: Path,
    tag: str,
    packages: Sequence[str] = DEFAULT_PACKAGES,
    everything: bool = False,
    site_modules: Sequence[Path] = (),
    mount_points: Sequence[str] = (),
) -> BuiltImage:
    """An image made of `python` from this machine: no registry, no network.

    `packages` (with their dependencies) are copied as installed in `python`'s
    environment; `everything` copies the whole environment (a project's venv).
    `site_modules` are copied into its site-packages; `mount_points` are created
    for what the caller will mount into its jobs besides the backend's own.
    """
    found = probe(python)
    interpreter = placed(found)
    wanted = list(dict.fromkeys([*DEFAULT_PACKAGES, *packages]))
    files, versions = closure(python, wanted)
    with tempfile.TemporaryDirectory(prefix="fixloop-image-") as scratch:
        archive = Path(scratch) / "root.tar"
        host_root(
            archive,
            found,
            files,
            everything=everything,
            site_modules=site_modules,
            mount_points=mount_points,
        )
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
    site_modules: Sequence[Path] = (),
    mount_points: Sequence[str] = (),
) -> BuiltImage:
    """An image from `base` with `packages` and `requirements` installed (by pip, here),
    and `site_modules` and `mount_points` as for build_from_host."""
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
        for module in site_modules:
            shutil.copy(module, site / module.name)
        for point in [*MOUNT_POINTS, *mount_points, "/tmp"]:
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
