"""`fixloop-tui demo`: the whole loop on a bundled buggy project, offline.

Copies an example (examples/textstats, or its Go and JavaScript twins gostats and
jsstats) into a fresh git repository under a temporary directory (readable by the
sandbox's unprivileged user) and runs fixloop on it, with the embedded local model
unless `--model` says otherwise. jsstats gets its Jest from the npm registry first.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Callable
from pathlib import Path

from engine.project.paths import FIXLOOP_DIR

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
# Where a wheel install (pipx, uv tool, pip --user) puts them: pyproject's data-files.
INSTALLED = Path("share") / "fixloop-tui" / "examples"
# The same two bugs in three languages: Python (pytest), Go (go test), JavaScript (Jest).
NAMES = ("textstats", "gostats", "jsstats")


def example(name: str = "textstats") -> Path | None:
    """The example project: the checkout's, else the one installed beside the package."""
    places = [EXAMPLES / name] + [
        Path(sysconfig.get_path("data", scheme)) / INSTALLED / name
        for scheme in (sysconfig.get_default_scheme(), f"{os.name}_user")
    ]
    return next((place for place in places if place.is_dir()), None)


def add_demo_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--example",
        choices=NAMES,
        default="textstats",
        help="the project: Python (default), Go or JavaScript",
    )
    parser.add_argument("--headless", action="store_true", help="no screen: progress lines only")
    parser.add_argument("--json", action="store_true", help="print one JSON object (headless)")
    parser.add_argument("--model", help="default: the embedded local model")
    parser.add_argument("--api-base", help="an OpenAI-compatible endpoint")
    parser.add_argument("--max-iters", type=int, default=6, help="proposals (default 6)")
    parser.add_argument(
        "--dir", type=Path, help="where to put the demo project (default: a temp dir)"
    )


def prepare(target: Path | None, name: str = "textstats") -> Path:
    """A git repository holding a fresh copy of the example, ready for a run."""
    import git

    source = example(name)
    if source is None:
        raise SystemExit(f"fixloop-tui: error: the bundled example {name} is missing")
    base = target or Path(tempfile.mkdtemp(prefix="fixloop-demo-"))
    root = base / name
    if root.exists():
        raise SystemExit(f"fixloop-tui: error: {root} already exists; pick another --dir")
    shutil.copytree(
        source, root, ignore=shutil.ignore_patterns("__pycache__", "node_modules", FIXLOOP_DIR)
    )
    repo = git.Repo.init(root)
    (root / ".gitignore").write_text("node_modules\n")
    repo.git.add("-A")
    with repo.config_writer() as config:
        config.set_value("user", "name", "fixloop demo")
        config.set_value("user", "email", "demo@fixloop.invalid")
    repo.index.commit(f"{name}: a small package with bugs on purpose")
    for path in [base, *root.rglob("*")]:  # the sandbox runs as nobody
        if ".git" not in path.parts:
            path.chmod(0o755 if path.is_dir() else 0o644)
    if (root / "package.json").is_file():
        install_node_modules(root)  # npm's own modes: readable by all, its scripts executable
    return root


def install_node_modules(root: Path) -> None:
    """`npm ci` from the example's lock file, on the host (the sandbox has no network),
    with no install scripts run."""
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit(
            "fixloop-tui: error: the JavaScript example needs npm (Node.js) to install Jest"
        )
    print("fixloop demo: installing Jest from the example's lock file (npm ci)", file=sys.stderr)
    done = subprocess.run(
        [npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise SystemExit(f"fixloop-tui: error: npm ci failed in {root}: {last}")


def run_demo(args: argparse.Namespace, run: Callable[[list[str]], int]) -> int:
    """Prepare the demo project, then `run` (the command line's main) on it."""
    root = prepare(args.dir, args.example)
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
