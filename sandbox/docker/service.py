"""`fixloop-tui sandbox engine`: fixloop's own Podman service with runsc as its only runtime,
started by the shell script shipped beside this module (root: system-wide; a user: rootless)."""

from __future__ import annotations

import subprocess
from pathlib import Path

SCRIPT = Path(__file__).with_name("podman-service.sh")


def start_service() -> int:
    """Run the script; its own lines say what it did or what is missing. Its exit status."""
    return subprocess.run(["bash", str(SCRIPT)], check=False).returncode
