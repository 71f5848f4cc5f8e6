"""What counts as no change (ARCHITECTURE.md, "Candidates" and the no-op retry): an answer
whose edits would leave every file's code as it is, by the iteration's `Noop` rule, and why;
two answers that make the same edits. Read by the single answer's path and the candidates'.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from engine.edits.apply import planned_texts
from engine.edits.proposal import Proposal
from engine.errors import EditFormatError
from engine.feedback.tree import Verification
from engine.project.docstrings import code_shape
from engine.project.pins import is_test_file

NO_FILE = "the answer changed no file"
NO_CODE = "the answer changed only comments, layout or strings that do nothing"  # `code_noop`
ONLY_DOCS = "the answer changed only docstrings, comments or layout"  # `docs_noop`
# Every edit was to a pinned test file or test infrastructure: all held back, nothing written.
ONLY_HELD_BACK = "the answer changed only test files, which are held back"

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


@dataclass(frozen=True)
class Wording:
    """How one of `unchanged_because`'s reasons is said, in one place for every reader."""

    dropped: str  # of a candidate dropped for it, in its trail and the progress lines
    reasked: str  # to the model asked once more in the iteration, after "Your last answer"
    next_note: str  # the next iteration's prompt: nothing was applied, what the answer did


_AS_BEFORE = ", so nothing was applied and the code and its failure are as before."
_CHANGE_CODE = " Change the code under test."
WORDING = {
    NO_FILE: Wording(
        dropped="changes no file",
        reasked="changed nothing",
        next_note="Your last answer changed no file (its edits were held back or repeated "
        "the current content)." + _CHANGE_CODE,
    ),
    # Of an answer that did change a file, "changed no file" would be false.
    NO_CODE: Wording(
        dropped="changes only comments, layout or strings that do nothing",
        reasked="changed only comments or strings that do nothing",
        next_note="Your last answer changed only comments or strings that do nothing"
        + _AS_BEFORE
        + _CHANGE_CODE,
    ),
    ONLY_DOCS: Wording(
        dropped="changes only docstrings, comments or layout",
        reasked="changed only docstrings or comments",
        next_note="Your last answer changed only docstrings or comments"
        + _AS_BEFORE
        + _CHANGE_CODE,
    ),
    # The held-back note before it names the files and why they are pinned.
    ONLY_HELD_BACK: Wording(
        dropped="changes only test files, which are held back",
        reasked="changed only test files, which are held back",
        next_note="It changed nothing else" + _AS_BEFORE,
    ),
}


def wording(because: str) -> Wording:
    """How `because` is said; an answer that made no commit for no other reason changed no
    file."""
    return WORDING.get(because, WORDING[NO_FILE])


def held_back_summary(files: Sequence[str]) -> str:
    """An iteration whose test edits were held back, where the person reads it (the
    iteration's record, report.md, the app's history, the progress lines)."""
    return f"test edits held back: {', '.join(files)}"


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
