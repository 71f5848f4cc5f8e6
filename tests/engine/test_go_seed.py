"""Go's build-cache seed (engine/verify/go_seed.py, go_seed_job.py): built once per toolchain
by fixloop in a sandbox job over its own scratch module, kept in the user's cache, unpacked
into each Go job's GOCACHE so the standard library is not vetted again; never writable by a
job, never one a project could have written."""

from __future__ import annotations

import hashlib
import itertools
from pathlib import Path

import pytest

from engine.verify.execute import Verifier
from engine.verify.go_seed import SEED_ARCHIVE, seed_dir, usable_seed
from engine.verify.go_seed_job import build_seed, seed_archive
from engine.verify.results import StageKind
from engine.verify.stages import Stage
from engine.verify.toolchains import GO_SEED_MOUNT, toolchain_mounts
from sandbox.gvisor import GvisorSandbox
from tests.conftest import ISOLATING_BACKENDS
from tests.toolchain_projects import GOSTATS, example_checkout

ENTRY = "go-build/ab/" + "ab" * 32 + "-d"
# `go test -x` prints `cd <GOROOT>/src/<package>` before it vets a standard package itself.
STD_VETTED = "cd /usr/lib/go"


@pytest.fixture
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's cache directory, where fixloop keeps the seed."""
    home = tmp_path / "cache"
    home.mkdir()
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    return home


def go_stage(cmd: str) -> Stage:
    return Stage(name="tests", kind=StageKind.TESTS, cmd=cmd)


def std_packages_vetted(stderr: str) -> int:
    lines = stderr.splitlines()
    return sum(
        1
        for before, line in itertools.pairwise(lines)
        if before.startswith(STD_VETTED) and "/vet " in line
    )


# --- what the seed may hold, and where it may come from ----------------------------------------


def test_the_seed_holds_only_go_cache_entries() -> None:
    archive = seed_archive([(ENTRY, b"compiled"), ("go-build/README", b"cache")])
    assert archive


@pytest.mark.parametrize(
    "path", ["go-build/../../.bashrc", "go-build/ab/run.sh", "seed_test.go", "go-build/ab"]
)
def test_a_seed_job_that_sends_back_anything_else_is_not_stored(path: str) -> None:
    with pytest.raises(ValueError, match="not a Go build-cache entry"):
        seed_archive([(ENTRY, b"compiled"), (path, b"x")])


def test_a_seed_others_may_write_to_is_not_used(cache_home: Path) -> None:
    where = seed_dir()
    assert where is not None  # CI installs golang-go
    where.mkdir(parents=True)
    (where / SEED_ARCHIVE).write_bytes(b"seed")
    (where / SEED_ARCHIVE).chmod(0o644)
    where.chmod(0o755)
    assert usable_seed(None) == where.resolve()
    where.chmod(0o777)
    assert usable_seed(None) is None


def test_a_seed_inside_the_project_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    monkeypatch.setenv("XDG_CACHE_HOME", str(project / ".cache"))
    where = seed_dir()
    assert where is not None
    where.mkdir(parents=True, mode=0o755)
    (where / SEED_ARCHIVE).write_bytes(b"seed")
    assert usable_seed(project) is None
    assert GO_SEED_MOUNT not in toolchain_mounts("go", project)


# --- the seed in the sandbox -----------------------------------------------------------------


@pytest.mark.sandbox
async def test_a_go_verification_after_the_seed_does_not_vet_the_standard_library_again(
    gvisor: GvisorSandbox, cache_home: Path, tmp_path: Path
) -> None:
    checkout = example_checkout(GOSTATS, tmp_path / "checkout")
    stage = go_stage("go test -x ./...")
    verifier = Verifier(gvisor, [stage], project=checkout)
    cold, _ = await verifier.execute(stage, checkout)
    assert std_packages_vetted(cold.stderr) > 10, cold.stderr[-2000:]
    assert await build_seed(gvisor) == seed_dir()
    seeded, _ = await verifier.execute(stage, checkout)
    assert '"Action":"fail"' in seeded.stdout  # the example's two bugs, found as before
    assert std_packages_vetted(seeded.stderr) == 0, seeded.stderr[-2000:]


@pytest.mark.sandbox
@pytest.mark.parametrize("isolating", ISOLATING_BACKENDS, indirect=True)
async def test_a_go_job_cannot_change_the_seed_or_the_next_jobs_cache(
    isolating: GvisorSandbox, cache_home: Path, tmp_path: Path
) -> None:
    checkout = example_checkout(GOSTATS, tmp_path / "checkout")
    where = await build_seed(isolating)
    assert where is not None
    before = hashlib.sha256((where / SEED_ARCHIVE).read_bytes()).hexdigest()
    poison = go_stage(
        "sh -c 'test -f /fixloop/goseed/seed.tar && echo seed mounted; "
        "echo poison > /fixloop/goseed/seed.tar || echo seed refused; "
        "GOCACHE=/fixloop/goseed go vet ./... || echo cache refused; "
        'find /tmp/go-build -type f -name "*-d" -exec sh -c "echo poison > {}" \\; ; '
        "echo poisoned > /tmp/go-build/poisoned'"
    )
    verifier = Verifier(isolating, [poison], project=checkout)
    result, _ = await verifier.execute(poison, checkout)
    assert "seed mounted" in result.stdout, result.stderr
    assert "seed refused" in result.stdout, result.stderr
    assert "cache refused" in result.stdout, result.stderr
    assert hashlib.sha256((where / SEED_ARCHIVE).read_bytes()).hexdigest() == before
    after = go_stage("sh -c 'test -e /tmp/go-build/poisoned && echo poisoned; go test ./...'")
    later, _ = await Verifier(isolating, [after], project=checkout).execute(after, checkout)
    assert "poisoned" not in later.stdout
    assert "--- FAIL: TestMeanWordLength " in later.stdout, later.stdout + later.stderr
