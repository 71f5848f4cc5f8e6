"""A task's archive is unpacked only into its own directory, on every Python 3.11: with the
"data" filter where tarfile has it, by `plain_members` where it does not (before 3.11.4)."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

from engine.batch.task_outcome import plain_members


def archive(tmp_path: Path) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, kind in [
            ("run", tarfile.DIRTYPE),
            ("run/events.jsonl", tarfile.REGTYPE),
            ("../escaped", tarfile.REGTYPE),
            ("/abs", tarfile.REGTYPE),
            ("run/link", tarfile.SYMTYPE),
            ("run/setuid", tarfile.REGTYPE),
        ]:
            info = tarfile.TarInfo(name)
            info.type = kind
            if kind == tarfile.SYMTYPE:
                info.linkname = "/etc/passwd"
            info.mode = 0o4755 if name.endswith("setuid") else 0o644
            data = b"x\n" if kind == tarfile.REGTYPE else b""
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def test_only_plain_members_inside_are_unpacked(tmp_path: Path) -> None:
    where = tmp_path / "out" / "task"
    where.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(archive(tmp_path)), mode="r:gz") as tar:
        members = plain_members(tar)
        tar.extractall(where, members=members)
    assert [m.name for m in members] == ["run", "run/events.jsonl", "run/setuid"]
    assert (where / "run" / "events.jsonl").read_text() == "x\n"
    assert not (tmp_path / "out" / "escaped").exists()
    assert not (where / "run" / "link").exists()
    assert (where / "run" / "setuid").stat().st_mode & 0o7000 == 0
