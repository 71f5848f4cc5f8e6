"""The report modal scrolls by keyboard at 80x24: down/up a line, PgDn/PgUp a page, End/Home
to the ends, with the report's text read from a file as the app reads it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.pilot import Pilot
from textual.widgets import Markdown

from engine.project.settings import Settings
from tui.app import FixloopApp
from tui.screens.report import ReportScreen

LONG = "# fixloop report\n\n" + "\n\n".join(f"- iteration {i}: failing" for i in range(1, 81))


class Host(FixloopApp):
    """The app with its stylesheet and no run, the report opened over it."""

    def __init__(self, path: Path) -> None:
        super().__init__(path.parent, Settings(model="openai/gpt-4o-mini"), autostart=False)
        self.path = path

    def on_mount(self) -> None:
        super().on_mount()
        self.push_screen(ReportScreen(self.path))


async def opened(pilot: Pilot[Any]) -> Markdown:
    for _ in range(200):
        await pilot.pause(0.02)
        screen = pilot.app.screen
        if isinstance(screen, ReportScreen):
            markdown = screen.query_one(Markdown)
            if "iteration 80" in markdown.source and markdown.max_scroll_y > 0:
                return markdown
    raise AssertionError("the report was not shown")


async def test_pgdn_and_end_scroll_the_report_and_home_goes_back(tmp_path: Path) -> None:
    path = tmp_path / "report.md"
    path.write_text(LONG, encoding="utf-8")
    async with Host(path).run_test(size=(80, 24)) as pilot:
        report = await opened(pilot)
        assert report.scroll_y == 0
        await pilot.press("pagedown")
        await pilot.pause()
        paged = report.scroll_y
        assert paged > 1
        await pilot.press("end")
        await pilot.pause()
        assert report.scroll_y == report.max_scroll_y
        await pilot.press("pageup")
        await pilot.pause()
        assert report.scroll_y < report.max_scroll_y
        await pilot.press("home")
        await pilot.pause()
        assert report.scroll_y == 0


async def test_down_and_up_scroll_the_report_a_line(tmp_path: Path) -> None:
    path = tmp_path / "report.md"
    path.write_text(LONG, encoding="utf-8")
    async with Host(path).run_test(size=(80, 24)) as pilot:
        report = await opened(pilot)
        await pilot.press("down", "down")
        await pilot.pause()
        assert report.scroll_y == 2
        await pilot.press("up")
        await pilot.pause()
        assert report.scroll_y == 1
