"""`fixloop-tui clean`: list what fixloop left on this machine and in a project, with sizes,
ask, and remove it (engine/cleanup.py finds and removes; this module prints and asks)."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from engine.run.exit_codes import EXIT_USAGE

GROUP_TITLES = {
    "runs": "runs, their branches and worktrees",
    "demos": "the demo's copies",
    "sandbox": "sandbox state",
    "caches": "caches",
}
_AGE = re.compile(r"(\d+(?:\.\d+)?)([smhdw]?)")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "": 86400}


def add_clean_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "path", nargs="?", type=Path, default=Path.cwd(), help="project directory (its runs)"
    )
    parser.add_argument("--yes", "-y", action="store_true", help="remove without asking")
    parser.add_argument("--dry-run", action="store_true", help="list only, remove nothing")
    parser.add_argument("--runs", action="store_true", help="only the project's runs and branches")
    parser.add_argument("--demos", action="store_true", help="only the demo's temporary copies")
    parser.add_argument("--sandbox", action="store_true", help="only stale sandbox state")
    parser.add_argument("--caches", action="store_true", help="only caches (the model, Go seeds)")
    parser.add_argument(
        "--older-than",
        metavar="AGE",
        help="only what has not been used for AGE (30m, 12h, 7d, 2w; a bare number is days)",
    )
    parser.add_argument(
        "--include-undecided",
        action="store_true",
        help="also runs nobody accepted or discarded (undecided, kept, stopped) and their branches",
    )


def age_seconds(text: str) -> float | None:
    """`7d` as seconds; None when it is no age."""
    match = _AGE.fullmatch(text.strip())
    return float(match[1]) * _UNIT_S[match[2]] if match else None


def said_size(size: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} B"


def said_age(seconds: float) -> str:
    for unit, scale in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= scale:
            return f"{seconds / scale:.0f}{unit}"
    return "now"


def clean_command(args: argparse.Namespace) -> int:
    from engine.cleanup import GROUPS, remove, survey
    from engine.errors import CleanupError

    older = age_seconds(args.older_than) if args.older_than else 0.0
    if older is None:
        print(
            f"fixloop-tui: error: --older-than {args.older_than}: give an age like 30m, 12h, "
            "7d or 2w",
            file=sys.stderr,
        )
        return EXIT_USAGE
    chosen = [group for group in GROUPS if getattr(args, group)] or list(GROUPS)
    project = args.path.resolve() if args.path.is_dir() else None
    if "runs" in chosen and project is None:
        print(f"fixloop-tui: error: {args.path} is not a directory", file=sys.stderr)
        return EXIT_USAGE
    found = survey(
        project, groups=chosen, older_than_s=older, include_undecided=args.include_undecided
    )
    for group in chosen:
        items = [item for item in found.leftovers if item.group == group]
        if not items:
            continue
        print(GROUP_TITLES[group] + (f" in {project}" if group == "runs" else ""))
        for item in items:
            extra = f"  (branch {item.branch})" if item.branch and item.branch != item.name else ""
            print(
                f"  {said_size(item.size):>9}  {said_age(item.age_s):>4}  {item.name}  "
                f"{item.detail}{extra}"
            )
    for kept in found.left_alone:
        print(f"  kept: {kept.name}: {kept.reason}")
    count, total = len(found.leftovers), said_size(found.size)
    if not count:
        print("nothing to remove")
        return 0
    what = f"{count} item{'s' if count > 1 else ''} ({total})"
    if args.dry_run:
        print(f"would remove {what}")
        return 0
    if not args.yes and not _asked(f"remove {what}? [y/N] "):
        print("nothing removed")
        return 0
    failed = 0
    for item in found.leftovers:
        try:
            remove(item)
        except CleanupError as exc:
            failed += 1
            print(f"fixloop-tui: error: {exc}", file=sys.stderr)
    print(f"removed {what}" if not failed else f"removed {count - failed} of {count} items")
    return 1 if failed else 0


def _asked(question: str) -> bool:
    print(question, end="", flush=True)
    try:
        answer = sys.stdin.readline()
    except (OSError, KeyboardInterrupt):
        return False
    return answer.strip().lower() in ("y", "yes")
