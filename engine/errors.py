"""The engine's errors, in one tree under `EngineError` and so under `FixloopError`, the one
root (sandbox/errors.py). Each message says what to do next; the command line prints any of
them as one line. Control-flow signals that never reach a person (`RunEnded`,
`RunInterrupted` in engine/run/guards.py) are no errors and live where they are raised."""

from __future__ import annotations

from engine.text.redact import redact
from engine.text.untrusted import printable
from sandbox.errors import FixloopError


class EngineError(FixloopError):
    """An expected failure of the engine; the message says what to do next."""


# --- settings --------------------------------------------------------------------------------


class ConfigError(EngineError):
    """A setting that cannot be used; the message names the key and where it came from."""


class UntrustedSettings(ConfigError):
    """A project's config sets restricted keys the user has not trusted; `keys` names them."""

    def __init__(self, message: str, keys: list[str]) -> None:
        super().__init__(message)
        self.keys = keys


class StageConfigError(ConfigError):
    """A stage command that cannot be run as given."""


class SpecError(ConfigError):
    """A spec that cannot be used: one line naming the field (or example) and what to do."""

    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(message)
        self.field = field  # the spec field at fault, for a form to show the message there


class FileRefused(ConfigError):
    """A file the person named cannot be shown to the model; the message says why."""


class StrategyError(EngineError, ValueError):
    """An unknown preset or strategy key, or a bad value; the message names the known ones (a
    ValueError too, so a settings model that resolves a strategy reports it as a bad value)."""


# --- the project and its runs ----------------------------------------------------------------


class WorkspaceError(EngineError):
    """The project cannot host a run, or a run's result cannot be applied as asked."""


class CloneError(WorkspaceError):
    """The task's repo could not be cloned, or its ref checked out, where the task ran."""


class OutsideProject(EngineError, PermissionError):
    """The path leads outside the project's tree, or into its `.git` (a PermissionError too,
    so every reader that skips an unreadable file skips it)."""


class FileTooLarge(EngineError, OSError):
    """The file is larger than any prompt could show (an OSError too, like any file that
    cannot be read)."""


class UnsealedRecord(EngineError):
    """A run record fixloop did not write for this user."""


class RunNotNamed(EngineError):
    """A run id (or prefix) that names no run of the project, or more than one."""


class ResumeError(EngineError):
    """A run that cannot be resumed; the message says why and what to do instead."""


class FinishRefused(EngineError):
    """A run the shell may not finish: decided already, not ended, or with no branch; or a
    run directory whose finish lock is no file fixloop made."""


class CleanupError(EngineError):
    """Something fixloop wrote could not be removed."""


# --- the model and its answers ---------------------------------------------------------------


class ModelError(EngineError):
    """A model call failed for good. The message names model, endpoint and cause, never a key."""

    def __init__(
        self,
        message: str,
        *,
        attempts: int = 0,
        cause: str = "",
        answered: bool = False,
        unreachable: bool = False,
    ) -> None:
        super().__init__(redact(message))
        self.attempts = attempts
        # The cause alone, without the model's name (candidates of one call share it).
        self.cause = redact(cause) if cause else str(self)
        # The server did answer, but not usably (truncated, empty): it is reachable.
        self.answered = answered
        # Every attempt failed in a way another attempt later could mend (no connection, a
        # timeout, HTTP 5xx or 429) and none was answered: an outage, which pauses a run
        # (resumable) instead of ending it.
        self.unreachable = unreachable


class LocalModelError(EngineError):
    """The embedded model is missing, damaged or cannot run here."""


class EditFormatError(EngineError):
    """The model's answer cannot be used. `str()` is written for the model's next prompt."""

    def __init__(self, problems: list[str], hint: str = "") -> None:
        problems = [printable(problem) for problem in problems]  # they quote the answer
        self.problems = problems
        listed = "\n".join(f"- {problem}" for problem in problems)
        message = f"Your answer could not be used:\n{listed}"
        super().__init__(f"{message}\n\n{hint}" if hint else message)


class EditWriteError(EngineError):
    """The edits were valid but the files could not be written (permissions, disk full)."""


# --- batches ---------------------------------------------------------------------------------


class BatchFileError(EngineError):
    """A batch file that cannot be run as written; the message names the line."""


class RayUnavailable(EngineError):
    """Ray is not installed, or its cluster cannot be joined."""
