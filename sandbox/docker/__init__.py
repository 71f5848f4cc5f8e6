"""The docker backend: gVisor containers through a Docker-compatible engine (Docker, Podman).

Each job gets a fresh container whose first process is the zygote
(`inside/zygote.py`), fed the job over the attach socket, exactly like the gvisor
backend feeds it over runsc's stdin. Every container proves it runs under gVisor
before it gets a job; a container on any other runtime is refused (unless
--allow-runc / FIXLOOP_ALLOW_RUNC=1, and then every job warns). Containers are
always removed, even when the caller is cancelled.

The modules, by concern: `locate` (which engine, no docker-py), `kernel` (what proves
gVisor, no docker-py), `engine_check` (connecting, and the verdict on an engine),
`containers` (one container's life), `backend` (DockerSandbox and its warm pool),
`images` and `image_root` (the images jobs run in), `daemon_json` (doctor's fix for a
Docker on runc, no docker-py). This package itself imports
nothing, so `--sandbox auto` without an engine never loads docker-py.
"""
