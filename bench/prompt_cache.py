"""Time per iteration with the embedded model's prompt cache off and on, in one run.

The same repair tasks (examples/textstats and two of tests/fixtures/projects) run through the
real loop with the embedded model (llama.cpp in process, 2 threads) and the real gVisor
sandbox, once per arm, the model loaded once for both:

- off: every prompt is decoded afresh (`cache_prompt` false) and each of an iteration's
  candidates is its own request, so its prompt is decoded once per candidate;
- on:  a request continues from the longest prefix its slot already decoded, and the sampled
  candidates are one request whose answers continue one decoded prompt (`n_cmpl`);
- prefix (with `--arms on,prefix,off`): the prefix reused, each candidate its own request
  (what the embedded model did before its candidates shared a prompt).

For each task the "on" arm runs first, so it never starts from a prompt the "off" arm left
decoded. Per arm it prints llama.cpp's own numbers, summed over every generation: prompt
tokens decoded and reused, the seconds spent decoding them, and the loop's seconds per
iteration (wall, and the model's part of it). Greedy answers are the same in both arms;
sampled candidates are drawn differently (one request against one per seed), so what was
fixed may differ; the time per iteration is the measure.

    flock /tmp/fixloop-heavy.lock .venv/bin/python bench/prompt_cache.py [--tasks a,b]
        [--max-iters 2] [--candidates N] [--arms on,prefix,off] [--json]

`--order` asks no model: the three tasks of bench/prompt_profiles.py run through the loop with
the scripted model (a wrong answer, then the right one), once with the code first (the
default) and once with `code_last`, and it prints how much of each iteration's prompt repeats
the one before it word for word: the most a prefix cache can reuse across iterations.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from engine.model.local import EMBEDDED_MODEL  # noqa: E402
from engine.model.local import provider as local_provider  # noqa: E402
from engine.model.local import server as local_server  # noqa: E402
from engine.project.settings import load_settings  # noqa: E402
from engine.run.gate import PolicyGate  # noqa: E402
from engine.run.start import start_run  # noqa: E402
from tests.projects import EXAMPLES, PROJECTS, committed_copy  # noqa: E402

TASKS = {
    "textstats": EXAMPLES / "textstats",
    "exception_in_code": PROJECTS / "exception_in_code",
    "arity_error": PROJECTS / "arity_error",
}
ARMS = ("on", "prefix", "off")


@dataclass
class CacheArmRun:
    task: str
    arm: str
    status: str
    iterations: int
    generations: int
    prompt_tokens: int  # as llama.cpp counted them, the chat template included
    read_tokens: int  # decoded
    reused_tokens: int  # taken from a slot's cache
    prompt_read_s: float
    model_s: float  # the loop's model seconds, summed over iterations
    iteration_s: list[float]

    @property
    def per_iteration_s(self) -> float:
        return statistics.fmean(self.iteration_s) if self.iteration_s else 0.0


async def one_run(
    task: str, arm: str, scratch: Path, max_iters: int, candidates: int | None
) -> CacheArmRun:
    root = committed_copy(TASKS[task], scratch)
    local_provider.set_prompt_cache(arm != "off", answers_together=arm == "on")
    flags: dict[str, Any] = {"model": EMBEDDED_MODEL, "sandbox": "gvisor", "max_iters": max_iters}
    if candidates is not None:
        flags["candidates"] = candidates
    seen = len(local_server.timings_log())
    result = await start_run(root, load_settings(root, flags), gate=PolicyGate())
    timings = local_server.timings_log()[seen:]
    return CacheArmRun(
        task=task,
        arm=arm,
        status=result.status.value,
        iterations=len(result.iterations),
        generations=len(timings),
        prompt_tokens=sum(t.prompt_tokens for t in timings),
        read_tokens=sum(t.read_prompt_tokens for t in timings),
        reused_tokens=sum(t.cached_prompt_tokens for t in timings),
        prompt_read_s=sum(t.prompt_read_seconds for t in timings),
        model_s=sum(i.model_s for i in result.iterations),
        iteration_s=[i.duration_s for i in result.iterations],
    )


def totals(rows: list[CacheArmRun], arm: str) -> dict[str, float]:
    mine = [r for r in rows if r.arm == arm]
    iterations = sum(r.iterations for r in mine) or 1
    return {
        "iterations": sum(r.iterations for r in mine),
        "read_tokens": sum(r.read_tokens for r in mine),
        "reused_tokens": sum(r.reused_tokens for r in mine),
        "prompt_read_s": sum(r.prompt_read_s for r in mine),
        "prompt_read_s_per_iteration": sum(r.prompt_read_s for r in mine) / iterations,
        "model_s_per_iteration": sum(r.model_s for r in mine) / iterations,
        "s_per_iteration": sum(sum(r.iteration_s) for r in mine) / iterations,
    }


def shared_prefix_tokens(before: str, after: str) -> int:
    """Tokens of the longest common prefix of two prompts (the embedded model's count)."""
    from engine.text.tokens import count_tokens

    same = 0
    for a, b in zip(before, after, strict=False):
        if a != b:
            break
        same += 1
    return count_tokens(before[:same], EMBEDDED_MODEL) if same else 0


def prompt_order() -> None:
    """Per task and order: each later iteration's prompt tokens and how many repeat the
    previous prompt's opening."""
    from bench.prompt_profiles import CASES, whole_answers
    from engine.run.gate import PolicyGate
    from engine.text.tokens import count_tokens
    from tests.model_server import ScriptedModelServer, reply

    os.environ.setdefault("OPENAI_API_KEY", "sk-bench-not-a-real-key")
    print("task               order      iter tokens shared")
    for case, (source, path, steps) in CASES.items():
        for order, code_last in (("code first", False), ("code last", True)):
            model = ScriptedModelServer().start()
            try:
                model.script(*(reply(text) for text in whole_answers(source, path, steps)))
                flags = {
                    "model": "openai/scripted",
                    "api_base": model.base_url,
                    "sandbox": "gvisor",
                    "edit_format": "whole",
                    "code_last": code_last,
                }
                with tempfile.TemporaryDirectory() as scratch:
                    root = committed_copy(source, Path(scratch))
                    asyncio.run(start_run(root, load_settings(root, flags), gate=PolicyGate()))
            finally:
                model.stop()
            texts = [
                "\n".join(m["content"] for m in request.body["messages"])
                for request in model.requests
            ]
            for n in range(1, len(texts)):
                tokens = count_tokens(texts[n], EMBEDDED_MODEL)
                shared = shared_prefix_tokens(texts[n - 1], texts[n])
                print(f"{case:18} {order:10} {n + 1:4d} {tokens:6d} {shared:6d}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", default=",".join(TASKS), help="comma-separated task names")
    parser.add_argument("--max-iters", type=int, default=2)
    parser.add_argument("--candidates", type=int, default=None, help="default: the model's")
    parser.add_argument("--arms", default="on,off", help=f"of {','.join(ARMS)}, in this order")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--order", action="store_true", help="the prompt order, no model asked")
    args = parser.parse_args()
    if args.order:
        prompt_order()
        return
    arms = [arm for arm in args.arms.split(",") if arm in ARMS]
    local_provider.ensure_registered(EMBEDDED_MODEL)
    load_s = local_provider.preload(EMBEDDED_MODEL)
    rows: list[CacheArmRun] = []
    for task in args.tasks.split(","):
        for arm in arms:
            with tempfile.TemporaryDirectory() as scratch:
                row = asyncio.run(
                    one_run(task, arm, Path(scratch), args.max_iters, args.candidates)
                )
            rows.append(row)
            print(f"# {json.dumps(asdict(row))}", flush=True)
    local_provider.set_prompt_cache(True)
    if args.json:
        out = {
            "load_s": load_s,
            "rows": [asdict(r) for r in rows],
            "totals": {a: totals(rows, a) for a in arms},
        }
        print(json.dumps(out, indent=1))
        return
    print(f"\nmodel load {load_s:.1f} s; threads {local_server.N_THREADS}; cpus {os.cpu_count()}")
    print("task               cache status       iters gens  read reused read_s  model_s/it  s/it")
    for r in rows:
        model_per = r.model_s / max(r.iterations, 1)
        print(
            f"{r.task:18} {r.arm:5} {r.status:12} {r.iterations:5d} {r.generations:4d} "
            f"{r.read_tokens:5d} {r.reused_tokens:6d} {r.prompt_read_s:6.1f} "
            f"{model_per:10.1f} {r.per_iteration_s:5.1f}"
        )
    for arm in arms:
        t = totals(rows, arm)
        print(
            f"all cache {arm:3}: {t['iterations']:.0f} iterations, {t['read_tokens']:.0f} prompt "
            f"tokens read, {t['reused_tokens']:.0f} reused, {t['prompt_read_s']:.1f} s reading "
            f"prompts ({t['prompt_read_s_per_iteration']:.1f} s/iteration), model "
            f"{t['model_s_per_iteration']:.1f} s/iteration, {t['s_per_iteration']:.1f} s/iteration"
        )


if __name__ == "__main__":
    main()
