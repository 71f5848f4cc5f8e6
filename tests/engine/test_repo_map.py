"""The repo map on real trees in tmp_path: deterministic, bounded by its budget, ranked by the
traced files, and never reading outside the tree or crashing on files it cannot read."""

from __future__ import annotations

import os
from pathlib import Path

from engine.feedback.context import scope_excerpt
from engine.feedback.repo_map import HEADER, repo_map
from engine.text.tokens import approximate_tokens


def project(root: Path, names: list[str]) -> Path:
    (root / "pkg").mkdir(parents=True, exist_ok=True)
    for name in names:
        body = "".join(
            f"def {name}_{k}(a, b: int = {k}) -> int:\n    return a + b\n\n\n" for k in range(30)
        )
        (root / "pkg" / f"{name}.py").write_text(body)
    return root


def test_the_map_is_the_same_text_for_the_same_tree(tmp_path: Path) -> None:
    first = project(tmp_path / "a", ["zeta", "alpha", "mid"])
    second = project(tmp_path / "b", ["mid", "zeta", "alpha"])  # created in another order
    assert repo_map(first, [], 600) == repo_map(second, [], 600) != ""


def test_the_map_holds_no_more_tokens_than_its_budget(tmp_path: Path) -> None:
    root = project(tmp_path, [f"m{k}" for k in range(40)])
    for budget in (50, 200, 800, 3000):
        text = repo_map(root, [], budget)
        assert approximate_tokens(text) <= budget
    assert repo_map(root, [], 3000).count("def ") > repo_map(root, [], 200).count("def ")


def test_a_module_whose_names_the_traced_file_uses_comes_first(tmp_path: Path) -> None:
    root = project(tmp_path, ["aaa", "used", "zzz"])
    (root / "pkg" / "traced.py").write_text("from pkg.used import used_3\n\nused_3(1)\n")
    text = repo_map(root, ["pkg/traced.py"], 2000, shown=["pkg/traced.py"])
    modules = [line for line in text.splitlines() if line.endswith(".py:")]
    assert modules[0] == "pkg/used.py:"
    assert "pkg/traced.py:" not in modules


def test_hostile_files_are_left_out_of_the_map_without_a_crash(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("def sk_fixloop_canary_outside(): pass\n")
    root = project(tmp_path / "repo", ["good"])
    (root / "pkg" / "link.py").symlink_to(outside / "secret.py")
    os.symlink(outside, root / "pkg" / "linked_dir")
    os.symlink(root / "pkg", root / "pkg" / "loop")  # walked through links: no end
    (root / "pkg" / "broken.py").write_text("def broken(:\n")
    (root / "pkg" / "latin.py").write_bytes(b"def caf\xe9(): pass\n")
    (root / "pkg" / "huge.py").write_text("def huge_one(): pass\n" + "x = 1\n" * 400_000)
    (root / "pkg" / "deep.py").write_text("x = " + "(" * 5000 + ")" * 5000 + "\n")
    text = repo_map(root, ["pkg/link.py", "pkg/broken.py", "pkg/latin.py"], 4000)
    assert text.startswith(HEADER)
    assert "good_0" in text
    left_out = ("sk_fixloop_canary_outside", "broken", "latin", "huge_one", "linked_dir", "loop/")
    for never in left_out:
        assert never not in text


def test_an_excerpt_of_a_file_that_does_not_parse_is_a_window_around_the_line() -> None:
    text = "".join(f"line_{k} = (\n" for k in range(100))
    excerpt = scope_excerpt(text, [50])
    assert "   50  line_49 = (" in excerpt
    assert "line_0 " not in excerpt
    assert "line_99" not in excerpt
