"""`fixloop-tui sandbox build-image`: the docker backend's self-contained image, then a
check that it runs a job under gVisor."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from engine.project.paths import project_python
from sandbox import ExecRequest, Limits

CHECK = (
    "import sys, pytest, mypy.version, fixloop_pytest; "
    "print(sys.version.split()[0], pytest.__version__, mypy.version.__version__)"
)


def build_image_command(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    if args.from_host and args.requirements:
        parser.error(
            "--requirements needs a base image (pip runs in the build); from the host, install "
            "the requirements into --python's venv and add --package NAME or --all-packages"
        )
    if not args.from_host and args.all_packages:
        parser.error("--all-packages copies --python's environment: it needs --from-host")
    for requirement in args.requirements:
        if not requirement.is_file():
            parser.error(f"--requirements {requirement}: no such file")
    from engine.verify.execute import PLUGIN_FILES, PLUGIN_MOUNT
    from sandbox.docker.backend import DockerSandbox
    from sandbox.docker.engine_check import connect
    from sandbox.docker.images import build_from_base, build_from_host
    from sandbox.interpreter import probe

    python = args.python or project_python(Path.cwd())
    client = connect(args.docker_url)
    if args.from_host:
        print(f"packing {python} and its packages into {args.tag} ...", file=sys.stderr)
        built = build_from_host(
            client,
            python=python,
            tag=args.tag,
            packages=args.packages,
            everything=args.all_packages,
            site_modules=PLUGIN_FILES,
            mount_points=[PLUGIN_MOUNT],
        )
    else:
        version = ".".join(probe(python).version.split(".")[:2])
        base = args.base or f"python:{version}-slim"
        print(f"building {args.tag} from {base} ...", file=sys.stderr)
        built = build_from_base(
            client,
            base=base,
            tag=args.tag,
            packages=args.packages,
            requirements=args.requirements,
            site_modules=PLUGIN_FILES,
            mount_points=[PLUGIN_MOUNT],
        )
    client.close()

    async def check() -> str:
        backend = DockerSandbox(url=args.docker_url, image=built.tag, allow_runc=args.allow_runc)
        try:
            result = await backend.run(
                ExecRequest(argv=["python", "-c", CHECK], limits=Limits(timeout_s=120))
            )
        finally:
            await backend.close()
        if result.exit_code != 0:
            return f"FAILED (exit {result.exit_code}): {result.stderr.strip()[-400:]}"
        return result.stdout.strip()

    said = asyncio.run(check())
    packages = ", ".join(f"{name} {v}".strip() for name, v in sorted(built.packages.items()))
    python_inside = f"Python {built.interpreter.version} at {built.interpreter.executable}"
    print(f"built {built.tag}: {python_inside}")
    print(f"  {built.size_bytes / 2**20:.0f} MiB; packages: {packages}")
    print(f"  a job in it under gVisor: {said}")
    if said.startswith("FAILED"):
        return 1
    print(f"use it with: --sandbox docker --image {built.tag}  (or FIXLOOP_IMAGE={built.tag})")
    return 0
