"""`fixloop-tui demo`: the whole loop on a bundled buggy project, offline.

Copies examples/textstats into a fresh git repository under a temporary
directory (readable by the sandbox's unprivileged user) and runs fixloop on it,
with the embedded local model unless `--model` says otherwise.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import sysconfig
import tempfile
from collections.abc import Callable
from pathlib import Path

from engine.project.paths import FIXLOOP_DIR

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "textstats"
# Where a wheel install (pipx, uv tool, pip --user) puts it: pyproject's data-files.
INSTALLED = Path("share") / "fixloop-tui" / "examples" / "textstats"


def example() -> Path | None:
    """The example project: the checkout's, else the one installed beside the package."""
    places = [EXAMPLE] + [
        Path(sysconfig.get_path("data", scheme)) / INSTALLED
        for scheme in (sysconfig.get_default_scheme(), f"{os.name}_user")
    ]
    return next((place for place in places if place.is_dir()), None)


def add_demo_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--headless", action="store_true", help="no screen: progress lines only")
    parser.add_argument("--json", action="store_true", help="print one JSON object (headless)")
    parser.add_argument("--model", help="default: the embedded local model")
    parser.add_argument("--api-base", help="an OpenAI-compatible endpoint")
    parser.add_argument("--max-iters", type=int, default=6, help="proposals (default 6)")
    parser.add_argument(
        "--dir", type=Path, help="where to put the demo project (default: a temp dir)"
    )


def prepare(target: Path | None) -> Path:
    """A git repository holding a fresh copy of the example, ready for a run."""
    import git

    source = example()
    if source is None:
        raise SystemExit("fixloop-tui: error: the bundled example is missing from this install")
    base = target or Path(tempfile.mkdtemp(prefix="fixloop-demo-"))
    root = base / "textstats"
    if root.exists():
        raise SystemExit(f"fixloop-tui: error: {root} already exists; pick another --dir")
    shutil.copytree(source, root, ignore=shutil.ignore_patterns("__pycache__", FIXLOOP_DIR))
    repo = git.Repo.init(root)
    repo.git.add("-A")
    with repo.config_writer() as config:
        config.set_value("user", "name", "fixloop demo")
        config.set_value("user", "email", "demo@fixloop.invalid")
    repo.index.commit("textstats: a small package with bugs on purpose")
    for path in [base, *root.rglob("*")]:  # the sandbox runs as nobody
        if ".git" not in path.parts:
            path.chmod(0o755 if path.is_dir() else 0o644)
    return root


def run_demo(args: argparse.Namespace, run: Callable[[list[str]], int]) -> int:
    """Prepare the demo project, then `run` (the command line's main) on it."""
    root = prepare(args.dir)
    print(f"fixloop demo: a buggy copy of the example is at {root}", file=sys.stderr)
    run_args = ["run", str(root), "--max-iters", str(args.max_iters)]
    if args.model:
        run_args += ["--model", args.model]
    if args.api_base:
        run_args += ["--api-base", args.api_base]
    if args.headless:
        run_args.append("--headless")
    if args.json:
        run_args.append("--json")
    code = run(run_args)
    print(
        f"fixloop demo: inspect it with `fixloop-tui runs {root}` and "
        f"`git -C {root} log --all --oneline`",
        file=sys.stderr,
    )
    return code
