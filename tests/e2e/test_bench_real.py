"""The real suite's selection on cachetools (pinned sdist from PyPI, set up as
`bench/real_projects.py` does: its own `.venv`, installed editable), in an empty cache of its
own: seeded bugs its suite fails the same way twice, and the same seed gets the same bugs,
the second time from the cache. Setting cachetools up from nothing (download, venv, pip)
and screening takes more than a minute here, so it runs on request: `pytest -m manual`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.manual]

REPO = Path(__file__).resolve().parents[2]
SELECT = """
import asyncio, json
from bench.suite.real import real_projects
from engine.project.settings import Settings

notes = []
[project] = asyncio.run(
    real_projects(["cachetools"], 11, 2, Settings(), lambda event: notes.append(event.detail))
)
print(json.dumps({
    "bugs": [[bug.id, bug.failing] for bug in project.bugs],
    "screened_on": project.screened_on,
    "from_cache": project.from_cache,
}))
"""


def select(cache: Path) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", SELECT],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={"PATH": "/usr/bin:/bin", "HOME": str(cache.parent), "XDG_CACHE_HOME": str(cache)},
        timeout=1200,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return result


def test_cachetools_bugs_fail_its_suite_and_the_seed_picks_the_same_ones(tmp_path: Path) -> None:
    first = select(tmp_path / "cache")
    bugs = first["bugs"]
    assert isinstance(bugs, list)
    assert len(bugs) == 2
    assert all(failing for _, failing in bugs)  # each fails at least one of its tests
    assert all(bug_id.startswith("src/cachetools/") for bug_id, _ in bugs)
    assert first["screened_on"] == "host"
    assert first["from_cache"] is False
    again = select(tmp_path / "cache")
    assert again["bugs"] == bugs
    assert again["from_cache"] is True
