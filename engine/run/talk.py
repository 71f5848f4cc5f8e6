"""The person talking to a running loop: notes typed while the model answers or the sandbox
runs, for the next prompt, and project files added to (or dropped from) what every later
prompt shows. The app's thread says; the engine's thread takes once per iteration, before
that iteration's prompt is built, so a note never races the prompt under way.

A note is the person's, not hostile, yet it stays data: it is appended to the prompt's text
as it was typed, never formatted into a template or a command. A file is named by the person
(the app's picker lists `git ls-files`, names only; `--file`), and read only through
`engine/project/reading.py` (`shown_file`): never a link out of the project, nothing under
`.git`, no file too large. A repository's config cannot add a file this way: only the
person's flag and the app do; its own `files` setting is held to the project's files too.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from engine.errors import FileRefused
from engine.project.reading import shown_file

NAME_ONE = "the model is shown only files of the project (name one by its path in it)"


def checked_file(project: Path, path: str) -> str:
    """`path` as a project-relative posix name, once `shown_file` allows it; FileRefused (one
    line: which file and why) otherwise. Nothing is read here but the file's metadata."""
    name = Path(path)
    if name.is_absolute():
        try:
            name = name.relative_to(project.resolve())
        except ValueError:
            raise FileRefused(f"{path} is not a file inside {project}: {NAME_ONE}") from None
    try:
        shown_file(project, name)
    except OSError as exc:
        raise FileRefused(f"{exc}: {NAME_ONE}") from None
    return name.as_posix()


def checked_files(project: Path, paths: Sequence[str]) -> list[str]:
    """Every named file checked (`checked_file`), each once, in order."""
    return list(dict.fromkeys(checked_file(project, path) for path in paths))


def tracked_files(project: Path) -> list[str]:
    """The project's tracked files (`git ls-files`), names only: what the app's picker offers.
    Git is imported here: the app imports this module on its first frame's path."""
    from engine.project.git_plumbing import git_bytes, nul_paths

    return sorted(nul_paths(git_bytes(project, "ls-files", "-z")))


@dataclass(frozen=True)
class Said:
    """What the person said since the last prompt: notes in the order typed, and the files
    added and dropped (`shown`: every file the person added that later prompts show)."""

    notes: tuple[str, ...] = ()
    added: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()
    shown: tuple[str, ...] = ()

    @property
    def files_changed(self) -> bool:
        return bool(self.added or self.dropped)


class Talk:
    """Thread-safe: `note`, `add` and `drop` from any thread, `take` from the engine's."""

    def __init__(self, project: Path | None = None) -> None:
        self.project = project  # where `add` checks a file; None: the caller checked it
        self._lock = threading.Lock()
        self._notes: list[str] = []
        self._shown: list[str] = []
        self._added: list[str] = []
        self._dropped: list[str] = []

    def note(self, text: str) -> bool:
        """Keep a note for the next prompt; an empty one is not kept (False)."""
        if not text.strip():
            return False
        with self._lock:
            self._notes.append(text.strip())
        return True

    def add(self, path: str) -> str:
        """Show `path` in every later prompt; returns its name in the project. FileRefused
        when it cannot be shown (`checked_file`)."""
        name = checked_file(self.project, path) if self.project is not None else path
        with self._lock:
            if name not in self._shown:
                self._shown.append(name)
                self._added.append(name)
            if name in self._dropped:
                self._dropped.remove(name)
        return name

    def drop(self, path: str) -> bool:
        """Stop showing a file the person added; False when it was not one of them."""
        with self._lock:
            if path not in self._shown:
                return False
            self._shown.remove(path)
            if path in self._added:
                self._added.remove(path)
            else:
                self._dropped.append(path)
        return True

    def shown(self) -> list[str]:
        """The files the person added, in the order added."""
        with self._lock:
            return list(self._shown)

    def pending(self) -> list[str]:
        """The notes not yet taken into a prompt."""
        with self._lock:
            return list(self._notes)

    def restore(self, shown: Sequence[str]) -> None:
        """A resumed run's added files, as its trail left them (already taken)."""
        with self._lock:
            self._shown = list(dict.fromkeys(shown))

    def take(self) -> Said:
        """Everything said since the last take, for the prompt about to be built."""
        with self._lock:
            said = Said(
                tuple(self._notes), tuple(self._added), tuple(self._dropped), tuple(self._shown)
            )
            self._notes, self._added, self._dropped = [], [], []
        return said
