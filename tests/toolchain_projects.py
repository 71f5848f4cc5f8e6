"""The Go and JavaScript examples as a user's checkout, with the real toolchains: Go from
Debian's golang-go, Jest from the npm registry pinned by examples/jsstats/package-lock.json,
installed once per lock file into ~/.cache and linked into each copy (as `npm ci` would have
put it there). Missing toolchains fail under FIXLOOP_REQUIRE_SANDBOX=1 (CI), skip elsewhere."""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
from pathlib import Path

import git

from tests.conftest import sandbox_unavailable
from tests.projects import readable

REPO = Path(__file__).resolve().parents[1]
GOSTATS = REPO / "examples" / "gostats"
JSSTATS = REPO / "examples" / "jsstats"
CACHE = Path.home() / ".cache" / "fixloop" / "test-node-modules"


def needs(tool: str) -> str:
    found = shutil.which(tool)
    if found is None:
        sandbox_unavailable(f"{tool} is not installed (make test-system installs it)")
        raise AssertionError  # unreachable: the call above fails or skips
    return found


def jest_modules() -> Path:
    """node_modules for examples/jsstats, installed from its lock file once (one test
    process at a time: pytest-xdist's workers share the cache)."""
    lock = (JSSTATS / "package-lock.json").read_bytes()
    home = CACHE / hashlib.sha256(lock).hexdigest()[:16]
    CACHE.mkdir(parents=True, exist_ok=True)
    with (CACHE / ".lock").open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        return _installed(home)


def _installed(home: Path) -> Path:
    modules = home / "node_modules"
    if (modules / ".bin" / "jest").exists():
        return modules
    npm = needs("npm")
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copy2(JSSTATS / name, home / name)
    done = subprocess.run(
        [npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=home,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, f"npm ci failed: {done.stderr[-2000:]}"
    return modules


def example_checkout(source: Path, into: Path) -> Path:
    """`source` copied to `into/<name>` and committed; for a package, node_modules linked
    in and ignored, as in a person's checkout after `npm ci`."""
    if source == GOSTATS:
        needs("go")
    root = into / source.name
    shutil.copytree(source, root, ignore=shutil.ignore_patterns("node_modules"))
    (root / ".gitignore").write_text("node_modules\n")
    repo = git.Repo.init(root)
    repo.git.add("-A")
    repo.index.commit("the buggy example")
    readable(into)
    if (root / "package.json").is_file():
        (root / "node_modules").symlink_to(jest_modules())
    return root
