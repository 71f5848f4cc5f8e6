"""`fixloop-tui sandbox engine`: fixloop's own engine with runsc as its default runtime,
started by the shell scripts shipped beside this module: Podman (root: system-wide; a user:
rootless), or with --docker Docker Engine (root only)."""

from __future__ import annotations

import subprocess
from pathlib import Path

SCRIPT = Path(__file__).with_name("podman-service.sh")
DOCKER_SCRIPT = Path(__file__).with_name("docker-service.sh")


def start_service(*, docker: bool = False) -> int:
    """Run the script; its own lines say what it did or what is missing. Its exit status."""
    script = DOCKER_SCRIPT if docker else SCRIPT
    return subprocess.run(["bash", str(script)], check=False).returncode
