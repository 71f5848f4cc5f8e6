"""Read-only mounts under /fixloop/: how the verifier's pytest plugin reaches a job."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from sandbox.bundle import address_space_bytes
from sandbox.contract import ExecRequest, Limits
from sandbox.gvisor import GvisorSandbox
from sandbox.owners import rootless
from sandbox.unsafe_local import UnsafeLocalSandbox, UnsafeLocalWarning

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


# --- links: a mounted tree where the project's tools look for it (node_modules) --------------

READ_THROUGH_LINK = (
    "import os\n"
    "print(os.readlink('node_modules'), open('node_modules/data.txt').read())\n"
    "try:\n"
    "    open('node_modules/new.txt', 'w').write('x')\n"
    "except OSError as exc:\n"
    "    print('write refused', type(exc).__name__)\n"
)


@pytest.mark.sandbox
async def test_a_link_in_the_workspace_reaches_a_mount_read_only(
    gvisor: GvisorSandbox, extra: Path, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    result = await gvisor.run(
        ExecRequest(
            argv=["python", "-c", READ_THROUGH_LINK],
            workdir=work,
            mounts={"/fixloop/extra": extra},
            links={"node_modules": "/fixloop/extra"},
        )
    )
    assert result.exit_code == 0, result.stderr
    assert result.stdout.split("\n")[0] == "/fixloop/extra mounted content"
    assert "write refused" in result.stdout
    assert not (extra / "new.txt").exists()


@pytest.mark.sandbox
async def test_a_link_never_replaces_a_file_the_workspace_has(
    gvisor: GvisorSandbox, extra: Path, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    (work / "node_modules").mkdir(parents=True)
    (work / "node_modules" / "data.txt").write_text("the project's own")
    result = await gvisor.run(
        ExecRequest(
            argv=["python", "-c", "print(open('node_modules/data.txt').read())"],
            workdir=work,
            excludes=frozenset(),
            mounts={"/fixloop/extra": extra},
            links={"node_modules": "/fixloop/extra"},
        )
    )
    assert result.stdout.strip() == "the project's own", result.stderr


async def test_unsafe_local_links_to_the_host_path(extra: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    with pytest.warns(UnsafeLocalWarning):
        result = await UnsafeLocalSandbox().run(
            ExecRequest(
                argv=["python", "-c", "print(open('node_modules/data.txt').read())"],
                workdir=work,
                mounts={"/fixloop/extra": extra},
                links={"node_modules": "/fixloop/extra"},
            )
        )
    assert result.stdout.strip() == "mounted content", result.stderr


@pytest.mark.parametrize(
    ("name", "target"),
    [("a/b", "/fixloop/extra"), ("..", "/fixloop/extra"), ("node_modules", "/fixloop/other")],
)
def test_a_link_must_be_one_name_pointing_at_a_mount(name: str, target: str, extra: Path) -> None:
    with pytest.raises(ValidationError):
        ExecRequest(argv=["true"], mounts={"/fixloop/extra": extra}, links={name: target})


# --- address space: V8 reserves far more than it uses ------------------------------------------

PRINT_AS = "import resource; print(resource.getrlimit(resource.RLIMIT_AS)[0] // 2**20)"


@pytest.mark.sandbox
async def test_the_address_space_limit_follows_memory_unless_a_job_asks_for_more(
    gvisor: GvisorSandbox,
) -> None:
    default = await gvisor.run(ExecRequest(argv=["python", "-c", PRINT_AS], limits=Limits()))
    # As root the cgroup is the memory limit; rootless, the watch is, with room over it.
    expected = address_space_bytes(Limits().memory_mb, rootless=rootless()) // 2**20
    assert default.stdout.strip() == str(expected), default.stderr
    wide = Limits(address_space_mb=8192)
    asked = await gvisor.run(ExecRequest(argv=["python", "-c", PRINT_AS], limits=wide))
    assert asked.stdout.strip() == "8192", asked.stderr
