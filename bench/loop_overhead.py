"""What the loop itself costs per iteration, beyond the model and the tests.

Runs the "fixed on iteration 2" scenario on examples/textstats: the scripted
OpenAI-compatible server (tests/model_server.py) answers instantly through the
real litellm path, the verifier runs in the real gVisor sandbox (warm pool of
one), and git is real. For each iteration it reports:

  * wall      - the iteration from start to verdict;
  * model     - the model call as the client measured it;
  * verify    - the verifier's wall time (sandbox + pytest);
  * tests     - what the stages themselves took inside the sandbox;
  * harness   - wall - model - verify: prompts, parsing, the gate, applying the
                edits, the commit, events and artifacts (target < 0.5 s);
  * sandbox   - verify - tests: handing the job to the sandbox and back.

    sudo .venv/bin/python bench/loop_overhead.py [--runs N] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from engine.project.settings import load_settings  # noqa: E402
from engine.run.gate import PolicyGate  # noqa: E402
from engine.run.start import start_run  # noqa: E402
from tests.model_server import ScriptedModelServer, reply  # noqa: E402
from tests.projects import committed_copy  # noqa: E402

FIXES = [
    ("true division", "return sum(len(w) for w in found) // len(found)", "/ len(found)"),
    ("n words", "return counts.most_common(n - 1)", "return counts.most_common(n)"),
]


def answer(explanation: str, search: str, replace: str) -> str:
    if replace.startswith("/"):
        replace = search.replace("// len(found)", replace)
    edit = {"path": "textstats/core.py", "search": search, "replace": replace}
    return json.dumps({"explanation": explanation, "edits": [edit]})


async def one_run(server: ScriptedModelServer, scratch: Path) -> list[dict[str, Any]]:
    root = committed_copy(REPO / "examples" / "textstats", scratch)
    server.script(*(reply(answer(*fix)) for fix in FIXES))
    settings = load_settings(
        root, {"model": "openai/scripted", "api_base": server.base_url, "sandbox": "gvisor"}
    )
    result = await start_run(root, settings, gate=PolicyGate())
    assert result.status.value == "ok", result.reason
    rows = []
    for record in result.iterations:
        stages = json.loads(
            (Path(result.run_dir) / f"iterations/{record.n:02d}/stage-tests.json").read_text()
        )
        tests_s = stages["duration_ms"] / 1000
        rows.append(
            {
                "n": record.n,
                "wall": record.duration_s,
                "model": record.model_s,
                "verify": record.verify_s,
                "tests": tests_s,
                "harness": record.duration_s - record.model_s - record.verify_s,
                "sandbox": record.verify_s - tests_s,
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    import os

    os.environ.setdefault("OPENAI_API_KEY", "sk-bench-not-a-real-key")
    server = ScriptedModelServer().start()
    rows: list[dict[str, Any]] = []
    try:
        for _ in range(args.runs):
            with tempfile.TemporaryDirectory() as scratch:
                rows += asyncio.run(one_run(server, Path(scratch)))
    finally:
        server.stop()
    keys = ["wall", "model", "verify", "tests", "harness", "sandbox"]
    medians = {key: round(statistics.median(row[key] for row in rows), 3) for key in keys}
    if args.json:
        print(json.dumps({"iterations": rows, "median": medians}, indent=1))
        return
    print(f"{len(rows)} iterations over {args.runs} runs; medians in seconds:")
    for key in keys:
        print(f"  {key:8} {medians[key]:7.3f}")


if __name__ == "__main__":
    main()
