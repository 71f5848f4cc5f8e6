"""The four-task batch run on this machine once a session: its own test (test_batch.py) and
the Ray run's comparison (test_batch_ray.py) read the same run instead of running it twice."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sandbox.errors import SandboxUnavailable
from sandbox.gvisor import check_can_run
from tests.conftest import sandbox_unavailable
from tests.e2e.batch_runs import FOUR_TASKS, batch, script_four, write_batch
from tests.model_server import RecordedRequest, ScriptedModelServer
from tests.projects import EXAMPLES, committed_copy


@dataclass(frozen=True)
class BatchHere:
    project: Path  # the repository every task names
    tasks: Path  # the batch file
    out: Path
    done: subprocess.CompletedProcess[str]
    whole: dict[str, Any]  # its --json object
    requests: list[RecordedRequest]  # what the model server was asked


@pytest.fixture(scope="session")
def four_tasks_here(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BatchHere]:
    try:
        check_can_run()
    except SandboxUnavailable as exc:
        sandbox_unavailable(str(exc))
    root = tmp_path_factory.mktemp("batch-here")
    project = committed_copy(EXAMPLES / "textstats", root / "repos", "the buggy example")
    tasks = write_batch(root / "tasks.jsonl", project, FOUR_TASKS)
    server = ScriptedModelServer().start()
    try:
        script_four(server)
        done, whole = batch(server, tasks, root / "out", "--jobs", "2")
        yield BatchHere(project, tasks, root / "out", done, whole, list(server.requests))
    finally:
        server.stop()
