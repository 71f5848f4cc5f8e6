"""Model trouble through the real CLI process and litellm: a model that cannot be called stops
the run before it creates anything; a failure no retry can mend is not retried; the retries that
are made are told, as events and as progress lines.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import git
import pytest

from engine.project.paths import FIXLOOP_DIR
from engine.run.events import ModelRetrying
from engine.run.run_directory import read_events
from tests.model_server import ScriptedModelServer, status
from tests.projects import EXAMPLES, committed_copy

REPO = Path(__file__).parents[2]
KEY = "sk-test-trouble-0123456789"
REFUSING = "http://127.0.0.1:9/v1"  # the discard port: nothing listens, the connection is refused


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return committed_copy(EXAMPLES / "textstats", tmp_path, "the buggy example")


def headless(
    root: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui.cli", str(root), "--headless", "--sandbox", "gvisor", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={"PATH": "/usr/bin:/bin", "HOME": str(root.parent), **(env or {})},
        timeout=600,
        check=False,
    )


def fixloop_branches(root: Path) -> list[str]:
    return [head.name for head in git.Repo(root).heads if head.name.startswith("fixloop/")]


def test_a_missing_key_fails_in_seconds_before_any_request_or_branch(
    model_server: ScriptedModelServer, project: Path
) -> None:
    started = time.monotonic()
    done = headless(project, "--model", "openai/gpt-4o-mini", "--api-base", model_server.base_url)
    elapsed = time.monotonic() - started

    assert done.returncode == 2, done.stderr
    # Start-up alone (no request, no sandbox): ~1 s; the bound leaves room for the other
    # test process (make test runs two) on the same 2 cores, where 2.0 s flaked once (2.37 s).
    assert elapsed < 4.0
    assert model_server.count == 0
    assert fixloop_branches(project) == []
    assert not (project / FIXLOOP_DIR).exists()
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "OPENAI_API_KEY" in lines[0]
    assert lines[0].startswith("fixloop-tui: error: no API key for openai")


def test_an_unknown_provider_is_one_plain_line_and_no_branch(project: Path) -> None:
    done = headless(project, "--model", "nosuchprovider/x", env={"OPENAI_API_KEY": KEY})

    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        "fixloop-tui: error: unknown model provider 'nosuchprovider' in 'nosuchprovider/x':"
        " use a litellm model name such as openai/gpt-4o-mini"
    ]
    assert fixloop_branches(project) == []
    assert not (project / FIXLOOP_DIR).exists()


@pytest.mark.sandbox
@pytest.mark.usefixtures("needs_gvisor")
def test_a_401_from_the_server_is_asked_once_and_ends_the_run(
    model_server: ScriptedModelServer, project: Path
) -> None:
    model_server.script(status(401), status(401), status(401), status(401))

    done = headless(
        project,
        "--json",
        "--model",
        "openai/scripted",
        "--api-base",
        model_server.base_url,
        env={"OPENAI_API_KEY": KEY},
    )

    result = json.loads(done.stdout)
    assert result["status"] == "error", done.stderr
    assert model_server.count == 1
    assert "authentication failed: check the API key variable (OPENAI_API_KEY)" in result["reason"]
    assert "retry" not in done.stderr
    assert KEY not in done.stdout + done.stderr


@pytest.mark.sandbox
@pytest.mark.usefixtures("needs_gvisor")
def test_a_refused_connection_is_retried_and_each_retry_is_told(project: Path) -> None:
    done = headless(
        project,
        "--json",
        "--model",
        "openai/scripted",
        "--api-base",
        REFUSING,
        env={"OPENAI_API_KEY": KEY},
    )

    # An outage is a pause: the run stops resumable (exit 6), never `error`.
    assert done.returncode == 6, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "stopped", done.stderr
    assert "could not be reached" in result["reason"]
    assert "gave up after 4 attempts: connection failed" in result["reason"]
    events = read_events(Path(result["run_dir"]) / "events.jsonl")
    retries = [e for e in events if isinstance(e, ModelRetrying)]
    assert [(e.n, e.attempt, e.max_attempts, e.reason) for e in retries] == [
        (1, 2, 4, "connection refused"),
        (1, 3, 4, "connection refused"),
        (1, 4, 4, "connection refused"),
    ]
    assert [round(e.wait_s) for e in retries] == [1, 2, 4]  # the backoff, doubling
    told = [line for line in done.stderr.splitlines() if "retry" in line]
    assert told == [
        "fixloop: [1/4] the model did not answer (connection refused): retry 2/4 in 1 s",
        "fixloop: [1/4] the model did not answer (connection refused): retry 3/4 in 2 s",
        "fixloop: [1/4] the model did not answer (connection refused): retry 4/4 in 4 s",
    ]
