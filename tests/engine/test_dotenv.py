"""A repository's `.env` is not the user's environment: importing litellm from inside a checkout
leaves the environment as the user set it (litellm loads the working directory's `.env` unless
told it runs in production)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).parents[2]

PROBE = """
import json, os
from engine.model.litellm_module import import_litellm
import_litellm()
print(json.dumps({k: os.environ.get(k) for k in ("OPENAI_API_BASE", "FIXLOOP_SANDBOX")}))
"""


def test_a_checkouts_dotenv_does_not_reach_the_environment(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text(
        "OPENAI_API_BASE=http://127.0.0.1:9/v1\nFIXLOOP_SANDBOX=unsafe-local\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_BASE", "FIXLOOP_SANDBOX")}
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=tmp_path,
        env={**env, "PYTHONPATH": str(REPO), "LITELLM_MODE": "DEV"},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert json.loads(done.stdout.splitlines()[-1]) == {
        "OPENAI_API_BASE": None,
        "FIXLOOP_SANDBOX": None,
    }
