"""Which top-level modules the project itself provides: read from its tree (the root and src/),
or from the paths of files an edit changed. Classification tells the project's from the rest.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path, PurePosixPath

_NOT_MODULES = frozenset({"tests", "test", "__pycache__", "node_modules", "site-packages"})
_EXTENSIONS = (".so", ".pyd")


def project_modules(root: Path) -> frozenset[str]:
    """Top-level importable names the project itself provides, at its root and under src/."""
    names: set[str] = set()
    for base in (root, root / "src"):
        if not base.is_dir():
            continue
        try:
            entries = list(base.iterdir())
        except OSError:
            continue
        for entry in entries:
            name = entry.name
            if name.startswith(".") or name in _NOT_MODULES:
                continue
            if entry.is_file():
                stem = name.split(".")[0]
                if (name.endswith((".py", ".pyi")) or name.endswith(_EXTENSIONS)) and (
                    stem.isidentifier()
                ):
                    names.add(stem)
            elif entry.is_dir() and name.isidentifier() and _is_package_dir(entry):
                if entry == root / "src" and not (entry / "__init__.py").exists():
                    continue  # the src layout's container, not a namespace package
                names.add(name)
    return frozenset(names)


def _is_package_dir(path: Path) -> bool:
    """A directory of Python files that is not a venv; one this user cannot read is not the
    project's (a shared directory such as /tmp holds other users' private ones)."""
    try:
        if (path / "pyvenv.cfg").exists():
            return False
        return (path / "__init__.py").exists() or any(path.glob("*.py"))
    except OSError:
        return False


def modules_of(paths: Iterable[str]) -> frozenset[str]:
    """Top-level module names of edited files: `src/pkg/a.py` and `pkg/a.py` are `pkg`."""
    names: set[str] = set()
    for path in paths:
        parts = [p for p in PurePosixPath(path.replace("\\", "/")).parts if p not in {".", "/"}]
        if len(parts) > 1 and parts[0] == "src":
            parts = parts[1:]
        if not parts:
            continue
        if len(parts) == 1:
            name = parts[0]
            is_module = name.endswith((".py", ".pyi")) or name.endswith(_EXTENSIONS)
            top = name.split(".")[0] if is_module else ""
        else:
            top = parts[0]
        if top.isidentifier():
            names.add(top)
    return frozenset(names)
