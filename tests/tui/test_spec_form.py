"""The "New from spec" form, driven with Pilot over the real app's screen and styles: a filled
form gives the Spec, a bad field shows the engine's one-line problem under that field, and
escape gives nothing. SVG snapshots at 120x40 and 80x24."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Input, Static, TextArea

from engine.project.settings import Settings
from engine.spec.definition import Spec, load_spec
from tui.app import FixloopApp
from tui.screens.spec_form import SpecFormScreen

SnapCompare = Callable[..., bool]
REPO = Path(__file__).resolve().parents[2]
EXAMPLE = load_spec(REPO / "examples" / "specs" / "parse_duration.toml")
BIG = (120, 40)
SMALL = (80, 24)


def host(theme: str = "dark") -> FixloopApp:
    """The real app, started on nothing, so the form gets the app's theme and stylesheet."""
    settings = Settings(model="openai/gpt-4o-mini", sandbox="gvisor", approve="step", theme=theme)
    return FixloopApp(Path("/home/you/timekeeping"), settings, autostart=False)


class Opened:
    """The form pushed over the app, and what it was dismissed with."""

    def __init__(self) -> None:
        self.results: list[Spec | None] = []

    async def open(self, pilot: Pilot[Any], spec: Spec | None = None) -> SpecFormScreen:
        app = pilot.app
        assert isinstance(app, FixloopApp)
        # The main screen focuses its history once its panes are in: wait for it, or the
        # frame beneath the form depends on which came first.
        while not app.main.ready:
            await pilot.pause(0.01)
        await pilot.pause()
        screen = SpecFormScreen(spec)
        await pilot.app.push_screen(screen, self.results.append)
        await pilot.pause()
        for widget in [*screen.query(Input), *screen.query(TextArea)]:
            widget.cursor_blink = False
        return screen


def problem(screen: SpecFormScreen, field: str) -> str | None:
    """The problem shown under a field, or None when none is shown."""
    widget = screen.query_one(f"#problem-{field}", Static)
    return str(widget.render()) if widget.has_class("shown") else None


async def type_into(pilot: Pilot[Any], selector: str, text: str) -> None:
    """Click the field, empty it, type: keys for one-line fields; long text is pasted (typed
    key by key, a description takes half a minute of CPU)."""
    await pilot.click(selector)
    widget = pilot.app.screen.query_one(selector)
    if isinstance(widget, Input):
        widget.value = ""
        await pilot.press(*text)
    elif isinstance(widget, TextArea):
        widget.text = ""
        widget.insert(text)
    await pilot.pause()


async def test_a_filled_form_gives_the_spec() -> None:
    app = host()
    opened = Opened()
    async with app.run_test(size=BIG) as pilot:
        await opened.open(pilot)
        await type_into(pilot, "#name", "parse_duration")
        await type_into(pilot, "#module", "durations.py")
        await type_into(pilot, "#tests", "tests/test_durations.py")
        await type_into(pilot, "#signature", "parse_duration(text: str) -> int")
        await type_into(pilot, "#description", EXAMPLE.description)
        await type_into(pilot, "#examples", "\n".join(e.line() for e in EXAMPLE.examples))
        await type_into(pilot, "#constraints", "\n".join(EXAMPLE.constraints))
        await pilot.press("ctrl+s")
        await pilot.pause()
    assert opened.results == [EXAMPLE]


async def test_a_bad_signature_is_shown_under_it_and_the_form_stays() -> None:
    app = host()
    opened = Opened()
    async with app.run_test(size=BIG) as pilot:
        screen = await opened.open(pilot, EXAMPLE)
        await type_into(pilot, "#signature", "parse_duration(text) -> int")
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert opened.results == []
        assert app.screen is screen
        assert problem(screen, "signature") == (
            "signature `parse_duration(text) -> int`: parameter 'text' has no type hint "
            "(like text: str)"
        )
        assert problem(screen, "examples") is None
        assert screen.focused is screen.query_one("#signature", Input)
        await pilot.press("backspace")  # editing the field clears its stale problem
        await pilot.pause()
        assert problem(screen, "signature") is None


async def test_a_bad_example_line_names_the_example() -> None:
    app = host()
    opened = Opened()
    async with app.run_test(size=BIG) as pilot:
        screen = await opened.open(pilot, EXAMPLE)
        lines = "parse_duration('5m') == 300\nparse_duration('5m', 60) == 300"
        await type_into(pilot, "#examples", lines)
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert opened.results == []
        assert problem(screen, "examples") == (
            "example 2: `parse_duration('5m', 60)` does not fit parse_duration(text: str) -> int: "
            "the function takes 1 positional argument but 2 were given"
        )
        assert screen.focused is screen.query_one("#examples", TextArea)


async def test_an_empty_form_asks_for_the_first_missing_field() -> None:
    app = host()
    opened = Opened()
    async with app.run_test(size=BIG) as pilot:
        screen = await opened.open(pilot)
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert problem(screen, "name") == "missing field 'name'"
        assert opened.results == []


async def test_escape_goes_back_with_nothing() -> None:
    app = host()
    opened = Opened()
    async with app.run_test(size=BIG) as pilot:
        await opened.open(pilot, EXAMPLE)
        await pilot.press("escape")
        await pilot.pause()
    assert opened.results == [None]


async def test_enter_in_a_field_moves_to_the_next() -> None:
    app = host()
    opened = Opened()
    async with app.run_test(size=BIG) as pilot:
        screen = await opened.open(pilot)
        assert screen.focused is screen.query_one("#name", Input)
        await pilot.press("enter")
        assert screen.focused is screen.query_one("#module", Input)


def with_form(spec: Spec | None, *keys: str) -> Callable[[Pilot[Any]], Any]:
    async def run_before(pilot: Pilot[Any]) -> None:
        await Opened().open(pilot, spec)
        if keys:
            await pilot.press(*keys)
        await pilot.pause()

    return run_before


@pytest.mark.parametrize("theme", ["dark", "light"])
def test_spec_form_filled(snap_compare: SnapCompare, theme: str) -> None:
    assert snap_compare(host(theme), terminal_size=BIG, run_before=with_form(EXAMPLE))


def test_spec_form_at_80x24_with_a_problem(snap_compare: SnapCompare) -> None:
    bad = EXAMPLE.model_copy(update={"signature": "parse_duration(text) -> int"})
    run_before = with_form(bad, "ctrl+s")
    assert snap_compare(host("dark"), terminal_size=SMALL, run_before=run_before)


def test_spec_form_empty_at_80x24(snap_compare: SnapCompare) -> None:
    assert snap_compare(host("light"), terminal_size=SMALL, run_before=with_form(None))
