"""How fast the embedded model answers N candidates at once: N concurrent completions of one
realistic repair prompt, decoded together in llama.cpp's parallel slots.

The prompt is what the loop sends on examples/textstats (small profile, `whole` format: the
module, the read-only test file and a captured repair packet, ~550 tokens); the answers are
whole corrected files (~150-300 tokens), sampled at `--temperature` with distinct seeds.
Each round changes the task line, so the files and packet are read afresh as in a new
iteration (only the system prompt stays cached, as it does in a run). Per N it prints the
best wall time over `--runs` rounds and the spread, and the aggregate completion tokens/s.
The model shares the CPU with whatever else runs: the load average is printed with it.

    python -m bench.local_parallel [--n 1,2,3,4] [--runs 2] [--temperature 0.8] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from engine.feedback.prompts import PromptFile, messages  # noqa: E402
from engine.model.client import LiteLLMClient  # noqa: E402
from engine.model.local import EMBEDDED_MODEL, server  # noqa: E402
from engine.model.types import Completion, Message  # noqa: E402

PROJECT = REPO / "examples" / "textstats"
# The first repair packet of a real run on examples/textstats (iterations/01/prompt.json).
PACKET = """\
Verification failed (iteration 1/4): 2 of 5 tests failing. Error class: logic.

FAILED: tests/test_core.py::test_mean_word_length_is_exact (tests/test_core.py:13)
  failing line: assert mean_word_length("ab abc") == 2.5
  expected: `2.5`
  actual:   `2`

Also failing:
- failed: tests/test_core.py::test_top_words_returns_n — expected `[('a', 3), ('b', 2)]`, \
got `[('a', 3)]`

Fix only the failures above. Keep public names and signatures. Do not edit, skip or delete \
tests."""


def repair_prompt(round_no: int) -> list[Message]:
    files = [
        PromptFile(path="textstats/core.py", text=(PROJECT / "textstats/core.py").read_text()),
        PromptFile(
            path="tests/test_core.py",
            text=(PROJECT / "tests/test_core.py").read_text(),
            read_only=True,
        ),
    ]
    task = f"Make the failing tests pass (round {round_no})."
    return messages(task, files, PACKET, "whole")


@dataclass(frozen=True)
class Round:
    """N concurrent answers to one prompt."""

    n: int
    wall_s: float
    prompt_tokens: int  # per answer (the same prompt)
    completion_tokens: int  # all answers together
    slowest_answer_s: float
    load_average: float  # 1-minute load when the round ended (2 cores here)

    @property
    def tokens_per_second(self) -> float:
        return self.completion_tokens / self.wall_s


async def one_round(
    client: LiteLLMClient, n: int, round_no: int, temperature: float, seeds: itertools.count[int]
) -> Round:
    prompt = repair_prompt(round_no)
    started = time.monotonic()
    answers: list[Completion] = await asyncio.gather(
        *(client.complete(prompt, temperature=temperature, seed=next(seeds)) for _ in range(n))
    )
    wall = time.monotonic() - started
    return Round(
        n=n,
        wall_s=wall,
        prompt_tokens=answers[0].usage.prompt_tokens,
        completion_tokens=sum(a.usage.completion_tokens for a in answers),
        slowest_answer_s=max(a.duration_s for a in answers),
        load_average=os.getloadavg()[0],
    )


async def measure(ns: list[int], runs: int, temperature: float) -> list[Round]:
    client = LiteLLMClient(EMBEDDED_MODEL, timeout_s=900, max_tokens=1024)
    seeds = itertools.count(1)
    rounds = itertools.count(1)
    await client.complete(repair_prompt(0), temperature=0.0)  # loads the model, warms it up
    results: list[Round] = []
    # Interleaved (1, 2, 4, 1, 2, 4, ...) so that a busy spell of the machine hits every N.
    for _ in range(runs):
        for n in ns:
            result = await one_round(client, n, next(rounds), temperature, seeds)
            print(  # as it goes: a round on a busy machine can take minutes
                f"N={n}: {result.wall_s:.1f} s, {result.completion_tokens} tokens, "
                f"{result.tokens_per_second:.1f} tokens/s, load {result.load_average:.1f}",
                file=sys.stderr,
                flush=True,
            )
            results.append(result)
    return results


def table(results: list[Round]) -> str:
    lines = [
        f"embedded model {EMBEDDED_MODEL}, {server.SLOTS} slots, "
        f"{server.N_THREADS} threads, {os.cpu_count()} cores",
        "   N  prompt  answers' tokens  wall (best, spread)  tokens/s (best)  load avg",
    ]
    for n in sorted({r.n for r in results}):
        of_n = [r for r in results if r.n == n]
        best = min(of_n, key=lambda r: r.wall_s)
        spread = max(r.wall_s for r in of_n) - best.wall_s
        tokens = statistics.median(r.completion_tokens for r in of_n)
        loads = ", ".join(f"{r.load_average:.1f}" for r in of_n)
        lines.append(
            f"  {n:2d}  {best.prompt_tokens:6d}  {tokens:15.0f}  "
            f"{best.wall_s:7.1f} s  ±{spread:6.1f} s  {best.tokens_per_second:15.1f}  {loads}"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", default="1,2,4", help="concurrent answers per round (1,2,4)")
    parser.add_argument("--runs", type=int, default=2, help="rounds per N (2)")
    parser.add_argument("--temperature", type=float, default=0.8)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    ns = [int(n) for n in args.n.split(",")]
    if max(ns) > server.SLOTS:
        parser.error(f"N above {server.SLOTS} would wait for a slot: that measures the queue")
    results = asyncio.run(measure(ns, args.runs, args.temperature))
    if args.json:
        print(json.dumps([asdict(r) | {"tokens_per_second": r.tokens_per_second} for r in results]))
    else:
        print(table(results))


if __name__ == "__main__":
    main()
