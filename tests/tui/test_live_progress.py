"""Progress while the model answers, in the app at 80x24: the header's tokens rise as the
answer streams and are corrected to the server's count when it ends; with candidates, a row
per answer shows its own count while they are written. The scripted model server streams
over HTTP (paced, or paused mid-answer), the first verification runs in the real sandbox."""

from __future__ import annotations

import re
import threading
from pathlib import Path

from engine.run.events import ModelResponded
from tests.model_server import ScriptedModelServer, paced, paused, replies, reply
from tests.projects import MEAN_FIX, TOP_FIX, answer
from tests.tui.test_app import (
    api_key,
    end_of_run,
    make_app,
    project,
    run_events,
    sandboxed,
    wait_for,
)
from tui.app import FixloopApp
from tui.widgets.header import RunHeader

__all__ = ["api_key", "project"]  # the fixtures, imported for the tests below

SIZE = (80, 24)
RIGHT = answer("fix the mean and top_words", MEAN_FIX, TOP_FIX)
ALT = answer("fix the mean only", MEAN_FIX)


def screen_text(app: FixloopApp) -> str:
    """What the terminal shows now, line by line."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


def header_tokens(app: FixloopApp) -> int:
    """The tokens the header's second line says were spent."""
    line = str(app.main.query_one(RunHeader).render()).splitlines()[1]
    found = re.search(r"([\d,]+) tok", line)
    assert found is not None, line
    return int(found.group(1).replace(",", ""))


def answered(app: FixloopApp) -> bool:
    """The first iteration's answer is in (its `ModelResponded` folded in)."""
    it = app.main.view.iterations.get(1)
    return it is not None and it.status != "asking"


@sandboxed
async def test_the_headers_tokens_rise_while_the_answer_streams_then_take_the_servers_count(
    model_server: ScriptedModelServer, project: Path
) -> None:
    model_server.script(paced(reply(RIGHT), 0.1))
    app = make_app(model_server, project, approve="auto")
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: model_server.count == 1, "the model request")
        seen: list[int] = []
        while not answered(app):
            if "answering:" in screen_text(app):
                seen.append(header_tokens(app))
            await pilot.pause(0.05)
        assert len(set(seen)) >= 3  # it rose, piece by piece, before the answer ended
        assert seen == sorted(seen)
        await end_of_run(pilot)
        (usage,) = [e for e in run_events(app) if isinstance(e, ModelResponded)]
        server_count = usage.prompt_tokens + usage.completion_tokens
        assert server_count != seen[-1]  # the server counts words: the estimate is corrected
        assert header_tokens(app) == server_count


@sandboxed
async def test_three_candidates_show_three_token_counts_while_they_are_written(
    model_server: ScriptedModelServer, project: Path
) -> None:
    release = threading.Event()
    model_server.script(paused(reply(ALT), 4, release), paused(replies(RIGHT, ALT), 4, release))
    app = make_app(model_server, project, candidates=3, approve="auto")
    try:
        async with app.run_test(size=SIZE) as pilot:
            rows = re.compile(r"#([123]) ▍ (\d+) tok")

            def three_counts() -> bool:
                return {m.group(1) for m in rows.finditer(screen_text(app))} == {"1", "2", "3"}

            await wait_for(pilot, three_counts, "three candidates' counts on screen")
            counts = {m.group(1): int(m.group(2)) for m in rows.finditer(screen_text(app))}
            assert all(count > 0 for count in counts.values())
            assert "answering:" in screen_text(app)
            assert not any(isinstance(e, ModelResponded) for e in run_events(app))
            release.set()
            await end_of_run(pilot)
    finally:
        release.set()
