"""`fixloop-tui trust [PATH]`: obey the restricted settings of a project's own config, as the
file is now (engine/project/trust.py); `--revoke` forgets it, `--list` shows what is trusted."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def add_trust_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", nargs="?", type=Path, default=Path.cwd(), help="project directory")
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--revoke", action="store_true", help="trust the project's config no more")
    what.add_argument("--list", action="store_true", help="list the trusted project configs")


def trust_command(args: argparse.Namespace) -> int:
    from engine.errors import ConfigError
    from engine.project.settings import read_project_config
    from engine.project.trust import RESTRICTED, TrustStore
    from engine.run.exit_codes import EXIT_USAGE

    store = TrustStore()
    if args.list:
        entries = store.entries()
        if not entries:
            print(f"no project config is trusted ({store.path})")
        for path, entry in sorted(entries.items()):
            keys = ", ".join(entry.keys) or "no restricted key"
            print(f"{path}  sha256 {entry.sha256[:12]}  {keys}  (since {entry.trusted_at})")
        return 0
    project = args.path.resolve()
    config = project / "pyproject.toml"
    if args.revoke:
        if store.revoke(config):
            print(f"{config} is no longer trusted")
        else:
            print(f"{config} was not trusted")
        return 0
    try:
        found = read_project_config(project)
    except ConfigError as exc:
        print(f"fixloop-tui: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    store.trust(found.path, found.sha256, list(found.restricted))
    print(f"trusted {found.path} as it is now (sha256 {found.sha256[:12]})")
    if not found.restricted:
        print("  it sets no restricted key: nothing changes until it does")
    for key, value in found.restricted.items():
        print(f"  {key} = {json.dumps(value)}  ({RESTRICTED[key]})")
    print("any change to the file makes it untrusted again")
    print(f"undo: fixloop-tui trust --revoke {project}")
    return 0
