"""The root of fixloop's error family, and the sandbox's own errors under it.

`FixloopError` lives in the lowest layer so that every package (sandbox, engine, bench, tui)
can raise and catch one family without importing upwards; each layer's errors sit under its
own root in its one errors module: `SandboxError` here, `EngineError` in engine/errors.py,
`BenchError` in bench/errors.py. The command line prints any of them as one line.
"""


class FixloopError(Exception):
    """An expected failure whose message tells the user what to do next."""


class SandboxError(FixloopError):
    """A sandbox could not be created, run or cleaned up."""


class SandboxUnavailable(SandboxError):
    """The requested backend cannot work on this machine (missing runsc, not root, ...)."""


class EngineRefused(SandboxError):
    """The engine would not create or start a container (often transient)."""


class WorkspaceRefused(SandboxError):
    """The workspace holds something the sandbox must not be given (a link leaving it or
    looping): the project's own doing, not the sandbox's, so no `doctor` can mend it."""


class MountRefused(SandboxError):
    """A host directory that must not be mounted into a sandbox."""


class InterpreterRefused(MountRefused):
    """An interpreter (a venv, mostly) whose trees fixloop will not mount, nor it run."""


class RuncWarning(UserWarning):
    """A job ran in a container that is not under gVisor, because the user allowed it."""
