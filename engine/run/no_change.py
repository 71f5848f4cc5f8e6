"""What counts as no change (ARCHITECTURE.md, "Candidates" and the no-op retry): an answer
whose edits would leave every file's code as it is, by the iteration's `Noop` rule, and why;
two answers that make the same edits. Read by the single answer's path and the candidates'.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from engine.edits.apply import planned_texts
from engine.edits.proposal import EditFormatError, Proposal
from engine.project.docstrings import code_shape
from engine.verify.pins import is_test_file
from engine.verify.tree import Verification

NO_FILE = "the answer changed no file"
NO_CODE = "the answer changed only comments, layout or strings that do nothing"  # `code_noop`
ONLY_DOCS = "the answer changed only docstrings, comments or layout"  # `docs_noop`

Noop = Literal["lines", "code", "docs"]
"""What an answer may change and still change nothing: blank lines and trailing spaces
(`lines`); in Python files also comments and the string statements that are no docstring,
which run as nothing (`code`: `code_noop`); and docstrings too (`docs`: `docs_noop`, where
no doctests run)."""


def unchanged_because(proposal: Proposal, root: Path, *, noop: Noop = "lines") -> str:
    """Why applying the proposal would leave every file's code as it is, or "" when it would
    change code. `NO_FILE`: no edits, whole files sent back as they are or with only blank
    lines and trailing spaces changed (the embedded model's commonest "fix"), or a search
    equal to its replacement. By the `noop` rule, `NO_CODE` or `ONLY_DOCS`: Python files
    changed in nothing that runs, or in nothing but docstrings too."""
    if _same_lines(proposal, root):
        return NO_FILE
    if noop == "lines" or not _same_python_code(proposal, root, docstrings=noop == "code"):
        return ""
    return NO_CODE if noop == "code" else ONLY_DOCS


# A candidate dropped as changing no code, as its trail and the progress lines say it.
DROPPED = {
    NO_FILE: "changes no file",
    NO_CODE: "changes only comments, layout or strings that do nothing",
    ONLY_DOCS: "changes only docstrings, comments or layout",
}
# What the model is told an answer that changed some file but no code did, after "Your last
# answer": the re-ask's note and the next iteration's say the same.
CHANGED_ONLY = {
    NO_CODE: "changed only comments or strings that do nothing",
    ONLY_DOCS: "changed only docstrings or comments",
}


def _same_lines(proposal: Proposal, root: Path) -> bool:
    for edit in proposal.edits:
        if edit.content is not None:
            if not same_code(root / edit.path, edit.content):
                return False
        elif _code_lines(edit.search) != _code_lines(edit.replace):
            return False
    return True


def _same_python_code(proposal: Proposal, root: Path, *, docstrings: bool) -> bool:
    """Every file the proposal changes is Python whose syntax tree stays the same, its string
    statements that are no docstring left out (QuixBugs' trailing ones, dropped by the
    embedded model's first answer in 19 of the 26 programs it did not fix), and with
    `docstrings` False its docstrings too (a typo fixed in a docstring: 17% of the embedded
    model's committed answers on the bench)."""
    try:
        planned = planned_texts(proposal, root)
    except EditFormatError:
        return False
    for path, before, after in planned:
        if before == after:
            continue
        if before is None or after is None or not path.endswith(".py"):
            return False
        shape = code_shape(before, docstrings=docstrings)
        if shape is None or shape != code_shape(after, docstrings=docstrings):
            return False
    return True


def runs_doctests(verification: Verification | None) -> bool:
    """Whether the project's tests include doctests (a collected test in a Python module
    that is not a test file): there a docstring is code."""
    if verification is None:
        return False
    for stage in verification.stages:
        for nodeid in stage.report.nodeids if stage.report else []:
            path = nodeid.split("::")[0]
            if path.endswith(".py") and not is_test_file(path):
                return True
    return False


def same_code(path: Path, content: str) -> bool:
    """The file's lines and `content`'s are the same once blank lines and trailing spaces
    are left out (a missing file is never the same)."""
    try:
        current = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    return _code_lines(current) == _code_lines(content)


def _code_lines(text: str | None) -> list[str]:
    return [line.rstrip() for line in (text or "").splitlines() if line.strip()]


def edits_key(proposal: Proposal) -> tuple[object, ...]:
    """Two answers that make the same edits, blank lines and trailing spaces aside, are one
    candidate."""
    return tuple(
        sorted(
            (e.path, _code_text(e.content), _code_text(e.search), _code_text(e.replace))
            for e in proposal.edits
        )
    )


def _code_text(text: str | None) -> str | None:
    return None if text is None else "\n".join(_code_lines(text))
