"""Fixture projects as a user would have them: a git repository with one commit,
readable by the sandbox's unprivileged user."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import git

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
PROJECTS = REPO / "tests" / "fixtures" / "projects"


def committed_copy(source: Path, into: Path, message: str = "baseline") -> Path:
    """`source` copied to `into/<name>`, committed, and readable by uid 65534."""
    root = into / source.name
    shutil.copytree(source, root)
    repo = git.Repo.init(root)
    repo.git.add("-A")
    repo.index.commit(message)
    readable(into)
    return root


def readable(top: Path) -> None:
    """The sandbox runs as nobody: every directory on the way must be searchable."""
    for path in [top, *top.rglob("*")]:
        if ".git" not in path.parts:
            path.chmod(0o755 if path.is_dir() else 0o644)


# What a model might answer about examples/textstats, as JSON search/replace edits.
MEAN_FIX = {
    "path": "textstats/core.py",
    "search": "return sum(len(w) for w in found) // len(found)",
    "replace": "return sum(len(w) for w in found) / len(found)",
}
TOP_FIX = {
    "path": "textstats/core.py",
    "search": "return counts.most_common(n - 1)",
    "replace": "return counts.most_common(n)",
}
# The cheat the pinned-tests guard exists for: a skip, without a reason, on a failing test.
SKIP_TOP = {
    "path": "tests/test_core.py",
    "search": "def test_top_words_returns_n():",
    "replace": "import pytest\n\n\n@pytest.mark.skip\ndef test_top_words_returns_n():",
}


def answer(explanation: str, *edits: dict[str, str]) -> str:
    """A model's answer in the json edit format, fenced as models tend to send it."""
    return "```json\n" + json.dumps({"explanation": explanation, "edits": list(edits)}) + "\n```"
