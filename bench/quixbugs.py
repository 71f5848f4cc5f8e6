"""A public stand-in for a hidden set of human-written bugs: the 40 Python programs of
QuixBugs, each with a one-line bug and its tests (`bench/data/quixbugs-python.json`, MIT,
the source commit named there), repaired the way a new user tries fixloop, one program at a time:

    fixloop-tui run . --headless --max-iters 3 --exec-timeout 30 \\
        --task "The function in F has a bug. Fix it so that its tests pass." \\
        --file F --test-cmd "python -m pytest -q T"

(F = python_programs/<name>.py, T = python_testcases/test_<name>.py; the defaults otherwise,
the embedded model unless --model.) Each program is a task of `fixloop-tui batch` over one
project holding the whole set: its own clone, the same code as `run --headless`. A sitting runs
the programs with no result yet under --out, so a long run can stop (ctrl+c ends the sitting's
batch; its finished tasks stay) and go on. --report prints fixed/40, fixed on the first
answer, prompt tokens per fix and how the runs ended, from what --out holds.

    .venv/bin/python bench/quixbugs.py [--out DIR] [--limit N] [--candidates N] [--on LEVER]
                                       [--model M] [--api-base URL]
    .venv/bin/python bench/quixbugs.py --out DIR --report [--ledger FILE]

--ledger FILE writes one JSON line per program run (its ending, iterations, whether the first
answer fixed it, prompt tokens, wall time, the fixloop commit that ran it): the files under
bench/ledgers/ that the QuixBugs numbers in docs/benchmark.md come from.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "bench" / "data" / "quixbugs-python.json"
TASK = "The function in {file} has a bug. Fix it so that its tests pass."


def programs(files: dict[str, str]) -> list[str]:
    """The 40 programs' names (`bitcount`), each with a test file."""
    return sorted(
        path.removeprefix("python_programs/").removesuffix(".py")
        for path in files
        if path.startswith("python_programs/")
        and path != "python_programs/node.py"
        and f"python_testcases/test_{Path(path).name}" in files
    )


def project(out: Path, data: dict[str, object]) -> Path:
    """The set as a user's repository under `out/project` (made once): every file, one commit."""
    root = out / "project"
    if (root / ".git").is_dir():
        return root
    files = data["files"]
    assert isinstance(files, dict)
    for path, text in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    (root / "LICENSE").write_text(str(data["license"]), encoding="utf-8")
    git = ["git", "-C", str(root), "-c", "user.name=bench", "-c", "user.email=bench@localhost"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", f"QuixBugs, from {data['source']}"], check=True)
    return root


def task_line(
    name: str, candidates: int | None = None, on: tuple[str, ...] = ()
) -> dict[str, object]:
    program, tests = f"python_programs/{name}.py", f"python_testcases/test_{name}.py"
    line: dict[str, object] = {
        "repo": "project",
        "id": name,
        "task": TASK.format(file=program),
        "files": [program],
        "test_cmd": f"python -m pytest -q {tests}",
        "max_iters": 3,
        "exec_timeout": 30,
    }
    line.update(dict.fromkeys(on, True))  # run options switched on (`code_noop`)
    return line if candidates is None else {**line, "candidates": candidates}


def results(out: Path) -> dict[str, Path]:
    """Each program's task directory with a result.json, from every sitting so far."""
    return {
        found.parent.name: found.parent for found in sorted(out.glob("sitting-*/*/result.json"))
    }


def next_sitting(out: Path) -> int:
    """The number of the next sitting under `out`: one more than the last `sitting-K.jsonl`."""
    return 1 + max((int(p.stem.split("-")[1]) for p in out.glob("sitting-*.jsonl")), default=0)


def sitting(out: Path, names: list[str], args: argparse.Namespace) -> int:
    """One `fixloop-tui batch` over `names`, into the next `out/sitting-K/`; its exit code."""
    k = next_sitting(out)
    batch = out / f"sitting-{k}.jsonl"
    on = tuple(args.on or ())
    lines = (json.dumps(task_line(name, args.candidates, on)) + "\n" for name in names)
    batch.write_text("".join(lines))
    revision = ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"]
    commit = subprocess.run(revision, capture_output=True, text=True, check=False).stdout.strip()
    batch.with_suffix(".commit").write_text(commit + "\n")
    model, api_base = args.model, args.api_base
    command = [sys.executable, "-m", "tui.cli", "batch", str(batch), "--jobs", "1"]
    command += ["--out", str(out / f"sitting-{k}")]
    command += ["--model", model] if model else []
    command += ["--api-base", api_base] if api_base else []
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "PYTHONPATH": str(REPO)}
    return subprocess.run(command, env=env, cwd=REPO).returncode


