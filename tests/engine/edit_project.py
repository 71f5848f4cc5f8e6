"""A small project for the edit tests: its files, writing them, and proposals that edit them."""

from __future__ import annotations

from pathlib import Path

from engine.edits.proposal import Edit, Proposal

STATS = """\
def mean(xs):
    return sum(xs) // len(xs)


def median(xs):
    ordered = sorted(xs)
    middle = len(ordered) // 2
    return ordered[middle]
"""

SERVICE = """\
class Service:
    def run(self):
        if self.ready:
            self.start()
        return self.status
"""


def write(root: Path, files: dict[str, str]) -> None:
    for path, content in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)


def proposal(*edits: Edit) -> Proposal:
    return Proposal(explanation="test", edits=list(edits), format="json")


def replace(path: str, search: str, new: str) -> Edit:
    return Edit(path=path, search=search, replace=new)


def project_files(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }
