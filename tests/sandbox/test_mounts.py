"""Read-only mounts under /fixloop/: how the verifier's pytest plugin reaches a job."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from sandbox.contract import ExecRequest
from sandbox.gvisor import GvisorSandbox
from sandbox.local import UnsafeLocalSandbox, UnsafeLocalWarning

READ_AND_TRY_WRITE = (
    "import sys\n"
    "print(open('/fixloop/extra/data.txt').read())\n"
    "try:\n"
    "    open('/fixloop/extra/new.txt', 'w').write('x')\n"
    "except OSError as exc:\n"
    "    print('write refused', type(exc).__name__)\n"
)


@pytest.fixture
def extra(tmp_path: Path) -> Path:
    directory = tmp_path / "extra"
    directory.mkdir()
    (directory / "data.txt").write_text("mounted content")
    directory.chmod(0o755)
    tmp_path.chmod(0o755)
    return directory


@pytest.mark.sandbox
async def test_a_mounted_directory_is_readable_and_read_only(
    gvisor: GvisorSandbox, extra: Path
) -> None:
    result = await gvisor.run(
        ExecRequest(argv=["python", "-c", READ_AND_TRY_WRITE], mounts={"/fixloop/extra": extra})
    )
    assert result.exit_code == 0, result.stderr
    assert "mounted content" in result.stdout
    assert "write refused" in result.stdout
    assert not (extra / "new.txt").exists()


async def test_unsafe_local_maps_a_mount_to_its_host_path(extra: Path) -> None:
    with pytest.warns(UnsafeLocalWarning):
        result = await UnsafeLocalSandbox().run(
            ExecRequest(
                argv=["python", "-c", "print(open('/fixloop/extra/data.txt').read())"],
                mounts={"/fixloop/extra": extra},
            )
        )
    assert result.stdout.strip() == "mounted content"


@pytest.mark.parametrize(
    "destination", ["/etc/extra", "/fixloop/work", "/fixloop/lib", "/fixloop/a/b"]
)
def test_mounts_outside_fixloop_or_over_its_own_paths_are_refused(
    destination: str, tmp_path: Path
) -> None:
    with pytest.raises(ValidationError, match="must be /fixloop/<name>"):
        ExecRequest(argv=["true"], mounts={destination: tmp_path})
