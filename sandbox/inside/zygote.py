"""Runs inside every sandbox as its first process: the job runner.

Standalone on purpose (no fixloop imports): it is mounted read-only into the
sandbox and started by the project's interpreter. It imports pytest's machinery
*before* the job exists, says READY, then waits on stdin for exactly one job:
a JSON header line followed by a tar stream of the workspace. It unpacks the
workspace, adopts the job's environment and becomes the job — in-process for
Python commands (so the warm imports pay off), by exec for anything else.
"""

import importlib
import json
import os
import runpy
import shutil
import sys
import tarfile

READY = b"FIXLOOP-READY\n"


def preload() -> None:
    """Import what a verifier job will need, while nobody is waiting."""
    try:
        import _pytest.config
        import pytest  # noqa: F401

        for name in _pytest.config.default_plugins:
            try:
                importlib.import_module("_pytest." + name)
            except Exception:
                pass
        importlib.import_module("importlib.metadata").entry_points(group="pytest11")
    except Exception:
        pass
    for name in ("json", "unittest", "doctest", "decimal", "dataclasses", "typing"):
        try:
            importlib.import_module(name)
        except Exception:
            pass


def read_job() -> dict:
    stdin = sys.stdin.buffer
    header = json.loads(stdin.readline())
    workdir = header["cwd"]
    os.makedirs(workdir, exist_ok=True)
    if header.get("has_files"):
        with tarfile.open(fileobj=stdin, mode="r|") as archive:
            # Inside the sandbox nothing outside the workspace is writable anyway;
            # 'tar' keeps the project's own symlinks as they are.
            archive.extractall(workdir, filter="tar")
    return header


def detach_stdin() -> None:
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    sys.stdin = open(0, encoding="utf-8", errors="replace", closefd=False)


def adopt_environment(env: dict) -> None:
    os.environ.clear()
    os.environ.update(env)
    sys.dont_write_bytecode = bool(env.get("PYTHONDONTWRITEBYTECODE"))
    for entry in reversed([p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]):
        sys.path.insert(0, entry)


def same_interpreter(command: str) -> bool:
    found = shutil.which(command, path=os.environ.get("PATH"))
    if found is None:
        return False
    return os.path.realpath(found) == os.path.realpath(sys.executable)


def run_python(args: list) -> None:
    """Behave like `python ARGS` for the forms verifiers use; else re-exec python."""
    if args[:1] == ["-m"] and len(args) >= 2:
        sys.argv = [args[1], *args[2:]]
        sys.path.insert(0, os.getcwd())
        runpy.run_module(args[1], run_name="__main__", alter_sys=True)
    elif args[:1] == ["-c"] and len(args) >= 2:
        sys.argv = ["-c", *args[2:]]
        sys.path.insert(0, "")
        exec(compile(args[1], "<string>", "exec"), {"__name__": "__main__"})
    elif args and not args[0].startswith("-"):
        sys.argv = list(args)
        sys.path.insert(0, os.path.dirname(os.path.abspath(args[0])))
        runpy.run_path(args[0], run_name="__main__")
    else:
        os.execv(sys.executable, [sys.executable, *args])


def main() -> None:
    preload()
    sys.stdout.buffer.write(READY)
    sys.stdout.flush()
    job = read_job()
    detach_stdin()
    os.chdir(job["cwd"])
    adopt_environment(job["env"])
    argv = job["argv"]
    # sys.path[0] is the zygote's own directory: the job must not import from it.
    if sys.path and os.path.abspath(sys.path[0]) == os.path.dirname(os.path.abspath(__file__)):
        del sys.path[0]
    command = os.path.basename(argv[0])
    if command.startswith("python") and same_interpreter(argv[0]):
        run_python(argv[1:])
    elif command == "pytest" and shutil.which("pytest") and _pytest_is_ours():
        sys.argv = list(argv)
        runpy.run_module("pytest", run_name="__main__", alter_sys=True)
    else:
        try:
            os.execvpe(argv[0], argv, os.environ)
        except FileNotFoundError:
            sys.stderr.write(f"{argv[0]}: command not found\n")
            sys.exit(127)
        except PermissionError:
            sys.stderr.write(f"{argv[0]}: permission denied\n")
            sys.exit(126)


def _pytest_is_ours() -> bool:
    """The `pytest` on PATH belongs to this interpreter's environment."""
    script = shutil.which("pytest")
    return script is not None and os.path.dirname(os.path.realpath(script)) == os.path.dirname(
        sys.executable
    )


if __name__ == "__main__":
    main()
