"""Where the docker backend finds its Docker-compatible engine, without importing docker-py.

`--sandbox auto` asks this first, so users without an engine pay nothing for it.
"""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_URL = "unix:///run/fixloop/podman.sock"
# Tried in this order when neither --docker-url, FIXLOOP_DOCKER_URL nor DOCKER_HOST
# names an engine: fixloop's own Podman service (.ci/podman-service.sh), then the
# usual Docker and Podman sockets.
ENGINE_SOCKETS = ("/run/fixloop/podman.sock", "/var/run/docker.sock", "/run/podman/podman.sock")


def explicit_url() -> str | None:
    """The engine the user named in the environment: FIXLOOP_DOCKER_URL, else DOCKER_HOST."""
    return os.environ.get("FIXLOOP_DOCKER_URL") or os.environ.get("DOCKER_HOST") or None


def engine_url(url: str | None = None) -> str:
    """`url`, else the one the user named, else the first engine socket that exists."""
    if url or (url := explicit_url()):
        return url
    found = next((s for s in ENGINE_SOCKETS if _visible(s)), None)
    return f"unix://{found}" if found else DEFAULT_URL


def socket_missing(url: str) -> bool:
    """A unix:// URL whose socket does not exist: no engine there, known without asking."""
    for scheme in ("unix://", "http+unix://"):
        if url.startswith(scheme):
            return not _visible(url.removeprefix(scheme))
    return False


def _visible(path: str) -> bool:
    """The socket exists and this user may look at it (root's /run/fixloop is 0700: for
    anyone else its engine is as good as missing, not an error)."""
    try:
        return Path(path).exists()
    except PermissionError:
        return False
