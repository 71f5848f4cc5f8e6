"""Running untrusted commands: one Sandbox protocol, several backends.

Knows nothing of models, git or tests.
"""

from sandbox.contract import BackendName, ExecRequest, ExecResult, Limits, Sandbox
from sandbox.errors import FixloopError, SandboxError, SandboxUnavailable

__all__ = [
    "BackendName",
    "ExecRequest",
    "ExecResult",
    "FixloopError",
    "Limits",
    "Sandbox",
    "SandboxError",
    "SandboxUnavailable",
    "open_sandbox",
]


def open_sandbox(backend: BackendName, *, pool_size: int = 0) -> Sandbox:
    """The backend by name. Raises SandboxUnavailable with the fix when it cannot work here."""
    if backend == "gvisor":
        from sandbox.gvisor import GvisorSandbox

        return GvisorSandbox(pool_size=pool_size)
    if backend == "docker":
        from sandbox.docker import DockerSandbox

        return DockerSandbox(pool_size=pool_size)
    if backend == "unsafe-local":
        from sandbox.local import UnsafeLocalSandbox

        return UnsafeLocalSandbox()
    raise SandboxUnavailable(f"unknown sandbox backend {backend!r}; use --sandbox gvisor")
