"""The image root's archive on its own (no engine): a venv under a directory every
container mounts over (a clone in /tmp) moves to a place the container can see, and its
links and entry points follow it."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

from sandbox.docker.image_root import RELOCATED_VENV, RootArchive, placed
from sandbox.errors import SandboxError
from sandbox.interpreter import Interpreter


def interpreter(prefix: str, base: str = "/usr") -> Interpreter:
    return Interpreter(
        executable=Path(prefix) / "bin" / "python3",
        prefix=Path(prefix),
        base_prefix=Path(base),
        version="3.11.2",
    )


def test_a_venv_under_tmp_moves_to_the_relocated_place() -> None:
    moved = placed(interpreter("/tmp/ci/.venv"))
    assert moved.prefix == Path(RELOCATED_VENV)
    assert moved.executable == Path(RELOCATED_VENV) / "bin" / "python3"
    assert moved.base_prefix == Path("/usr")


@pytest.mark.parametrize("prefix", ["/work/main/.venv", "/usr", "/opt/tmpfoo/.venv"])
def test_an_interpreter_the_containers_see_stays_where_it_is(prefix: str) -> None:
    found = interpreter(prefix)
    assert placed(found) == found


def test_an_interpreter_installed_under_tmp_is_refused_with_the_fix() -> None:
    with pytest.raises(SandboxError, match="--python"):
        placed(interpreter("/tmp/python", base="/tmp/python"))


def test_the_archive_moves_files_links_and_entry_points(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (venv / "bin" / "python3").symlink_to("/usr/bin/python3")
    (venv / "bin" / "python").symlink_to("python3")
    (venv / "bin" / "tool").write_text(f"#!{venv}/bin/python3\nimport tool\n")
    (venv / "bin" / "alias").symlink_to(venv / "bin" / "tool")
    os.chmod(venv / "bin" / "tool", 0o755)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        root = RootArchive(archive, (str(venv), "/opt/fixloop/venv"))
        for name in ("pyvenv.cfg", "bin/python", "bin/tool", "bin/alias"):
            root.host_path(str(venv / name))
    buffer.seek(0)
    with tarfile.open(fileobj=buffer) as archive:
        entries = {entry.name: entry for entry in archive.getmembers()}
        tool = archive.extractfile("opt/fixloop/venv/bin/tool")
        assert tool is not None
        script = tool.read().decode()
    assert "opt/fixloop/venv/pyvenv.cfg" in entries
    assert entries["opt/fixloop/venv/bin/python"].linkname == "python3"
    assert entries["opt/fixloop/venv/bin/python3"].linkname == "/usr/bin/python3"
    assert entries["opt/fixloop/venv/bin/alias"].linkname == "/opt/fixloop/venv/bin/tool"
    assert script == "#!/opt/fixloop/venv/bin/python3\nimport tool\n"
    assert entries["opt/fixloop/venv/bin/tool"].size == len(script)
    assert not any(name.startswith(str(venv).lstrip("/") + "/") for name in entries)
