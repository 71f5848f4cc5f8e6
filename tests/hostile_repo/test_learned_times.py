"""Remembered test times against a hostile repository and hostile answers: the times that
size the per-test limits are fixloop's own measurements of the person's tree, kept in the
person's cache. A repository that plants times (in its tree, or where a cache inside the
project would be) raises no limit, and a model's answer that makes a test slow teaches nothing.
What does not fit a probe row: files that depend on where the repository was built, and the
cache looked at after the command."""

from __future__ import annotations

import json
from pathlib import Path

import git
import pytest

from engine.verify.learned_times import project_key, times_home
from tests.hostile_repo.harness import (
    FIX,
    Lab,
    Outcome,
    Probe,
    answer,
    build_repo,
    collect,
    command_line,
)
from tests.model_server import reply

pytestmark = [pytest.mark.sandbox, pytest.mark.usefixtures("needs_gvisor")]

SLOW = "test_slow.py::test_slow"
SLOW_PROJECT = Probe(
    "planted-test-times",
    files={"test_slow.py": "import time\n\n\ndef test_slow():\n    time.sleep(3)\n"},
    command="verify",
    flags=("--test-timeout", "1"),
    expect=Outcome(status="failing"),
)


def claimed(nodeid: str) -> str:
    """A times file in fixloop's own format claiming the test needs an hour."""
    times = {"sandbox": "gvisor", "runsc": "", "times": {nodeid: 3600.0}}
    return json.dumps({"format": 1, "project": "", "backends": {"gvisor": times}})


def planted(files: dict[str, str], lab: Lab, probe: Probe) -> Path:
    """The probe's repository with `files` committed too (`{key}` in a name: the key fixloop
    files this project's times under)."""
    root = build_repo(lab, probe)
    for name, text in files.items():
        path = root / name.format(key=project_key(root.resolve()))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    repo = git.Repo(root)
    repo.git.add("-A", "--force")
    repo.index.commit("times the repository claims")
    return root


def test_times_planted_in_the_repository_raise_no_limit(lab: Lab) -> None:
    # The person's cache is inside the project: exactly where the repository planted a file
    # in fixloop's own format, for this project's key. It is not read, nor written.
    planting = {
        ".fixloop/test-times.json": claimed(SLOW),
        ".cache/fixloop/test-times/{key}.json": claimed(SLOW),
    }
    root = planted(planting, lab, SLOW_PROJECT)
    repo = git.Repo(root)
    # The times files only: as a normal user the sandbox keeps its own state under the same
    # XDG_CACHE_HOME, which this person chose to put inside the project.
    times = ("--", ".fixloop/test-times.json", ".cache/fixloop/test-times")
    before = repo.git.status("--porcelain", "--ignored", *times)
    done, seconds = lab.cli(
        *command_line(lab, SLOW_PROJECT, root, "gvisor"),
        cwd=root,
        env={"XDG_CACHE_HOME": str(root / ".cache")},
    )
    seen = collect(lab, root, done, seconds)
    assert seen.status == "failing", seen.output
    packet = (seen.result or {})["packet"]
    assert [f["test"] for f in packet["failures"] if f["kind"] == "timeout"] == [SLOW]
    assert repo.git.status("--porcelain", "--ignored", *times) == before


def test_an_answer_that_makes_a_test_slow_teaches_no_time(lab: Lab) -> None:
    probe = Probe(
        "slow-answer-teaches-nothing",
        answers=(
            answer(
                "add, slowly",
                {**FIX, "replace": "__import__('time').sleep(2)\n    return a + b"},
            ),
        ),
        expect=Outcome(status="ok", never=()),
    )
    root = build_repo(lab, probe)
    lab.server.script(*(reply(lab.fill(text)) for text in probe.answers))
    done, seconds = lab.cli(*command_line(lab, probe, root, "gvisor"), cwd=root)
    seen = collect(lab, root, done, seconds)
    assert seen.status == "ok", seen.output  # the slow answer passed, in 2 s and more
    kept = times_home({"XDG_CACHE_HOME": str(lab.home / ".cache")})  # the lab's HOME
    learned = [json.loads(path.read_text()) for path in kept.glob("*.json")]
    assert not [t for f in learned for b in f["backends"].values() for t in b["times"]], learned
