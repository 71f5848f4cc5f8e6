"""Which settings a repository may set on its own, and the user's trust in one project's
`[tool.fixloop]` (ARCHITECTURE.md, "Trust").

A repository is hostile input: its `pyproject.toml` is obeyed for what runs only inside the
sandbox (commands, files, task defaults, budgets). A key that runs something on the host,
weakens the sandbox, routes credentials or earns a green (`RESTRICTED`) is obeyed only once the
user trusted the file *as it is*: the store keeps the file's sha256, so any edit (by a pull, a
checkout or the model) makes it untrusted again. The store is the user's own file
(`$XDG_CONFIG_HOME/fixloop/trusted.json`), never one inside a project, so a repository cannot
trust itself; it is written only by `fixloop-tui trust`.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import tempfile
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, ValidationError

# Each key a repository may not set on its own, and what it would let the repository do. A new
# setting of that kind belongs here (tests/engine/test_trust.py checks every Settings field is
# either here or in REPOSITORY_MAY_SET).
RESTRICTED: dict[str, str] = {
    "python": "it names a program fixloop runs on the host",
    "sandbox": "it can turn the sandbox off: unsafe-local",
    "allow_runc": "it can take the sandbox out of gVisor",
    "docker_url": "it chooses the engine your code is sent to",
    "image": "it chooses the image the sandbox starts from",
    "api_base": "it routes your API key to another server",
    "model_path": "it names a model file loaded on the host",
    "accept_suspicious": "it lets a suspicious pass end green",
    "allow_test_edits": "it lets the model change the tests that judge it",
    "approve": "it decides whether you review each change",
}

# What a repository may set: all of it runs inside the sandbox or shapes what the model is
# asked, within budgets a repository cannot lift past the settings' own bounds.
REPOSITORY_MAY_SET = frozenset(
    {
        "task",
        "spec",
        "files",
        "test_cmd",
        "lint_cmd",
        "type_cmd",
        "format_cmd",
        "test_report",
        "fix_cmd",
        "model",
        "escalate_model",
        "edit_format",
        "candidates",
        "strategy",
        "max_iters",
        "no_progress",
        "exec_timeout",
        "test_timeout",
        "failing_first",
        "max_cost",
        "max_tokens",
        "wall_clock",
        "theme",
    }
)

STORE_NAME = "trusted.json"


class RepoTrust(Protocol):
    """Who decides whether a project's restricted settings are obeyed."""

    def allows(self, config: Path, digest: str) -> bool: ...

    def how_to_trust(self, project: Path) -> str:
        """The one thing the user does to trust it, for the refusal's line."""
        ...


class TrustedFile(BaseModel):
    model_config = ConfigDict(frozen=True)

    sha256: str
    keys: list[str]
    trusted_at: str


class StoreFile(BaseModel):
    version: int = 1
    files: dict[str, TrustedFile] = {}


def digest_of(text: bytes) -> str:
    return hashlib.sha256(text).hexdigest()


def restricted_in(table: Mapping[str, Any]) -> list[str]:
    """The restricted keys a `[tool.fixloop]` table sets, in the order it sets them."""
    return [key for key in table if key in RESTRICTED]


class TrustStore:
    """The user's trusted project configs: absolute path of the pyproject.toml -> its sha256.
    Read on every settings load (a small JSON file); an unreadable store trusts nothing."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or default_store_path()

    def _load(self) -> StoreFile:
        try:
            return StoreFile.model_validate_json(self.path.read_bytes())
        except (OSError, ValidationError, ValueError):
            return StoreFile()

    def allows(self, config: Path, digest: str) -> bool:
        entry = self._load().files.get(str(config.absolute()))
        return entry is not None and entry.sha256 == digest

    def how_to_trust(self, project: Path) -> str:
        return f"fixloop-tui trust {project}"

    def entries(self) -> dict[str, TrustedFile]:
        return dict(self._load().files)

    def trust(self, config: Path, digest: str, keys: list[str]) -> None:
        store = self._load()
        store.files[str(config.absolute())] = TrustedFile(
            sha256=digest, keys=keys, trusted_at=datetime.now(UTC).isoformat(timespec="seconds")
        )
        self._save(store)

    def revoke(self, config: Path) -> bool:
        store = self._load()
        if store.files.pop(str(config.absolute()), None) is None:
            return False
        self._save(store)
        return True

    def _save(self, store: StoreFile) -> None:
        """Atomically, readable by the user alone."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=".trusted-")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(json.dumps(store.model_dump(), indent=2, sort_keys=True) + "\n")
            os.replace(temporary, self.path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise


class Trusted:
    """Obeys the project's restricted settings: a batch task whose line says `"trust": true`."""

    def allows(self, config: Path, digest: str) -> bool:
        return True

    def how_to_trust(self, project: Path) -> str:
        return "nothing to do"


class Untrusted:
    """Never obeys them: a batch task's clone, unless its line says `"trust": true`."""

    def __init__(self, hint: str) -> None:
        self.hint = hint

    def allows(self, config: Path, digest: str) -> bool:
        return False

    def how_to_trust(self, project: Path) -> str:
        return self.hint


def default_store_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "fixloop" / STORE_NAME


def refusal(config: Path, keys: list[str], how: str) -> str:
    """One line: which keys, in which file, why, and what trusts them."""
    said = "; ".join(f"{key} ({RESTRICTED[key]})" for key in keys)
    return (
        f"{config} [tool.fixloop] sets {said}: a repository may not set "
        f"{'this' if len(keys) == 1 else 'these'} on its own; if you wrote it, trust the file "
        f"as it is now: {how}"
    )


# -- the seal on a run's record -----------------------------------------------------------------

RUN_KEY_NAME = "run-key"


def _run_key() -> bytes:
    """The user's own secret for sealing run records, made on first use (0600, beside the
    trust store): a repository cannot read it, so it cannot forge a seal."""
    path = default_store_path().with_name(RUN_KEY_NAME)
    try:
        return path.read_bytes()
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_bytes()  # made meanwhile by another run
    with os.fdopen(fd, "wb") as out:
        out.write(os.urandom(32))
    return path.read_bytes()


def seal(text: bytes) -> str:
    """A run record's seal: `resume` obeys the settings in `run.json` (the sandbox, the
    interpreter, the endpoint) only when fixloop wrote it for this user, never a record a
    repository committed under `.fixloop/runs/`."""
    return hmac.new(_run_key(), text, hashlib.sha256).hexdigest()


def is_sealed(text: bytes, mark: str) -> bool:
    return hmac.compare_digest(seal(text), mark.strip())
