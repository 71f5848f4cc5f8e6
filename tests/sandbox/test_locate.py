"""Where the docker backend looks for its engine when none is named: as a user, fixloop's
rootless Podman service and then the user's own Podman first, and never a socket the user may
not open (root's engine)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from sandbox.docker import locate


@pytest.fixture(autouse=True)
def nothing_named(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("FIXLOOP_DOCKER_URL", "DOCKER_HOST"):
        monkeypatch.delenv(name, raising=False)


def listening(path: Path) -> socket.socket:
    path.parent.mkdir(parents=True, exist_ok=True)
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    return server


def as_user(monkeypatch: pytest.MonkeyPatch, runtime: Path, system: list[Path]) -> None:
    monkeypatch.setattr(locate.os, "geteuid", lambda: 1000)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.setattr(locate, "ENGINE_SOCKETS", tuple(str(p) for p in system))


def test_a_user_gets_a_rootless_podman_first_fixloops_own_before_their_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    system = tmp_path / "run" / "fixloop" / "podman.sock"
    theirs = tmp_path / "xdg" / "podman" / "podman.sock"
    ours = tmp_path / "xdg" / "fixloop" / "podman.sock"
    with listening(system), listening(theirs):
        as_user(monkeypatch, tmp_path / "xdg", [system])
        assert locate.engine_url() == f"unix://{theirs}"
        with listening(ours):
            assert locate.engine_url() == f"unix://{ours}"


def test_a_socket_the_user_may_not_open_is_passed_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    closed, docker = tmp_path / "root-only.sock", tmp_path / "docker.sock"
    with listening(closed), listening(docker):
        as_user(monkeypatch, tmp_path / "xdg", [closed, docker])
        monkeypatch.setattr(locate.os, "access", lambda p, mode: Path(p) != closed)
        assert locate.engine_url() == f"unix://{docker}"


def test_with_no_engine_anywhere_a_user_is_pointed_at_fixloops_rootless_service(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    as_user(monkeypatch, tmp_path / "xdg", [tmp_path / "none.sock"])
    assert locate.engine_url() == f"unix://{tmp_path}/xdg/fixloop/podman.sock"


def test_root_keeps_fixloops_own_service_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(locate.os, "geteuid", lambda: 0)
    assert locate.engine_sockets()[0] == Path("/run/fixloop/podman.sock")
    assert not set(locate.user_sockets()) & set(locate.engine_sockets())


def test_an_engine_named_in_the_environment_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///somewhere/docker.sock")
    assert locate.engine_url() == "unix:///somewhere/docker.sock"
