"""What each context choice (`strategy.context`) puts in the first repair prompt, without a
model: tokens, and whether the function the bug is in is shown whole.

Tasks: the real bench's screened bugs (`bench --suite real`, read from the person's cache:
run that once first) and the first failing seeded mutants of HumanEval tasks. Each task's
baseline is verified in gVisor (a real project's suite narrowed to the tests the screening saw
fail, so a 3-minute suite costs seconds: the packet is the same failures), then the prompt is
built as the loop would for the embedded model in the `whole` format: `before` is the full
profile as it was (no window), then each choice cut to the window.

    PYTHONPATH=. .venv/bin/python bench/context_prompts.py [--humaneval N] [--show NAME]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import shlex
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.real_projects import PROJECTS, TEST_CMD, cache_root, set_up  # noqa: E402
from bench.suite.harness import task_repo, task_text  # noqa: E402
from bench.suite.mutants import seeded_mutants  # noqa: E402
from bench.suite.project_mutants import ProjectMutant  # noqa: E402
from bench.suite.project_tasks import make_task  # noqa: E402
from bench.suite.real import REAL_LIMITS, TASK_TEXT  # noqa: E402
from bench.suite.tasks import load_suite  # noqa: E402
from engine.feedback.checkout import verify_checkout  # noqa: E402
from engine.feedback.context import message_tokens, prompt_budget  # noqa: E402
from engine.model.local import EMBEDDED_MODEL  # noqa: E402
from engine.project.settings import load_settings  # noqa: E402
from engine.project.strategy import Strategy  # noqa: E402
from engine.run.answers import repair_prompt  # noqa: E402

CHOICES = ("before", "files", "traces", "map")
_NUMBER = re.compile(r"^\s*\d+  ")


def cached_bugs() -> list[tuple[str, ProjectMutant]]:
    """(project slug, bug) for every bug the real bench screened and cached, each once."""
    found: dict[str, tuple[str, ProjectMutant]] = {}
    top = Path.home() / ".cache" / "fixloop" / "bench-mutants"
    for file in sorted(top.glob("*.json")):
        for raw in json.loads(file.read_text()):
            bug = ProjectMutant.model_validate(raw)
            for name in PROJECTS:
                if bug.path.replace("src/", "").startswith(name.replace("-", "_")):
                    found.setdefault(bug.id, (name, bug))
    return sorted(found.values(), key=lambda pair: pair[1].id)


def shown_whole(text: str, source: str, lines: tuple[int, int]) -> bool:
    """Whether every line of `source` in `lines` appears in the prompt (numbers dropped)."""
    shown = {_NUMBER.sub("", line).rstrip() for line in text.splitlines()}
    wanted = source.splitlines()[lines[0] - 1 : lines[1]]
    return all(line.rstrip() in shown for line in wanted if line.strip())


def measure(
    root: Path, settings_update: dict[str, object], task: str, target: tuple[str, tuple[int, int]]
) -> dict[str, object]:
    settings = load_settings(root, {"sandbox": "gvisor"}).model_copy(update=settings_update)
    current = asyncio.run(verify_checkout(root, settings))
    row: dict[str, object] = {"failures": len(current.packet.failures) if current.packet else 0}
    source = (root / target[0]).read_text()
    for choice in CHOICES:
        context = "files" if choice == "before" else choice
        window = None if choice == "before" else prompt_budget(EMBEDDED_MODEL)
        prompt = repair_prompt(
            root, current, [], task, [], "whole", strategy=Strategy(context=context), window=window
        )
        text = prompt.messages[1].content
        row[choice] = {
            "tokens": message_tokens(prompt.messages),
            "whole": shown_whole(text, source, target[1]),
            "excerpts": prompt.excerpts,
        }
        row[f"{choice}_text"] = text
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--humaneval", type=int, default=5)
    parser.add_argument("--show", default="")
    args = parser.parse_args()
    rows: list[tuple[str, dict[str, object]]] = []
    top = Path(tempfile.mkdtemp(prefix="fixloop-context-"))
    top.chmod(0o755)
    for name, bug in cached_bugs():
        checkout = set_up(PROJECTS[name], Path(sys.executable), cache_root())
        root = make_task(checkout, top / bug.id.replace("/", "_").replace(":", "_"), bug)
        narrowed = TEST_CMD + " " + " ".join(map(shlex.quote, bug.failing))
        update = {"test_cmd": narrowed, **REAL_LIMITS.get(name, {})}
        rows.append(
            (
                f"{name} {bug.id}",
                measure(root, update, TASK_TEXT, (bug.path, tuple(bug.function_lines))),
            )
        )
    for task in load_suite("humaneval")[: args.humaneval * 3]:
        if sum(1 for label, _ in rows if label.startswith("HumanEval")) >= args.humaneval:
            break
        mutants = seeded_mutants(task, 0)
        if not mutants:
            continue
        mutant = mutants[0]
        root = task_repo(top / task.task_id.replace("/", "_"), task, mutant.program)
        program_lines = (1, len(mutant.program.splitlines()))
        row = measure(root, {}, task_text(task, "repair"), ("solution.py", program_lines))
        if row["failures"]:
            rows.append((task.task_id, row))
    print(f"{'task':58} " + " ".join(f"{c:>14}" for c in CHOICES))
    for label, row in rows:
        cells = []
        for choice in CHOICES:
            cell = row[choice]
            assert isinstance(cell, dict)
            cells.append(f"{cell['tokens']:>8} {'whole' if cell['whole'] else 'part':>5}")
        print(f"{label[:58]:58} " + " ".join(cells))
        if args.show and args.show in label:
            for choice in CHOICES:
                print(f"--- {choice}\n{row[f'{choice}_text']}")


if __name__ == "__main__":
    main()
