"""How many prompt tokens the small and the full prompt profile cost, iteration by iteration.

Three buggy projects (examples/textstats and two of tests/fixtures/projects) each run twice
through the real loop, once per profile, in the `whole` edit format the embedded model uses:
the scripted OpenAI-compatible server (tests/model_server.py) answers a wrong fix, then the
right one, through litellm; the verifier is the real gVisor sandbox. Every request the
server received is counted with `count_tokens(..., "local/qwen2.5-coder-1.5b")`: litellm has
no tokenizer of its own for that name and counts with tiktoken's cl100k_base. With `--exact`
each prompt is also sent to the embedded model itself for one token, and llama.cpp's own
count (Qwen's tokenizer, the chat template included) is reported.

    sudo .venv/bin/python bench/prompt_profiles.py [--exact] [--show] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from engine.model.local import EMBEDDED_MODEL  # noqa: E402
from engine.model.types import Message  # noqa: E402
from engine.project.settings import load_settings  # noqa: E402
from engine.run.gate import PolicyGate  # noqa: E402
from engine.run.start import start_run  # noqa: E402
from engine.text.tokens import approximate_tokens, count_tokens  # noqa: E402
from tests.model_server import ScriptedModelServer, reply  # noqa: E402
from tests.projects import EXAMPLES, PROJECTS, committed_copy  # noqa: E402

# Each project: the file under repair, then (search, replace) of a wrong and a right answer.
CASES: dict[str, tuple[Path, str, list[tuple[str, str]]]] = {
    "textstats": (
        EXAMPLES / "textstats",
        "textstats/core.py",
        [
            ("// len(found)", "/ len(found)"),  # one of the two bugs
            ("most_common(n - 1)", "most_common(n)"),
        ],
    ),
    "exception_in_code": (
        PROJECTS / "exception_in_code",
        "orders/__init__.py",
        [
            (
                "    return sum(values)",
                "    if not values:\n        return None\n    return sum(values)",
            ),
            ("return None", "return 0.0"),
        ],
    ),
    "arity_error": (
        PROJECTS / "arity_error",
        "receipts/__init__.py",
        [
            ("format_price(name, amount)", "format_price(name)"),
            ("format_price(name)", "format_price(amount)"),
        ],
    ),
}


def whole_answers(source: Path, path: str, steps: list[tuple[str, str]]) -> list[str]:
    """The `whole` answers: after each step, the file's complete text."""
    text = (source / path).read_text()
    answers = []
    for search, replace in steps:
        assert search in text, (path, search)
        text = text.replace(search, replace, 1)
        answers.append(f"{path}\n```python\n{text}```\n")
    return answers


async def one_run(server: ScriptedModelServer, case: str, profile: str, scratch: Path) -> None:
    source, path, steps = CASES[case]
    root = committed_copy(source, scratch)
    server.script(*(reply(text) for text in whole_answers(source, path, steps)))
    flags = {
        "model": "openai/scripted",
        "api_base": server.base_url,
        "sandbox": "gvisor",
        "edit_format": "whole",
        "prompt_profile": profile,
    }
    result = await start_run(root, load_settings(root, flags), gate=PolicyGate())
    assert result.status.value == "ok", result.reason


def exact_tokens(messages: list[Message]) -> int:
    """The embedded model's own prompt count: one token asked, llama.cpp's timings read."""
    from engine.errors import ModelError
    from engine.model.client import LiteLLMClient
    from engine.model.local.server import last_timings

    client = LiteLLMClient(EMBEDDED_MODEL, max_tokens=1, timeout_s=600)
    # Truncated at the one token asked for (an error to the client): the prompt was read.
    with contextlib.suppress(ModelError):
        asyncio.run(client.complete(messages))
    timings = last_timings()
    assert timings is not None, "the embedded model did not answer"
    return timings.prompt_tokens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--exact", action="store_true", help="also ask the embedded model")
    parser.add_argument("--show", action="store_true", help="print every prompt")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "sk-bench-not-a-real-key")
    rows: list[dict[str, Any]] = []
    for case in CASES:
        for profile in ("full", "small"):
            server = ScriptedModelServer().start()
            try:
                with tempfile.TemporaryDirectory() as scratch:
                    asyncio.run(one_run(server, case, profile, Path(scratch)))
            finally:
                server.stop()
            for n, request in enumerate(server.requests, start=1):
                messages = [Message(**m) for m in request.body["messages"]]
                text = "\n".join(m.content for m in messages)
                row = {
                    "project": case,
                    "profile": profile,
                    "iteration": n,
                    "tokens": count_tokens(text, EMBEDDED_MODEL),
                    "approx": approximate_tokens(text),
                }
                if args.exact:
                    row["exact"] = exact_tokens(messages)
                rows.append(row)
                if args.show:
                    print(f"===== {case} {profile} iteration {n}\n{text}\n")
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    exact = " exact" if args.exact else ""
    print(f"project            profile iter tokens approx{exact}")
    for row in rows:
        tail = f" {row['exact']:5d}" if args.exact else ""
        print(
            f"{row['project']:18} {row['profile']:7} {row['iteration']:4d} "
            f"{row['tokens']:6d} {row['approx']:6d}{tail}"
        )


if __name__ == "__main__":
    main()
