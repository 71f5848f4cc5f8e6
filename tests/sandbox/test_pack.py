import io
import tarfile
from pathlib import Path

import pytest

from sandbox.contract import DEFAULT_EXCLUDES
from sandbox.errors import SandboxError, WorkspaceRefused
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
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "real.txt").write_text("TOPSECRET")
    (tmp_path / "leak").symlink_to("data/real.txt")
    payload = pack_directory(tmp_path, DEFAULT_EXCLUDES, 2**20)
    assert payload.count(b"TOPSECRET") == 1  # the file's own copy, not the link's
    assert members(payload)["leak"].issym()


def test_a_link_to_a_host_file_is_refused(tmp_path: Path) -> None:
    secret = tmp_path.parent / f"{tmp_path.name}-secret"
    secret.write_text("TOPSECRET")
    (tmp_path / "leak").symlink_to(secret)
    with pytest.raises(WorkspaceRefused, match=r"^workspace link leak -> /\S+ points outside"):
        pack_directory(tmp_path, DEFAULT_EXCLUDES, 2**20)


def test_workspace_over_the_size_cap_is_refused(tmp_path: Path) -> None:
    (tmp_path / "big.bin").write_bytes(b"0" * 4096)
    with pytest.raises(SandboxError, match="holds more than"):
        pack_directory(tmp_path, DEFAULT_EXCLUDES, 1024)


def test_missing_workspace_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SandboxError, match="is not a directory"):
        pack_directory(tmp_path / "nope", DEFAULT_EXCLUDES, 1024)


def test_a_link_above_the_workspace_is_refused_naming_it(tmp_path: Path) -> None:
    (tmp_path / "up").symlink_to("../../..")
    with pytest.raises(WorkspaceRefused) as refused:
        pack_directory(tmp_path, DEFAULT_EXCLUDES, 2**20)
    assert str(refused.value) == (
        "workspace link up -> ../../.. points outside the workspace: fixloop will not copy it "
        "into the sandbox; remove the link or point it at a file inside the project"
    )


def test_an_absolute_link_is_refused(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "root").symlink_to("/")
    with pytest.raises(WorkspaceRefused, match=r"^workspace link pkg/root -> / points outside"):
        pack_directory(tmp_path, DEFAULT_EXCLUDES, 2**20)


def test_a_link_to_a_directory_holding_it_is_refused_as_a_loop(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "again").symlink_to("../..")
    with pytest.raises(
        WorkspaceRefused, match=r"^workspace link a/b/again -> \.\./\.\. leads back to a directory"
    ):
        pack_directory(tmp_path, DEFAULT_EXCLUDES, 2**20)


def test_two_links_leading_to_each_other_are_refused_as_a_loop(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "to_b").symlink_to("../b")
    (tmp_path / "b" / "to_a").symlink_to("../a")
    with pytest.raises(WorkspaceRefused, match=r"\(a loop\)"):
        pack_directory(tmp_path, DEFAULT_EXCLUDES, 2**20)


def test_a_link_that_stays_inside_and_does_not_loop_is_kept(tmp_path: Path) -> None:
    (tmp_path / "docs" / "v2").mkdir(parents=True)
    (tmp_path / "docs" / "v2" / "index.md").write_text("# v2\n")
    (tmp_path / "docs" / "latest").symlink_to("v2")
    (tmp_path / "readme.md").symlink_to("docs/v2/index.md")
    (tmp_path / "gone").symlink_to("not-there-yet")
    found = members(pack_directory(tmp_path, DEFAULT_EXCLUDES, 2**20))
    assert found["docs/latest"].issym()
    assert found["docs/latest"].linkname == "v2"
    assert found["readme.md"].linkname == "docs/v2/index.md"


def test_an_excluded_link_is_not_looked_at(tmp_path: Path) -> None:
    (tmp_path / "node_modules").symlink_to("/")
    (tmp_path / "keep.py").write_text("x = 1\n")
    assert set(members(pack_directory(tmp_path, DEFAULT_EXCLUDES, 2**20))) == {"keep.py"}


def test_a_link_out_and_back_in_by_the_workspaces_name_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "project"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "mod.py").write_text("x = 1\n")
    (root / "alias").symlink_to("../project/pkg")  # another directory's name in the sandbox
    with pytest.raises(WorkspaceRefused, match=r"^workspace link alias -> \.\./project/pkg points"):
        pack_directory(root, DEFAULT_EXCLUDES, 2**20)
