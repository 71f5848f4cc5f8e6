"""Where the docker backend finds its Docker-compatible engine, without importing docker-py.

`--sandbox auto` asks this first, so users without an engine pay nothing for it.
"""

from __future__ import annotations

import os
from pathlib import Path

# Tried in this order when neither --docker-url, FIXLOOP_DOCKER_URL nor DOCKER_HOST
# names an engine: fixloop's own Podman service (`fixloop-tui sandbox engine`; as a user, its
# rootless one, then the user's own Podman), fixloop's own dockerd (`sandbox engine --docker`),
# then the usual Docker and Podman sockets.
ENGINE_SOCKETS = (
    "/run/fixloop/podman.sock",
    "/run/fixloop/docker.sock",
    "/var/run/docker.sock",
    "/run/podman/podman.sock",
)


def user_sockets() -> list[Path]:
    """A user's rootless engines: fixloop's own service (`sandbox engine` run as the
    user), then the user's Podman (`systemctl --user start podman.socket`)."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    uid = os.getuid()
    return [
        Path(runtime or f"/tmp/fixloop-{uid}") / "fixloop" / "podman.sock",
        Path(runtime or f"/run/user/{uid}") / "podman" / "podman.sock",
    ]


def engine_sockets() -> list[Path]:
    """The sockets `engine_url` tries, in order; a user's own engines first when not root."""
    sockets = [Path(s) for s in ENGINE_SOCKETS]
    return sockets if os.geteuid() == 0 else [*user_sockets(), *sockets]


def explicit_url() -> str | None:
    """The engine the user named in the environment: FIXLOOP_DOCKER_URL, else DOCKER_HOST."""
    return os.environ.get("FIXLOOP_DOCKER_URL") or os.environ.get("DOCKER_HOST") or None


def engine_url(url: str | None = None) -> str:
    """`url`, else the one the user named, else the first engine socket that exists."""
    if url or (url := explicit_url()):
        return url
    sockets = engine_sockets()
    # Not root: a socket this user may not open (root's engine) is passed over.
    usable = (s for s in sockets if _visible(s) and os.access(s, os.R_OK | os.W_OK))
    found = next(usable, None)
    return f"unix://{found or sockets[0]}"


def socket_missing(url: str) -> bool:
    """A unix:// URL whose socket does not exist: no engine there, known without asking."""
    for scheme in ("unix://", "http+unix://"):
        if url.startswith(scheme):
            return not _visible(url.removeprefix(scheme))
    return False


def _visible(path: str | Path) -> bool:
    """The socket exists and this user may look at it (root's /run/fixloop is 0700: for
    anyone else its engine is as good as missing, not an error)."""
    try:
        return Path(path).exists()
    except PermissionError:
        return False
