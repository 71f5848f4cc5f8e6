"""The in-app editor over a proposal: one tab per file, holding the content the proposal
would leave. `ctrl+s` hands every file back (to be applied as the person's own edit),
`ctrl+f` shows the next file, `ctrl+o` opens the file in `$VISUAL`/`$EDITOR`, `escape` goes
back to the review unchanged (asking first when something was typed). Keys from `tui/keymap.py`.

An outside editor gets a copy in a private temp dir. A terminal editor takes over the
terminal (the app is suspended) and its result is read back when it exits; an editor that
runs beside the app (a GUI one, or no terminal to hand over) is watched with watchfiles, so
each save shows up in the tab at once."""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import watchfiles
from textual import work
from textual.app import ComposeResult, SuspendNotSupported, SystemCommand
from textual.binding import BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Footer, Static, TabbedContent, TabPane, TextArea

from tui.keymap import EDITOR, bindings_for
from tui.screens.confirm import ConfirmScreen

# TextArea's tree-sitter grammars (textual[syntax]), by file suffix.
LANGUAGES = {
    ".py": "python",
    ".pyi": "python",
    ".toml": "toml",
    ".json": "json",
    ".md": "markdown",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".sh": "bash",
    ".js": "javascript",
    ".html": "html",
    ".css": "css",
    ".rs": "rust",
    ".go": "go",
    ".java": "java",
    ".sql": "sql",
    ".xml": "xml",
}


@dataclass(frozen=True)
class EditorFile:
    path: str
    text: str


def outside_editor() -> list[str] | None:
    """The person's editor command, from $VISUAL or $EDITOR (None: neither is set)."""
    for name in ("VISUAL", "EDITOR"):
        value = os.environ.get(name, "").strip()
        if value:
            with contextlib.suppress(ValueError):
                return shlex.split(value)
    return None


class EditorScreen(ModalScreen[dict[str, str] | None]):
    """Dismissed with {path: new text}, or None when the person goes back."""

    # Priority: the code editor keeps tab for indenting and takes escape to move focus.
    BINDINGS: ClassVar[list[BindingType]] = [*bindings_for(EDITOR)]

    def __init__(self, files: list[EditorFile]) -> None:
        super().__init__()
        self.files = files
        self.scratch: Path | None = None  # the copies an outside editor works on

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="dialog") as dialog:
            dialog.border_title = "edit the proposal: ctrl+s applies it as your edit"
            if not self.files:
                yield Static("the proposal has no file you may edit", id="nothing")
            else:
                yield from self._tabs()
        yield Footer(compact=True)

    def _tabs(self) -> ComposeResult:
        with TabbedContent():
            for index, file in enumerate(self.files):
                with TabPane(file.path, id=f"file-{index}"):
                    language = LANGUAGES.get(Path(file.path).suffix)
                    yield TextArea.code_editor(
                        file.text,
                        language=language,
                        theme=self._highlighting(),
                        id=f"editor-{index}",
                    )

    def _highlighting(self) -> str:
        """TextArea's colour scheme for the app's theme (light or dark)."""
        return "vscode_dark" if self.app.current_theme.dark else "github_light"

    def on_mount(self) -> None:
        editors = self.query(TextArea)
        if editors:
            editors.first().focus()

    def on_unmount(self) -> None:
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)

    @property
    def current(self) -> int:
        tabs = self.query_one(TabbedContent)
        return int((tabs.active or "file-0").removeprefix("file-"))

    def palette_commands(self) -> Iterable[SystemCommand]:
        """Saving, the outside editor and leaving, in the command palette too."""
        yield SystemCommand(
            "Editor: use these files (ctrl+s)", "apply as your edit", self.action_save
        )
        yield SystemCommand(
            "Editor: open in $EDITOR (ctrl+o)",
            "edit this file in your own editor; each save shows up here",
            self.action_outside,
        )
        yield SystemCommand(
            "Editor: back to the review (esc)", "discard the edits", self.action_cancel
        )

    def action_next_file(self) -> None:
        if len(self.files) < 2:
            return
        index = (self.current + 1) % len(self.files)
        self.query_one(TabbedContent).active = f"file-{index}"
        self.query_one(f"#editor-{index}", TextArea).focus()

    def action_outside(self) -> None:
        """The current file in the person's own editor."""
        command = outside_editor()
        if command is None:
            self.notify("set $VISUAL or $EDITOR to edit in your own editor", severity="warning")
            return
        if not self.files:
            return
        index = self.current
        copy = self._copy(index)
        try:
            with self.app.suspend():
                subprocess.run([*command, str(copy)], check=False)
        except SuspendNotSupported:  # no terminal to hand over: it runs beside the app
            self._beside([*command, str(copy)])
            return
        except OSError as exc:
            self.notify(f"could not start {command[0]}: {exc}", severity="error")
            return
        self._pick_up(copy)

    def _copy(self, index: int) -> Path:
        if self.scratch is None:
            self.scratch = Path(tempfile.mkdtemp(prefix="fixloop-edit-"))
            self._watch()
        copy = self.scratch / self.files[index].path
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_text(self.query_one(f"#editor-{index}", TextArea).text, encoding="utf-8")
        return copy

    def _beside(self, argv: list[str]) -> None:
        try:
            subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError as exc:
            self.notify(f"could not start {argv[0]}: {exc}", severity="error")
            return
        self.notify(f"editing in {Path(argv[0]).name}: each save shows up here", title="editor")

    @work(exclusive=True, group="outside-editor", exit_on_error=False)
    async def _watch(self) -> None:
        scratch = self.scratch
        if scratch is None:
            return
        async for changes in watchfiles.awatch(scratch, debounce=150):
            for _, path in changes:
                self._pick_up(Path(path))

    def _pick_up(self, copy: Path) -> None:
        """A copy's saved text into its tab (nothing if it is gone or not one of ours)."""
        if self.scratch is None:
            return
        try:
            relative = str(copy.relative_to(self.scratch))
            text = copy.read_text(encoding="utf-8")
        except (ValueError, OSError, UnicodeDecodeError):
            return
        for index, file in enumerate(self.files):
            if file.path == relative:
                editor = self.query_one(f"#editor-{index}", TextArea)
                if editor.text != text:
                    editor.load_text(text)

    def action_save(self) -> None:
        texts = {
            file.path: self.query_one(f"#editor-{index}", TextArea).text
            for index, file in enumerate(self.files)
        }
        self.dismiss(texts or None)

    def action_cancel(self) -> None:
        """Back to the review; edits are not dropped without asking (the default keeps them)."""
        changed = any(
            self.query_one(f"#editor-{index}", TextArea).text != file.text
            for index, file in enumerate(self.files)
        )
        if not changed:
            self.dismiss(None)
            return
        question = "go back to the review without your edits? they are not kept anywhere."
        confirm = ConfirmScreen("drop your edits?", question, yes="drop them", no="keep editing")
        self.app.push_screen(confirm, self._drop_confirmed)

    def _drop_confirmed(self, yes: bool | None) -> None:
        if yes:
            self.dismiss(None)
