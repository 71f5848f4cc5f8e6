"""`ExecRequest.unpack`: a read-only seed (a tar in a mount) becomes a writable directory under
the job's /tmp before the command starts; what the job writes there never reaches the seed."""

from __future__ import annotations

import hashlib
import io
import tarfile
from pathlib import Path

import pytest
from pydantic import ValidationError

from sandbox.contract import ExecRequest
from sandbox.gvisor import GvisorSandbox
from tests.conftest import ISOLATING_BACKENDS

SEED_MOUNT = "/fixloop/seed"
USE_AND_SPOIL = (
    "import os\n"
    "print(open('/tmp/cache/ab/entry').read())\n"
    "open('/tmp/cache/ab/entry', 'w').write('spoiled')\n"
    "open('/tmp/cache/new', 'w').write('new')\n"
    "try:\n"
    "    open('/fixloop/seed/seed.tar', 'wb').write(b'poison')\n"
    "except OSError as exc:\n"
    "    print('seed write refused', type(exc).__name__)\n"
)


# `ls` of a tmpfs directory fails in gVisor (statx: EINVAL); Python lists it.
LIST = "import os\nENTRY = '/tmp/cache/ab/entry'\nprint(sorted(os.listdir('/tmp/cache')))\n"


def tar_of(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name, content in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(content), 0o644
            archive.addfile(info, io.BytesIO(content))
    return buffer.getvalue()


@pytest.fixture
def seed(tmp_path: Path) -> Path:
    directory = tmp_path / "seed"
    directory.mkdir()
    (directory / "seed.tar").write_bytes(tar_of({"ab/entry": b"from the seed"}))
    directory.chmod(0o755)
    tmp_path.chmod(0o755)
    return directory


def unpacking(argv: list[str], seed: Path) -> ExecRequest:
    return ExecRequest(
        argv=argv, mounts={SEED_MOUNT: seed}, unpack={"/tmp/cache": f"{SEED_MOUNT}/seed.tar"}
    )


@pytest.mark.sandbox
@pytest.mark.parametrize("isolating", ISOLATING_BACKENDS, indirect=True)
async def test_a_job_writes_to_its_copy_of_the_seed_and_never_to_the_seed(
    isolating: GvisorSandbox, seed: Path
) -> None:
    before = hashlib.sha256((seed / "seed.tar").read_bytes()).hexdigest()
    first = await isolating.run(unpacking(["python", "-c", USE_AND_SPOIL], seed))
    assert first.exit_code == 0, first.stderr
    assert "from the seed" in first.stdout
    assert "seed write refused" in first.stdout
    assert hashlib.sha256((seed / "seed.tar").read_bytes()).hexdigest() == before
    again = await isolating.run(
        unpacking(["python", "-c", LIST + "print(open(ENTRY).read())"], seed)
    )
    assert again.stdout.split() == ["['ab']", "from", "the", "seed"], again.stdout


@pytest.mark.sandbox
async def test_a_broken_seed_leaves_an_empty_directory_and_the_job_runs(
    gvisor: GvisorSandbox, seed: Path
) -> None:
    (seed / "seed.tar").write_bytes(b"not a tar archive")
    result = await gvisor.run(
        unpacking(["python", "-c", LIST + "open('/tmp/cache/x', 'w').write('writable')"], seed)
    )
    assert result.exit_code == 0, result.stderr
    assert result.stdout.split() == ["[]"]


@pytest.mark.sandbox
async def test_a_seed_member_that_leaves_its_directory_is_not_unpacked(
    gvisor: GvisorSandbox, seed: Path
) -> None:
    (seed / "seed.tar").write_bytes(tar_of({"ab/entry": b"kept", "../escaped": b"x"}))
    result = await gvisor.run(
        unpacking(["python", "-c", LIST + "print(sorted(os.listdir('/tmp')))"], seed)
    )
    assert result.exit_code == 0, result.stderr
    assert "escaped" not in result.stdout, result.stdout


@pytest.mark.parametrize(
    ("directory", "archive", "says"),
    [
        ("/etc/cache", "/fixloop/seed/seed.tar", "under /tmp"),
        ("/tmp", "/fixloop/seed/seed.tar", "under /tmp"),
        ("/tmp/../etc", "/fixloop/seed/seed.tar", "under /tmp"),
        ("/tmp/cache", "/fixloop/other/seed.tar", "inside a mount"),
        ("/tmp/cache", "/fixloop/seed/../work/x.tar", "inside a mount"),
    ],
)
def test_unpack_goes_from_a_mount_into_tmp(
    directory: str, archive: str, says: str, tmp_path: Path
) -> None:
    with pytest.raises(ValidationError, match=says):
        ExecRequest(argv=["true"], mounts={SEED_MOUNT: tmp_path}, unpack={directory: archive})