def prompt_tokens(task_dir: Path) -> int:
    """The prompt tokens of every answer the run asked for (its events' ModelResponded)."""
    total = 0
    for events in task_dir.glob("run/events.jsonl"):
        for line in events.read_text(encoding="utf-8").splitlines():
            event = json.loads(line)
            if event.get("type") == "ModelResponded":
                total += int(event.get("prompt_tokens") or 0)
    return total


def ledger_lines(out: Path, names: list[str]) -> list[dict[str, object]]:
    """Each program run under `out`, as a ledger line."""
    found = results(out)
    lines = []
    for name in (name for name in names if name in found):
        result = json.loads((found[name] / "result.json").read_text())
        run = result.get("run") or {}
        iterations = run.get("iterations") or []
        started = datetime.fromtimestamp((found[name] / "result.json").stat().st_mtime, UTC)
        lines.append(
            {
                "program": name,
                "status": result["status"],
                "reason": result.get("reason") or run.get("reason", ""),
                "iterations": len(iterations),
                "first_answer_ok": bool(iterations) and iterations[0].get("status") == "ok",
                "prompt_tokens": prompt_tokens(found[name]),
                "wall_s": round(float(result.get("duration_s") or 0.0), 1),
                "commit": commit_of(found[name]),
                "recorded": started.date().isoformat(),
            }
        )
    return lines


def commit_of(task_dir: Path) -> str:
    """The fixloop commit its sitting ran (`sitting-K.commit`, beside the sitting's directory)."""
    recorded = task_dir.parent.with_suffix(".commit")
    return recorded.read_text().strip() if recorded.is_file() else ""


def report(out: Path, names: list[str]) -> str:
    found = results(out)
    statuses: Counter[str] = Counter()
    fixed = first = tokens = 0
    for name in names:
        if name not in found:
            continue
        result = json.loads((found[name] / "result.json").read_text())
        statuses[result["status"]] += 1
        tokens += prompt_tokens(found[name])
        if result["status"] == "ok":
            fixed += 1
            iterations = (result.get("run") or {}).get("iterations") or []
            first += bool(iterations) and iterations[0].get("status") == "ok"
    per_fix = f"{tokens / fixed:,.0f}" if fixed else "-"
    ended = ", ".join(f"{status} {count}" for status, count in statuses.most_common())
    return "\n".join(
        [
            f"QuixBugs (Python): {len(found)} of {len(names)} programs run, under {out}",
            f"fixed: {fixed}/{len(found)} ({first} on the first answer)",
            f"prompt tokens: {tokens:,}; per fix: {per_fix}",
            f"runs ended: {ended or '-'}",
        ]
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("quixbugs-runs"))
    parser.add_argument("--limit", type=int, help="programs this sitting (default: the rest)")
    parser.add_argument("--model", help="any litellm model name; default: the embedded one")
    parser.add_argument("--api-base", help="an OpenAI-compatible endpoint")
    parser.add_argument(
        "--candidates", type=int, help="answers per iteration (default: the run's); its own --out"
    )
    parser.add_argument(
        "--on",
        action="append",
        metavar="LEVER",
        help="a run option switched on in every run (a setting's name: code_noop); its own --out",
    )
    parser.add_argument("--report", action="store_true", help="print what --out holds; run none")
    parser.add_argument("--ledger", type=Path, help="write each program's run to FILE (JSON lines)")
    args = parser.parse_args()
    data = json.loads(DATA.read_text(encoding="utf-8"))
    names = programs(data["files"])
    out = args.out.resolve()
    if not args.report:
        out.mkdir(parents=True, exist_ok=True)
        project(out, data)
        left = [name for name in names if name not in results(out)][: args.limit]
        if left:
            sitting(out, left, args)
    print(report(out, names))
    if args.ledger:
        lines = (json.dumps(line) + "\n" for line in ledger_lines(out, names))
        args.ledger.write_text("".join(lines), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
