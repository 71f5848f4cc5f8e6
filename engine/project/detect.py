"""The test command a project implies when none is configured: `go.mod` means Go's tests,
a `package.json` that depends on Jest or Vitest means that runner, each asked for its
structured report (ARCHITECTURE.md, "Beyond Python"). A settings layer: anything the person
configured in the project, the environment or on the command line wins over it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

GO_TEST_CMD = "go test -json ./..."
# The package's own runner, as `npm install` put it there (never `npx`, which may download).
JEST_TEST_CMD = "node_modules/.bin/jest --ci --json --testLocationInResults"
VITEST_TEST_CMD = "node_modules/.bin/vitest run --reporter=json"


def detected_test_cmd(project: Path) -> str | None:
    """The test command `project`'s own files name, or None (a Python project: pytest)."""
    if (project / "go.mod").is_file():
        return GO_TEST_CMD
    package = _package_json(project / "package.json")
    if package is None:
        return None
    names: set[str] = set()
    for key in ("dependencies", "devDependencies"):
        section = package.get(key)
        if isinstance(section, dict):
            names |= set(section)
    scripts = package.get("scripts")
    test_script = str(scripts.get("test", "")) if isinstance(scripts, dict) else ""
    if "vitest" in names or "vitest" in test_script:
        return VITEST_TEST_CMD
    if "jest" in names or "jest" in test_script:
        return JEST_TEST_CMD
    return None


def detected_layer(project: Path) -> dict[str, Any]:
    """The detected settings, as a layer under the project's own configuration."""
    cmd = detected_test_cmd(project)
    return {"test_cmd": cmd} if cmd is not None else {}


def _package_json(path: Path) -> dict[str, Any] | None:
    """The parsed package.json; None when missing or unreadable (a broken one is the
    runner's to report, in the sandbox)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
