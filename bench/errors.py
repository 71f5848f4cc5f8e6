"""The bench's errors, in one tree under `BenchError` and so under `FixloopError`, the one root
(sandbox/errors.py). Each message says what to do next."""

from __future__ import annotations

from sandbox.errors import FixloopError


class BenchError(FixloopError):
    """An expected failure of a benchmark; the message says what to do next."""


class SuiteError(BenchError):
    """A suite that cannot be loaded; the message says which and what to do."""


class ArmError(BenchError):
    """An unknown arm name; the message lists the known ones."""


class LedgerError(BenchError):
    """The ledger cannot be read or written; the message is one line."""


class ScreeningError(BenchError):
    """A project cannot be screened for seeded bugs (its suite fails before any bug); the
    message says why."""


class TaskSetupError(BenchError):
    """A project's copy that cannot host a seeded bug (the bug no longer applies to its
    file)."""


class PlotError(BenchError):
    """The PNG could not be written."""


class BenchStopped(BenchError):
    """A run ended in error and the model never answered, not even unusably: it is unreachable,
    and the rest would end the same way."""


class BenchFailed(BenchError):
    """A step of the set-up failed: the bench stops with what to look at."""
