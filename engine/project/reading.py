"""Reading a project's files on the host for what the model is shown: only files of the tree.

A repository can commit a symlink (`notes.py -> /home/you/.ssh/id_rsa`) and the host follows
links, so every read of a project file whose text may reach a prompt goes through
`project_text`: a path that is absolute, climbs out with `..`, or resolves (links followed)
outside the tree is refused as an OSError, which callers already treat as an unreadable file.
"""

from __future__ import annotations

from pathlib import Path


class OutsideProject(PermissionError):
    """The path leads outside the project's tree."""


def inside(root: Path, path: str | Path) -> Path:
    """`root / path`, or OutsideProject when it leads outside `root` once links are followed."""
    relative = Path(path)
    if relative.is_absolute() or ".." in relative.parts:
        raise OutsideProject(f"{path} is not a path inside the project")
    target = root / relative
    top = root.resolve()
    resolved = target.resolve()
    if resolved != top and top not in resolved.parents:
        raise OutsideProject(f"{path} leads outside the project")
    return target


def project_text(root: Path, path: str | Path) -> str:
    """The text of a project file, read only if it stays inside the project."""
    return inside(root, path).read_text(encoding="utf-8")
