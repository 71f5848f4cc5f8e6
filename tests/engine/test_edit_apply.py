"""Applying edits to real files, all or nothing; path safety; whole files that drop definitions."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import pytest

from engine.edits.apply import apply, dropped_definitions
from engine.edits.parse import parse
from engine.edits.proposal import AppliedEdits, Edit
from engine.edits.safe_paths import safe_path
from engine.errors import EditFormatError
from tests.engine.edit_project import STATS, project_files, proposal, replace, write

# --- applying whole files --------------------------------------------------------------------


def test_content_creates_a_new_file_with_its_parent_directories(tmp_path: Path) -> None:
    result = apply(proposal(Edit(path="pkg/sub/deep/new.py", content="VALUE = 1\n")), tmp_path)

    assert result.files == ["pkg/sub/deep/new.py"]
    assert (tmp_path / "pkg/sub/deep/new.py").read_text() == "VALUE = 1\n"


def test_search_on_a_file_created_earlier_in_the_same_proposal(tmp_path: Path) -> None:
    apply(
        proposal(
            Edit(path="pkg/new.py", content="VALUE = 1\n"),
            replace("pkg/new.py", "VALUE = 1", "VALUE = 2"),
        ),
        tmp_path,
    )

    assert (tmp_path / "pkg/new.py").read_text() == "VALUE = 2\n"


def test_whole_file_identical_to_the_current_one_is_unchanged_and_not_written(
    tmp_path: Path,
) -> None:
    write(tmp_path, {"tests/test_core.py": "def test_x():\n    assert True\n"})
    target = tmp_path / "tests/test_core.py"
    os.utime(target, ns=(1_000_000_000, 1_000_000_000))

    result = apply(
        proposal(Edit(path="tests/test_core.py", content="def test_x():\n    assert True\n")),
        tmp_path,
    )

    assert result == AppliedEdits(files=[], unchanged=["tests/test_core.py"])
    assert target.stat().st_mtime_ns == 1_000_000_000


def test_content_replaces_an_existing_file(tmp_path: Path) -> None:
    write(tmp_path, {"stats/core.py": STATS})

    result = apply(proposal(Edit(path="stats/core.py", content="X = 1\n")), tmp_path)

    assert result.files == ["stats/core.py"]
    assert (tmp_path / "stats/core.py").read_text() == "X = 1\n"


def test_file_mode_is_kept(tmp_path: Path) -> None:
    write(tmp_path, {"run.py": "#!/usr/bin/env python\nprint(1)\n"})
    (tmp_path / "run.py").chmod(0o755)

    apply(proposal(replace("run.py", "print(1)", "print(2)")), tmp_path)

    assert stat.S_IMODE((tmp_path / "run.py").stat().st_mode) == 0o755
    assert (tmp_path / "run.py").read_text().endswith("print(2)\n")


def test_no_temporary_files_are_left_behind(tmp_path: Path) -> None:
    write(tmp_path, {"stats/core.py": STATS})

    apply(
        proposal(
            replace("stats/core.py", "// len", "/ len"), Edit(path="stats/new.py", content="")
        ),
        tmp_path,
    )

    assert sorted(p.name for p in (tmp_path / "stats").iterdir()) == ["core.py", "new.py"]


def test_crlf_file_keeps_crlf(tmp_path: Path) -> None:
    (tmp_path / "win.py").write_bytes(b"def f():\r\n    return 1 // 2\r\n\r\nX = 3\r\n")

    apply(
        proposal(replace("win.py", "def f():\n    return 1 // 2\n", "def f():\n    return 0.5\n")),
        tmp_path,
    )

    assert (tmp_path / "win.py").read_bytes() == b"def f():\r\n    return 0.5\r\n\r\nX = 3\r\n"


def test_crlf_file_keeps_crlf_with_a_whitespace_tolerant_match(tmp_path: Path) -> None:
    (tmp_path / "win.py").write_bytes(b"class C:\r\n    def f(self):\r\n        return 1\r\n")

    apply(
        proposal(replace("win.py", "def f(self):\n    return 1\n", "def f(self):\n    return 2\n")),
        tmp_path,
    )

    assert (tmp_path / "win.py").read_bytes() == (
        b"class C:\r\n    def f(self):\r\n        return 2\r\n"
    )


def test_crlf_file_keeps_crlf_when_search_ends_mid_line(tmp_path: Path) -> None:
    (tmp_path / "win.py").write_bytes(b"def f():\r\n    return 1 // 2\r\n\r\nX = 3\r\n")

    apply(proposal(replace("win.py", "1 // 2\n\nX = 3", "0.5\n\nX = 4\nY = 5")), tmp_path)

    assert (tmp_path / "win.py").read_bytes() == (
        b"def f():\r\n    return 0.5\r\n\r\nX = 4\r\nY = 5\r\n"
    )


def test_whole_content_on_a_crlf_file_is_written_with_crlf(tmp_path: Path) -> None:
    (tmp_path / "win.py").write_bytes(b"X = 1\r\n")

    apply(proposal(Edit(path="win.py", content="X = 2\nY = 3\n")), tmp_path)

    assert (tmp_path / "win.py").read_bytes() == b"X = 2\r\nY = 3\r\n"


def test_non_utf8_file_is_left_byte_identical_and_the_edit_is_an_error(tmp_path: Path) -> None:
    latin1 = "# café\nX = 1\n".encode("latin-1")
    (tmp_path / "legacy.py").write_bytes(latin1)

    with pytest.raises(
        EditFormatError, match=re.escape("legacy.py is not UTF-8 text; fixloop does not edit it")
    ):
        apply(proposal(Edit(path="legacy.py", content="X = 2\n")), tmp_path)

    assert (tmp_path / "legacy.py").read_bytes() == latin1


def test_one_bad_edit_means_nothing_is_written(tmp_path: Path) -> None:
    write(tmp_path, {"stats/core.py": STATS})
    before = project_files(tmp_path)

    with pytest.raises(EditFormatError) as caught:
        apply(
            proposal(
                replace("stats/core.py", "// len(xs)", "/ len(xs)"),
                Edit(path="stats/extra.py", content="Y = 1\n"),
                replace("stats/core.py", "def mode(xs):", "def mode(values):"),
            ),
            tmp_path,
        )

    assert project_files(tmp_path) == before
    assert "edit 3: stats/core.py" in str(caught.value)
    assert "None of your edits were applied" in str(caught.value)


def test_every_failing_edit_is_listed(tmp_path: Path) -> None:
    write(tmp_path, {"stats/core.py": STATS})

    with pytest.raises(EditFormatError) as caught:
        apply(
            proposal(
                replace("stats/core.py", "def mode(xs):", "x"),
                Edit(path="../outside.py", content="x\n"),
                replace("stats/missing.py", "a", "b"),
            ),
            tmp_path,
        )

    assert [p.split(":")[0] for p in caught.value.problems] == ["edit 1", "edit 2", "edit 3"]


def test_edit_through_a_symlink_inside_the_project_keeps_the_link(tmp_path: Path) -> None:
    write(tmp_path, {"stats/core.py": STATS})
    (tmp_path / "core_link.py").symlink_to("stats/core.py")

    result = apply(proposal(replace("core_link.py", "// len", "/ len")), tmp_path)

    assert result.files == ["core_link.py"]
    assert (tmp_path / "core_link.py").is_symlink()
    assert "sum(xs) / len(xs)" in (tmp_path / "stats/core.py").read_text()


# --- path safety -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("/etc/passwd", "absolute"),
        ("../outside.py", "'..'"),
        ("pkg/../../outside.py", "'..'"),
        (".git/config", ".git is not part of the project"),
        (".fixloop/runs/x.json", ".fixloop is not part of the project"),
        ("", "empty"),
        ("   ", "empty"),
        ("pkg\\..\\..\\evil.py", "backslash"),
        ("C:/Windows/evil.py", "absolute"),
    ],
)
def test_path_is_refused(tmp_path: Path, path: str, why: str) -> None:
    with pytest.raises(EditFormatError) as caught:
        safe_path(tmp_path, path)

    assert why in str(caught.value)
    assert repr(path) in str(caught.value)


def test_symlink_pointing_outside_the_project_is_refused(tmp_path: Path) -> None:
    root, outside = tmp_path / "project", tmp_path / "elsewhere"
    root.mkdir()
    outside.mkdir()
    (root / "escape").symlink_to(outside)

    with pytest.raises(EditFormatError, match="outside the project"):
        apply(proposal(Edit(path="escape/evil.py", content="x\n")), root)

    assert list(outside.iterdir()) == []


def test_symlink_pointing_into_git_is_refused(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git/config").write_text("[core]\n")
    (tmp_path / "settings.cfg").symlink_to(".git/config")

    with pytest.raises(EditFormatError, match=re.escape("into .git or .fixloop")):
        safe_path(tmp_path, "settings.cfg")


def test_refused_path_in_apply_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()

    with pytest.raises(EditFormatError):
        apply(proposal(Edit(path=".git/hooks/pre-commit", content="rm -rf ~\n")), tmp_path)

    assert not (tmp_path / ".git/hooks").exists()


def test_safe_path_normalises_to_a_relative_posix_path(tmp_path: Path) -> None:
    assert safe_path(tmp_path, "./pkg//sub/./mod.py") == "pkg/sub/mod.py"


def test_real_small_model_answer_applies(tmp_path: Path) -> None:
    write(tmp_path, {"stats/core.py": "def mean(xs):\n    return sum(xs) // len(xs)\n"})
    answer = (
        "Here is the fix:\n\nstats/core.py\n```python\ndef mean(xs):\n"
        "    return sum(xs) / len(xs)\n```\nThis changes // to /."
    )

    result = apply(parse(answer, "whole"), tmp_path)

    assert result.files == ["stats/core.py"]
    assert (tmp_path / "stats/core.py").read_text() == (
        "def mean(xs):\n    return sum(xs) / len(xs)\n"
    )


# --- dropped definitions --------------------------------------------------------------------


def test_a_whole_file_that_leaves_out_functions_is_refused(tmp_path: Path) -> None:
    (tmp_path / "core.py").write_text("def keep():\n    return 1\n\n\ndef other():\n    return 2\n")
    proposal = parse("core.py\n```python\ndef keep():\n    return 3\n```\n", "whole")
    [problem] = dropped_definitions(proposal, tmp_path)
    assert "core.py leaves out other" in problem


def test_a_whole_file_with_every_function_is_not_refused(tmp_path: Path) -> None:
    (tmp_path / "core.py").write_text("def keep():\n    return 1\n")
    proposal = parse(
        "core.py\n```python\ndef keep():\n    return 3\n\n\ndef new():\n    pass\n```\n", "whole"
    )
    assert dropped_definitions(proposal, tmp_path) == []
