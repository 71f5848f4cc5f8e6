"""Running untrusted commands: one Sandbox protocol, several backends.

Knows nothing of models, git or tests.
"""

from sandbox.choose import choose_backend
from sandbox.contract import BackendName, ExecRequest, ExecResult, FileChange, Limits, Sandbox
from sandbox.errors import FixloopError, RuncWarning, SandboxError, SandboxUnavailable

__all__ = [
    "BackendName",
    "ExecRequest",
    "ExecResult",
    "FileChange",
    "FixloopError",
    "Limits",
    "RuncWarning",
    "Sandbox",
    "SandboxError",
    "SandboxUnavailable",
    "choose_backend",
    "open_sandbox",
]


def open_sandbox(
    backend: BackendName,
    *,
    pool_size: int = 0,
    docker_url: str | None = None,
    allow_runc: bool | None = None,
    image: str | None = None,
) -> Sandbox:
    """The backend by name. Raises SandboxUnavailable with the fix when it cannot work here.

    `docker_url`, `allow_runc` and `image` are the docker backend's (default: its
    environment variables, and the host's interpreter mounted; see sandbox.docker.backend);
    other backends ignore them.
    """
    if backend == "gvisor":
        from sandbox.gvisor import GvisorSandbox

        return GvisorSandbox(pool_size=pool_size)
    if backend == "docker":
        from sandbox.docker.backend import DockerSandbox

        return DockerSandbox(
            pool_size=pool_size, url=docker_url, allow_runc=allow_runc, image=image
        )
    if backend == "unsafe-local":
        from sandbox.unsafe_local import UnsafeLocalSandbox

        return UnsafeLocalSandbox()
    raise SandboxUnavailable(f"unknown sandbox backend {backend!r}; use --sandbox gvisor")
