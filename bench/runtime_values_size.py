"""What the runtime line costs: the repair packet's tokens with and without the failing
frame's locals, on the bundled example and the failing fixture projects.

Each project's tests run for real in the gVisor sandbox (root), with fixloop's plugin; the
one verification is rendered twice, `runtime_values` on and off. Tokens are counted with
fixloop's stated approximation (UTF-8 bytes / 3).

    .venv/bin/python bench/runtime_values_size.py [--show]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from engine.feedback.tree import examine_tree, rendered  # noqa: E402
from engine.verify.execute import Verifier  # noqa: E402
from engine.verify.stages import Stage  # noqa: E402

PROJECTS = {
    "examples/textstats": REPO / "examples" / "textstats",
    **{
        f"fixtures/{name}": REPO / "tests" / "fixtures" / "projects" / name
        for name in (
            "assertion_failure",
            "arity_error",
            "exception_in_code",
            "name_error",
            "parametrized",
            "many_failures",
        )
    },
}
TESTS = Stage(name="tests", kind="tests", cmd="python -m pytest -q")


def copy_readable(source: Path, into: Path) -> Path:
    """A copy of the project the sandbox (which runs as nobody) can read."""
    root = into / source.name
    shutil.copytree(source, root)
    for path in [into, *into.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return root


async def measure(show: bool) -> None:
    from sandbox.gvisor import GvisorSandbox

    sandbox = GvisorSandbox()
    print(f"{'project':28} {'without':>8} {'with':>6} {'added':>6}  runtime line")
    try:
        for name, source in PROJECTS.items():
            with tempfile.TemporaryDirectory() as scratch:
                root = copy_readable(source, Path(scratch))
                examined = await examine_tree(root, Verifier(sandbox, [TESTS]), baseline=None)
            on = rendered(examined)
            off = rendered(examined, runtime_values=False)
            line = next((x.strip() for x in on.packet_text.split("\n") if "locals at" in x), "-")
            added = on.packet_tokens - off.packet_tokens
            print(f"{name:28} {off.packet_tokens:8} {on.packet_tokens:6} {added:6}  {line}")
            if show:
                print(on.packet_text, end="\n\n")
    finally:
        await sandbox.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--show", action="store_true", help="print each packet with its line")
    asyncio.run(measure(parser.parse_args().show))


if __name__ == "__main__":
    main()
