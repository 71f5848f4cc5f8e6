"""Keeping some hunks of a proposal (`git add -p`'s way): previews of real proposals on real
files, the kept hunks applied to the files as they were and written by `apply`."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.edits.apply import apply
from engine.edits.hunks import PartialEdit, hunk_count, keep_hunks
from engine.edits.proposal import Edit, Proposal
from engine.errors import EditFormatError
from engine.run.preview import ProposalPreview, preview_proposal

# Three functions far enough apart that a change to each is a hunk of its own.
MODULE = "".join(
    f"def f{i}(x):\n    '''f{i}'''\n    a = x\n    b = a\n    c = b\n    d = c\n"
    f"    return x + {i}\n\n\n"
    for i in range(1, 4)
)
OTHER = "A = 1\nB = 2\n"


def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "mod.py").write_text(MODULE)
    (root / "pkg" / "other.py").write_text(OTHER)
    return root


def fix(i: int) -> Edit:
    return Edit(path="pkg/mod.py", search=f"return x + {i}", replace=f"return x * {i}")


def grow(i: int) -> Edit:
    """A change that adds two lines, shifting every later line of the file."""
    return Edit(
        path="pkg/mod.py",
        search=f"    '''f{i}'''\n",
        replace=f"    '''f{i}'''\n    # one\n    # two\n",
    )


def preview(root: Path, *edits: Edit) -> ProposalPreview:
    shown = preview_proposal(Proposal(explanation="", edits=list(edits), format="json"), root)
    assert shown.error is None
    return shown


def partial(shown: ProposalPreview, dropped: set[int]) -> PartialEdit:
    before = {f.path: f.before for f in shown.files}
    after = {f.path: f.after for f in shown.files}
    return keep_hunks(shown.diff, before, after, dropped)


def written(root: Path, kept: PartialEdit) -> None:
    edits = [Edit(path=path, content=text) for path, text in kept.texts.items()]
    apply(Proposal(explanation="edited by you", edits=edits, format="json"), root)


def test_three_hunks_of_one_file_are_counted_in_order(tmp_path: Path) -> None:
    shown = preview(project(tmp_path), fix(1), fix(2), fix(3))
    assert hunk_count(shown.diff) == 3


def test_a_dropped_hunk_of_one_file_leaves_its_lines_as_they_were(tmp_path: Path) -> None:
    root = project(tmp_path)
    written(root, partial(preview(root, fix(1), fix(2), fix(3)), {1}))
    text = (root / "pkg" / "mod.py").read_text()
    assert "return x + 2" in text
    assert text == MODULE.replace("x + 1", "x * 1").replace("x + 3", "x * 3")


def test_hunks_in_two_files_are_kept_or_dropped_file_by_file(tmp_path: Path) -> None:
    root = project(tmp_path)
    other = Edit(path="pkg/other.py", search="B = 2", replace="B = 3")
    shown = preview(root, fix(1), other)
    assert hunk_count(shown.diff) == 2
    kept = partial(shown, {0})
    written(root, kept)
    assert set(kept.texts) == {"pkg/other.py"}
    assert (root / "pkg" / "mod.py").read_text() == MODULE
    assert (root / "pkg" / "other.py").read_text() == "A = 1\nB = 3\n"
    assert kept.dropped == ["pkg/mod.py lines 4-10"]


def test_a_hunk_after_a_dropped_one_that_moved_lines_lands_where_it_belongs(
    tmp_path: Path,
) -> None:
    root = project(tmp_path)
    shown = preview(root, grow(1), fix(2), grow(3))
    kept = partial(shown, {0})
    written(root, kept)
    expected = MODULE.replace("x + 2", "x * 2").replace(
        "    '''f3'''\n", "    '''f3'''\n    # one\n    # two\n"
    )
    assert (root / "pkg" / "mod.py").read_text() == expected


def test_a_dropped_hunk_is_named_by_the_lines_it_spans_in_the_new_text(tmp_path: Path) -> None:
    root = project(tmp_path)
    shown = preview(root, grow(1), fix(2), fix(3))
    kept = partial(shown, {2})
    # f1 grew by two lines, so f3's unchanged lines sit two lines lower than in the old file.
    text = kept.texts["pkg/mod.py"].splitlines()
    assert kept.dropped == ["pkg/mod.py lines 24-29"]
    assert text[26] == "    return x + 3"


def test_a_dropped_hunk_that_adds_a_new_file_creates_nothing(tmp_path: Path) -> None:
    root = project(tmp_path)
    new = Edit(path="pkg/extra.py", content="def extra():\n    return 1\n")
    kept = partial(preview(root, fix(1), new), {1})
    written(root, kept)
    assert not (root / "pkg" / "extra.py").exists()
    assert "return x * 1" in (root / "pkg" / "mod.py").read_text()
    assert kept.dropped == ["pkg/extra.py (a new file: not created)"]


def test_a_kept_last_line_without_a_newline_stays_without_one(tmp_path: Path) -> None:
    root = project(tmp_path)
    (root / "pkg" / "other.py").write_text("A = 1\nB = 2")
    last = Edit(path="pkg/other.py", search="B = 2", replace="B = 3")
    kept = partial(preview(root, fix(1), last), {0})
    assert kept.texts == {"pkg/other.py": "A = 1\nB = 3"}


def test_a_diff_naming_a_path_outside_the_project_is_refused(tmp_path: Path) -> None:
    diff = "--- a/../outside.py\n+++ b/../outside.py\n@@ -1 +1 @@\n-a\n+b\n"
    with pytest.raises(EditFormatError, match=r"contains '\.\.'"):
        keep_hunks(diff, {"../outside.py": "a\n"}, {"../outside.py": "b\n"}, set())


def test_a_hunk_whose_old_lines_are_not_in_the_file_is_refused(tmp_path: Path) -> None:
    diff = "--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-a\n+b\n"
    with pytest.raises(EditFormatError, match="does not match the file"):
        keep_hunks(diff, {"m.py": "something else\n"}, {"m.py": "b\n"}, set())


def test_kept_hunks_of_a_file_linked_outside_the_project_are_refused_when_written(
    tmp_path: Path,
) -> None:
    root = project(tmp_path)
    outside = tmp_path / "outside.py"
    outside.write_text("SECRET = 1\n")
    (root / "pkg" / "linked.py").symlink_to(outside)
    diff = "--- a/pkg/linked.py\n+++ b/pkg/linked.py\n@@ -1 +1 @@\n-SECRET = 1\n+SECRET = 2\n"
    kept = keep_hunks(
        diff, {"pkg/linked.py": "SECRET = 1\n"}, {"pkg/linked.py": "SECRET = 2\n"}, set()
    )
    with pytest.raises(EditFormatError, match="through a symlink to outside the project"):
        written(root, kept)
    assert outside.read_text() == "SECRET = 1\n"
