"""The fuzzy file picker: `+` on the running screen adds a project file to what every later
prompt shows, `-` drops one of the files added. It lists names only (the project's tracked
files, `git ls-files`, through the engine's `tracked_files`); the engine reads a picked file
through its safe reader (engine/project/reading.py), which refuses links out of the project,
anything under `.git` and files too large. Dismissed with the picked name, or None."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical
from textual.fuzzy import Matcher
from textual.screen import ModalScreen
from textual.widgets import Footer, Input, OptionList, Static
from textual.widgets.option_list import Option

from tui.keymap import FILES, bindings_for

SHOWN = 200  # the best matches listed; typing narrows the rest


def fuzzy_matches(query: str, names: Sequence[str], limit: int = SHOWN) -> list[str]:
    """`names` that hold `query`'s letters in order, best first (all of them, in order, for
    an empty query)."""
    if not query.strip():
        return list(names[:limit])
    matcher = Matcher(query.strip())
    scored = [(matcher.match(name), name) for name in names]
    found = sorted((item for item in scored if item[0] > 0), key=lambda item: -item[0])
    return [name for _, name in found[:limit]]


class FilesScreen(ModalScreen[str | None]):
    """Pick one name by typing part of it; enter takes the highlighted one."""

    DEFAULT_CSS = """
    FilesScreen > .dialog.files { height: auto; max-height: 22; max-width: 90; }
    FilesScreen OptionList { height: auto; max-height: 14; }
    FilesScreen #files-said { margin: 0; color: $text-muted; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [*bindings_for(FILES)]

    def __init__(self, title: str, names: Sequence[str] | None = None, *, project: Path) -> None:
        """`names` to pick from, or None: the project's tracked files, listed by a worker."""
        super().__init__()
        self.title_text = title
        self.project = project
        self.names: list[str] = list(names) if names is not None else []
        self.loading = names is None

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog files") as dialog:
            dialog.border_title = self.title_text
            yield Input(placeholder="type part of a file's name", id="files-query")
            yield Static("", id="files-said")
            yield OptionList(id="files-list")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.query_one(Input).focus()
        if self.loading:
            self.query_one("#files-said", Static).update("listing the project's files…")
            self._list_tracked()
        else:
            self._show("")

    @work(thread=True, exit_on_error=False)
    def _list_tracked(self) -> None:
        from engine.run.talk import tracked_files

        try:
            names = tracked_files(self.project)
        except Exception as exc:  # a project git cannot list: say so, pick nothing
            self.app.call_from_thread(self._listed, [], str(exc) or "git could not list them")
            return
        self.app.call_from_thread(self._listed, names, "")

    def _listed(self, names: list[str], problem: str) -> None:
        self.names, self.loading = names, False
        if problem:
            self.query_one("#files-said", Static).update(problem)
            return
        self._show(self.query_one(Input).value)

    def _show(self, query: str) -> None:
        listed = self.query_one(OptionList)
        found = fuzzy_matches(query, self.names)
        listed.clear_options()
        listed.add_options([Option(name, id=name) for name in found])
        if found:
            listed.highlighted = 0
        said = f"{len(found)} of {len(self.names)} files" if self.names else "no files to pick"
        self.query_one("#files-said", Static).update(said)

    @on(Input.Changed)
    def _typed(self, event: Input.Changed) -> None:
        if not self.loading:
            self._show(event.value)

    @on(Input.Submitted)
    def _entered(self, event: Input.Submitted) -> None:
        listed = self.query_one(OptionList)
        if listed.highlighted is not None and listed.option_count:
            picked = listed.get_option_at_index(listed.highlighted).id
            self.dismiss(picked)

    @on(OptionList.OptionSelected)
    def _clicked(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_move(self, step: int) -> None:
        listed = self.query_one(OptionList)
        if not listed.option_count:
            return
        current = listed.highlighted if listed.highlighted is not None else -1
        listed.highlighted = max(0, min(listed.option_count - 1, current + step))

    def action_cancel(self) -> None:
        self.dismiss(None)
