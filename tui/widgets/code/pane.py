"""The code pane: the file(s) under repair as the selected iteration left them, syntax
highlighted with the theme's colours, the lines the iteration added marked in the gutter.
`f` shows the next file."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from pygments.lexers import find_lexer_class_for_filename  # type: ignore[import-untyped]
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.content import Content
from textual.highlight import highlight
from textual.widgets import Static

from engine.text.untrusted import visible_controls

if TYPE_CHECKING:  # types only: the pane is composed before the first frame
    from engine.run.artifacts import CodeFile

GUTTER_MARK = "▌"
CONTEXT_LINES = 3


@functools.lru_cache(maxsize=64)
def language_of(path: str) -> str:
    """Pygments' name for the file's language, from its name alone: guessing from the content
    (as `highlight(path=...)` does) loads every lexer there is, which takes seconds."""
    lexer = find_lexer_class_for_filename(path)
    return lexer.aliases[0] if lexer is not None and lexer.aliases else "text"


def warm_up() -> None:
    """Load the Python lexer and the highlighter (call it off the UI thread, at start)."""
    highlight("import re\n", language=language_of("warm_up.py"))


def code_content(file: CodeFile, changed: set[int]) -> Content:
    """The file with line numbers, highlighted; `changed` line numbers get a gutter mark."""
    if file.text is None:
        return Content.styled(f"{file.path} does not exist at this point of the run", "$text-muted")
    text = visible_controls(file.text.rstrip("\n"))  # the model's code: no escape acts
    language = language_of(file.path)
    lines = highlight(text, language=language).split("\n") if text else [Content("")]
    width = len(str(len(lines)))
    numbered = []
    for number, line in enumerate(lines, start=1):
        mark = (GUTTER_MARK, "$changed-line") if number in changed else (" ", "")
        gutter = (f"{number:>{width}} ", "$text-muted")
        numbered.append(Content.assemble(mark, gutter, line))
    return Content("\n").join(numbered)


class CodePane(VerticalScroll):
    """One file at a time; the border title names it and how many there are."""

    DEFAULT_CSS = """
    CodePane > Static { width: auto; min-width: 100%; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.border_title = "code"
        self.files: list[CodeFile] = []
        self.changed: dict[str, set[int]] = {}
        self.index = 0

    def compose(self) -> ComposeResult:
        yield Static(Content.styled("no file yet", "$text-muted"), id="code-text")

    @property
    def current(self) -> CodeFile | None:
        return self.files[self.index] if self.files else None

    def show(self, files: list[CodeFile], changed: dict[str, set[int]]) -> None:
        if files == self.files and changed == self.changed:
            return  # keep the scroll position while the same code stays selected
        keep = self.current.path if self.current else None
        self.files, self.changed = list(files), dict(changed)
        paths = [f.path for f in self.files]
        self.index = paths.index(keep) if keep in paths else 0
        self._render_file()

    def next_file(self) -> None:
        if len(self.files) > 1:
            self.index = (self.index + 1) % len(self.files)
            self._render_file()

    def _render_file(self) -> None:
        text = self.query_one("#code-text", Static)
        file = self.current
        if file is None:
            self.border_title = "code"
            self.border_subtitle = ""
            text.update(Content.styled("no file under repair yet", "$text-muted"))
            return
        self.border_title = f"code · {file.path}"
        count = len(self.files)
        self.border_subtitle = f"{self.index + 1}/{count} · f: next file" if count > 1 else ""
        changed = self.changed.get(file.path, set())
        text.update(code_content(file, changed))
        # Open where the iteration changed the file, with a little context above.
        top = max(min(changed) - CONTEXT_LINES, 0) if changed else 0
        self.call_after_refresh(self.scroll_to, 0, top, animate=False)
