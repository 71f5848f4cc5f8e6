"""How late the app's event loop wakes while a run goes on: the measurement behind
`bench/tui_startup.py --stall`, run in its own process so that the bench never imports the app.

    python -m tui.stall_probe API_BASE PROJECT [PROJECT ...]

Each PROJECT is opened as `fixloop-tui PROJECT` opens it, in step mode, against the model at
API_BASE (the bench's scripted model server), and every proposal is approved; meanwhile a
probe on the UI's loop sleeps 10 ms at a time and records how late it wakes. The first run is
the process's first (litellm loads in it), the later ones warm. One JSON list on stdout, one
object per project. It does nothing `fixloop-tui PROJECT` does not: the project's tests run in
the sandbox as in any run, and the model is the one named here, never one the project names.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from engine.project.settings import load_settings
from tui.app import FixloopApp
from tui.screens.end import EndScreen
from tui.screens.review import ReviewScreen

RUN_LIMIT_S = 300


async def stall(project: Path, api_base: str) -> dict[str, Any]:
    """One run in the app, step mode, approving every proposal; how late the UI loop woke."""
    settings = load_settings(project, {"model": "openai/scripted", "api_base": api_base})
    app = FixloopApp(project, settings, task="Make the failing tests pass.")
    lateness: list[tuple[float, float]] = []  # (how late, when)
    started = time.perf_counter()

    async def probe() -> None:
        while True:
            before = time.perf_counter()
            await asyncio.sleep(0.01)
            now = time.perf_counter()
            lateness.append((now - before - 0.01, now - started))

    async with app.run_test(size=(120, 40)) as pilot:
        task = asyncio.create_task(probe())
        approved = None
        while not isinstance(app.screen, EndScreen):
            if time.perf_counter() - started > RUN_LIMIT_S:
                raise SystemExit(f"the run did not end in {RUN_LIMIT_S} s")
            if isinstance(app.screen, ReviewScreen) and app.screen is not approved:
                approved = app.screen
                await pilot.press("a")
            await pilot.pause(0.05)
        elapsed = time.perf_counter() - started
        task.cancel()
        status = app.screen.outcome.status
        while app.running:
            await pilot.pause(0.05)
    ordered = sorted(late for late, _ in lateness)
    worst = sorted(lateness, reverse=True)[:3]
    return {
        "status": status,
        "run_s": round(elapsed, 2),
        "max_stall_ms": round(ordered[-1] * 1000, 1),
        "p99_stall_ms": round(ordered[int(len(ordered) * 0.99)] * 1000, 1),
        "median_stall_ms": round(statistics.median(ordered) * 1000, 2),
        "worst_ms_at_s": [(round(late * 1000), round(at, 1)) for late, at in worst],
    }


async def stalls(api_base: str, projects: list[Path]) -> list[dict[str, Any]]:
    return [await stall(project, api_base) for project in projects]


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("usage: python -m tui.stall_probe API_BASE PROJECT [PROJECT ...]", file=sys.stderr)
        return 2
    print(json.dumps(asyncio.run(stalls(argv[0], [Path(p) for p in argv[1:]]))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
