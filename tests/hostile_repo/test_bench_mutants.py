"""`bench --suite mutants --repo PATH` against a hostile repository: the person's project is
screened for seeded bugs and each bug runs through the loop, so its conftest runs many times;
every one of them in the sandbox. A conftest that writes outside its workspace, reads the
user's key or a host file's secret, gets nowhere, and the checkout is byte-identical after."""

from __future__ import annotations

import hashlib
import os
import uuid
from pathlib import Path

import pytest

from tests.hostile_repo.harness import (
    CANARY,
    MARKERS,
    MODEL,
    Lab,
    Outcome,
    Probe,
    answer,
    build_repo,
    check,
    collect,
    whole_file,
)
from tests.model_server import reply

pytestmark = [pytest.mark.sandbox, pytest.mark.usefixtures("needs_gvisor")]

# The markers' names are this test process's own: a marker another run left in /tmp (or one a
# deliberate failure left there) says nothing of this run.
TOKEN = uuid.uuid4().hex[:12]
CALC = "def add(a, b):\n    return a + b\n\n\ndef double(x):\n    return x * 2\n"
# Runs wherever pytest starts: at import and at the session's end it tries the host's marker
# directory, the user's home and /tmp, and says the user's key and a host file's secret.
CONFTEST = f"""import os
import pathlib


def loot():
    try:
        secret = pathlib.Path("{CANARY}").read_text()
    except OSError:
        secret = ""
    return "key=" + os.environ.get("OPENAI_API_KEY", "") + " secret=" + secret


def escape(name):
    for where in ("{MARKERS}", os.path.expanduser("~"), "/tmp"):
        try:
            pathlib.Path(where, name).write_text(loot())
        except OSError:
            pass
    print(loot())


escape("bench-mutants-conftest-{TOKEN}")


def pytest_sessionfinish(session, exitstatus):
    escape("bench-mutants-session-{TOKEN}")
"""
PROBE = Probe(
    "conftest-escapes-through-the-mutants-bench",
    base={
        "calc/__init__.py": CALC,
        "tests/test_calc.py": (
            "from calc import add, double\n\n\n"
            "def test_add():\n    assert add(2, 3) == 5\n\n\n"
            "def test_double():\n    assert double(4) == 8\n"
        ),
        "conftest.py": CONFTEST,
    },
    command="run",  # not used: the bench's command line is below
    expect=Outcome(exit=0, json=True),
)


def every_file(root: Path) -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    for directory, _, files in os.walk(root):
        for name in files:
            path = Path(directory) / name
            data = os.readlink(path).encode() if path.is_symlink() else path.read_bytes()
            found[str(path.relative_to(root))] = hashlib.sha256(data).digest()
    return found


def test_a_conftest_cannot_escape_or_read_the_key_through_the_mutants_bench(lab: Lab) -> None:
    root = build_repo(lab, PROBE)
    before = every_file(root)
    lab.server.script(*[reply(answer("put calc back", whole_file("calc/__init__.py", CALC)))] * 3)
    done, seconds = lab.cli(
        "bench", "--suite", "mutants", "--repo", str(root),
        "--model", "openai/scripted", "--api-base", lab.fill(MODEL),
        "--sandbox", "gvisor", "--max-iters", "0", "--limit", "2", "--json",
        timeout=900,
    )  # fmt: skip
    seen = collect(lab, root, done, seconds)
    check(lab, PROBE, seen)
    # The conftest ran (in the sandbox) for the screening and the runs ...
    assert seen.result is not None
    assert seen.result["items"], seen.output
    # ... and nothing of it reached the host's /tmp or the user's home.
    for name in (f"bench-mutants-conftest-{TOKEN}", f"bench-mutants-session-{TOKEN}"):
        assert not (Path("/tmp") / name).exists()
        assert not (lab.home / name).exists()
    assert every_file(root) == before
