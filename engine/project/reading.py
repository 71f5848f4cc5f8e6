"""Reading a project's files on the host for what the model is shown: only files of the tree.

A repository can commit a symlink (`notes.py -> /home/you/.ssh/id_rsa`) and the host follows
links, so every read of a project file whose text may reach a prompt goes through
`project_text`: a path that is absolute, climbs out with `..`, resolves (links followed)
outside the tree, or leads into git's own directory (`.git/config` may hold a remote's token)
is refused as an OSError, which callers already treat as an unreadable file; so is a file
over `MAX_SHOWN_BYTES`, never read into memory.
"""

from __future__ import annotations

from pathlib import Path

from engine.errors import FileTooLarge, OutsideProject

# No prompt shows more than a few dozen kilobytes of a file (engine/feedback/prompts.py
# excerpts the rest): a larger file is refused before it is read.
MAX_SHOWN_BYTES = 2 * 1024 * 1024


def inside(root: Path, path: str | Path) -> Path:
    """`root / path`, or OutsideProject when it leads outside `root` once links are followed,
    or into git's directory (by its name, or by a link that resolves there)."""
    relative = Path(path)
    if relative.is_absolute() or ".." in relative.parts:
        raise OutsideProject(f"{path} is not a path inside the project")
    if ".git" in relative.parts:
        raise OutsideProject(f"{path} is inside git's own directory, never shown to the model")
    target = root / relative
    top = root.resolve()
    resolved = target.resolve()
    if resolved != top and top not in resolved.parents:
        raise OutsideProject(f"{path} leads outside the project")
    if ".git" in resolved.relative_to(top).parts:
        raise OutsideProject(f"{path} leads into git's own directory, never shown to the model")
    return target


def shown_file(root: Path, path: str | Path) -> Path:
    """`root / path` when it is a regular file of the project a prompt may show; otherwise
    an OSError whose message says why in one line (outside, `.git`, missing, too large)."""
    target = inside(root, path)
    if not target.is_file():
        raise FileNotFoundError(f"{path} is not a file of the project")
    if target.stat().st_size > MAX_SHOWN_BYTES:
        raise FileTooLarge(
            f"{path} is over {MAX_SHOWN_BYTES // (1024 * 1024)} MiB: too large to show"
        )
    return target


def project_text(root: Path, path: str | Path) -> str:
    """The text of a project file, read only if a prompt may show it (`shown_file`)."""
    return shown_file(root, path).read_text(encoding="utf-8")
