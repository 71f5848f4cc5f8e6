"""Runtime values end to end: the real CLI, the scripted model server through litellm, the real
gVisor sandbox. The locals the plugin caught inside the sandbox reach the model's prompt, and
a secret-looking one reaches neither the prompt nor the run directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.test_headless import fixloop
from tests.model_server import ScriptedModelServer, reply
from tests.projects import answer, committed_copy

pytestmark = [pytest.mark.sandbox, pytest.mark.usefixtures("needs_gvisor")]

PYPROJECT = '[tool.pytest.ini_options]\npythonpath = ["."]\ntestpaths = ["tests"]\n'
BITS = (
    "def bitcount(n):\n"
    '    """How many bits of n are set."""\n'
    "    count = 0\n"
    "    for bit in range(3):\n"
    "        count += (n >> bit) & 1\n"
    "    return count\n"
)
BITS_TEST = (
    "from bits.count import bitcount\n"
    "\n"
    "\n"
    "def test_bitcount_of_127():\n"
    "    n = 127\n"
    "    count = bitcount(n)\n"
    "    assert count == 7\n"
)
BITS_FIX = {"path": "bits/count.py", "search": "range(3)", "replace": "range(n.bit_length())"}
# Built at run time, so the whole secret is in no file: only the captured locals hold it.
SECRET = "sk-live-abcdefghijklmnopqrstuvwx"
CLIENT = (
    "def headers(retries):\n"
    '    token = "sk-live-" + "".join(chr(c) for c in range(97, 121))\n'
    "    per_try = 30 / retries\n"
    '    return {"Authorization": "Bearer " + token, "Timeout": str(per_try)}\n'
)
CLIENT_TEST = (
    "from client.http import headers\n"
    "\n"
    "\n"
    "def test_no_retries_means_one_try():\n"
    '    assert headers(0)["Timeout"] == "30.0"\n'
)
CLIENT_FIX = {"path": "client/http.py", "search": "30 / retries", "replace": "30 / max(retries, 1)"}


def project(tmp_path: Path, name: str, files: dict[str, str]) -> Path:
    source = tmp_path / "source" / name
    for path, text in {"pyproject.toml": PYPROJECT, **files}.items():
        (source / path).parent.mkdir(parents=True, exist_ok=True)
        (source / path).write_text(text)
    return committed_copy(source, tmp_path / "checkout")


def first_prompt(server: ScriptedModelServer) -> str:
    content = server.requests[0].body["messages"][-1]["content"]
    assert isinstance(content, str)
    return content


def test_by_default_the_first_prompt_shows_the_failing_frames_locals(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    root = project(
        tmp_path,
        "bits",
        {"bits/__init__.py": "", "bits/count.py": BITS, "tests/test_count.py": BITS_TEST},
    )
    model_server.script(reply(answer("count every bit of n", BITS_FIX)))
    done, result = fixloop(model_server, root)
    assert done.returncode == 0, done.stderr
    assert result["status"] == "ok"
    runtime = [line for line in first_prompt(model_server).split("\n") if "locals at" in line]
    assert runtime == [
        "  locals at tests/test_count.py:7 in test_bitcount_of_127: n = 127, count = 3"
    ]


def test_without_runtime_values_the_prompt_has_no_locals(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    root = project(
        tmp_path,
        "bits",
        {"bits/__init__.py": "", "bits/count.py": BITS, "tests/test_count.py": BITS_TEST},
    )
    model_server.script(reply(answer("count every bit of n", BITS_FIX)))
    done, result = fixloop(model_server, root, "--no-runtime-values")
    assert done.returncode == 0, done.stderr
    prompt = first_prompt(model_server)
    assert "assert count == 7" in prompt
    assert "locals at" not in prompt
    packet = (Path(result["run_dir"]) / "iterations" / "00" / "packet.txt").read_text()
    assert "locals at" not in packet


def test_a_secret_local_is_redacted_in_the_prompt_and_the_run_directory(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    root = project(
        tmp_path,
        "client",
        {"client/__init__.py": "", "client/http.py": CLIENT, "tests/test_http.py": CLIENT_TEST},
    )
    model_server.script(reply(answer("at least one try", CLIENT_FIX)))
    done, result = fixloop(model_server, root)
    assert done.returncode == 0, done.stderr
    prompt = first_prompt(model_server)
    assert "  locals at client/http.py:3 in headers: retries = 0, token = [REDACTED]" in prompt
    assert SECRET not in prompt
    run_dir = Path(result["run_dir"])
    stored = [p for p in run_dir.rglob("*") if p.is_file()]
    assert any(p.name.startswith("stage-") for p in stored)
    assert not [p for p in stored if SECRET.encode() in p.read_bytes()]
