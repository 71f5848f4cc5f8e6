import io
import tarfile
from pathlib import Path

import pytest

from sandbox.contract import DEFAULT_EXCLUDES
from sandbox.errors import SandboxError
from sandbox.pack import pack_directory


def members(payload: bytes) -> dict[str, tarfile.TarInfo]:
    with tarfile.open(fileobj=io.BytesIO(payload)) as archive:
        return {m.name: m for m in archive.getmembers()}


def test_files_and_directories_are_packed(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text("x = 1\n")
    found = members(pack_directory(tmp_path, DEFAULT_EXCLUDES, 2**20))
    assert set(found) == {"pkg", "pkg/mod.py"}
    assert found["pkg/mod.py"].uid == 65534


def test_excluded_names_are_left_out_at_any_depth(tmp_path: Path) -> None:
    for name in (".git/config", "sub/__pycache__/m.pyc", ".venv/bin/python", "keep.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    found = members(pack_directory(tmp_path, DEFAULT_EXCLUDES, 2**20))
    assert set(found) == {"keep.py", "sub"}


def test_symlink_is_stored_as_a_link_not_its_target(tmp_path: Path) -> None:
    secret = tmp_path.parent / f"{tmp_path.name}-secret"
    secret.write_text("TOPSECRET")
    (tmp_path / "leak").symlink_to(secret)
    payload = pack_directory(tmp_path, DEFAULT_EXCLUDES, 2**20)
    assert b"TOPSECRET" not in payload
    assert members(payload)["leak"].issym()


def test_workspace_over_the_size_cap_is_refused(tmp_path: Path) -> None:
    (tmp_path / "big.bin").write_bytes(b"0" * 4096)
    with pytest.raises(SandboxError, match="holds more than"):
        pack_directory(tmp_path, DEFAULT_EXCLUDES, 1024)


def test_missing_workspace_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SandboxError, match="is not a directory"):
        pack_directory(tmp_path / "nope", DEFAULT_EXCLUDES, 1024)
