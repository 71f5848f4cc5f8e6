"""The layers of ARCHITECTURE.md are a check: `lint-imports` reads the contracts in
pyproject.toml's [tool.importlinter] and fails on an import that points up a layer. Each test
runs it, as `make lint` does, over a copy of the packages in tmp_path."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("engine", "sandbox", "tui", "bench", "themes")
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def copy_of_the_tree(root: Path) -> Path:
    for package in PACKAGES:
        shutil.copytree(
            REPO / package, root / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    return root


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """lint-imports over the tree at `root` (its own packages first on the path, no cache)."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_tree_as_it_is_keeps_every_layer_contract(tmp_path: Path) -> None:
    result = lint_imports(copy_of_the_tree(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_an_engine_module_importing_the_app_breaks_the_layers_naming_the_import(
    tmp_path: Path,
) -> None:
    root = copy_of_the_tree(tmp_path)
    module = root / "engine" / "project" / "paths.py"
    module.write_text(module.read_text(encoding="utf-8") + "\nimport tui.app\n", encoding="utf-8")

    result = lint_imports(root)

    assert result.returncode == 1, result.stdout + result.stderr
    assert "engine is not allowed to import tui" in result.stdout
    assert "engine.project.paths -> tui.app" in result.stdout


def test_a_new_engine_package_outside_every_layer_breaks_the_map(tmp_path: Path) -> None:
    root = copy_of_the_tree(tmp_path)
    (root / "engine" / "unplaced").mkdir()
    (root / "engine" / "unplaced" / "__init__.py").write_text('"""Not on the map."""\n')

    result = lint_imports(root)

    assert result.returncode == 1, result.stdout + result.stderr
    assert "not listed as layers:\n\n- engine.unplaced" in result.stdout
