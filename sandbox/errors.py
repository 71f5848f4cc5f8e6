"""The root of fixloop's error family.

It lives in the lowest layer so that every package (sandbox, engine, tui) can
raise and catch one family without importing upwards.
"""


class FixloopError(Exception):
    """An expected failure whose message tells the user what to do next."""


class SandboxError(FixloopError):
    """A sandbox could not be created, run or cleaned up."""


class WorkspaceRefused(SandboxError):
    """The workspace holds something the sandbox must not be given (a link leaving it or
    looping): the project's own doing, not the sandbox's, so no `doctor` can mend it."""


class SandboxUnavailable(SandboxError):
    """The requested backend cannot work on this machine (missing runsc, not root, ...)."""


class RuncWarning(UserWarning):
    """A job ran in a container that is not under gVisor, because the user allowed it."""


class MountRefused(SandboxError):
    """A host directory that must not be mounted into a sandbox."""


class InterpreterRefused(MountRefused):
    """An interpreter (a venv, mostly) whose trees fixloop will not mount, nor it run."""


class EngineRefused(SandboxError):
    """The engine would not create or start a container (often transient)."""
