"""ARCHITECTURE.md holds to the code: its code map names every module on disk once and no
other, its reading order of one iteration names files that exist, each once, its event list
is the `Event` union, every module path it names exists, every heading the code cites is
there, and no line is longer than the rest of the repository's prose.

The conventions read here: a code-map entry is a bullet that starts with a backticked path
("- `engine/run/loop.py`: ..."); the reading order is the numbered list between
`<!-- reading-order -->` markers; the event list is the backticked names between
`<!-- events -->` markers.
"""

from __future__ import annotations

import re
import typing
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MAP = REPO / "ARCHITECTURE.md"
PACKAGES = ("engine", "sandbox", "tui", "bench")
MAX_LINE = 110
READING_TARGET = 15

CODE_MAP_ENTRY = re.compile(r"^- `([^`]+\.py)`", re.MULTILINE)
READING_STEP = re.compile(r"^(\d+)\. `([^`]+)`", re.MULTILINE)
MODULE_PATH = re.compile(r"`((?:engine|sandbox|tui|bench|tests)/[\w/.-]+\.py)`")
CITATION = re.compile(r'ARCHITECTURE\.md,\s*"([^"]+)"')


def text() -> str:
    return MAP.read_text(encoding="utf-8")


def section(heading: str) -> str:
    """The body of the `## heading` section, up to the next `## ` heading."""
    body = text().split(f"\n## {heading}\n", 1)[1]
    return body.split("\n## ", 1)[0]


def between(marker: str) -> str:
    return text().split(f"<!-- {marker} -->", 1)[1].split(f"<!-- /{marker} -->", 1)[0]


def modules_on_disk() -> set[str]:
    found = set()
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            relative = path.relative_to(REPO)
            if path.name == "__init__.py" or "__pycache__" in relative.parts:
                continue
            if "tests" in relative.parts:
                continue
            found.add(relative.as_posix())
    return found


def test_the_code_map_names_every_module_on_disk_and_no_other() -> None:
    named = CODE_MAP_ENTRY.findall(section("Code map"))
    twice = sorted(path for path, count in Counter(named).items() if count > 1)
    on_disk = modules_on_disk()
    not_in_map = sorted(on_disk - set(named))
    not_on_disk = sorted(set(named) - on_disk)
    assert (not_in_map, not_on_disk, twice) == ([], [], []), (
        f"modules on disk missing from ARCHITECTURE.md's code map: {not_in_map}\n"
        f"code-map entries with no module on disk: {not_on_disk}\n"
        f"code-map entries named more than once: {twice}"
    )


def reading_order() -> list[tuple[int, str]]:
    return [(int(n), path) for n, path in READING_STEP.findall(between("reading-order"))]


def test_the_reading_order_names_existing_files_each_once_in_sequence() -> None:
    steps = reading_order()
    assert steps, "ARCHITECTURE.md has no reading order between its reading-order markers"
    missing = [path for _, path in steps if not (REPO / path).is_file()]
    twice = sorted(path for path, count in Counter(p for _, p in steps).items() if count > 1)
    numbers = [n for n, _ in steps]
    assert not missing, f"reading-order files that do not exist: {missing}"
    assert not twice, f"reading-order files listed more than once: {twice}"
    assert numbers == list(range(1, len(steps) + 1)), f"steps numbered {numbers}"


def test_one_iteration_reads_in_at_most_the_target_number_of_files() -> None:
    assert len(reading_order()) <= READING_TARGET


def test_the_event_list_is_the_event_union() -> None:
    from engine.run import events

    union = typing.get_args(typing.get_args(events.Event)[0])
    in_code = sorted(cls.__name__ for cls in union)
    listed = re.findall(r"`(\w+)`", between("events"))
    assert sorted(listed) == in_code, (
        f"events in the union, not in ARCHITECTURE.md: {sorted(set(in_code) - set(listed))}\n"
        f"events in ARCHITECTURE.md, not in the union: {sorted(set(listed) - set(in_code))}"
    )


def test_every_module_path_the_map_names_exists() -> None:
    missing = sorted({path for path in MODULE_PATH.findall(text()) if not (REPO / path).exists()})
    assert not missing, f"ARCHITECTURE.md names paths that do not exist: {missing}"


def prose_files() -> list[Path]:
    """Where ARCHITECTURE.md is cited: README.md, and the code, tests and docs."""
    found = [REPO / "README.md"]
    for folder in (*PACKAGES, "tests", "docs"):
        for path in (REPO / folder).rglob("*"):
            prose = path.suffix in {".py", ".md"} and "__pycache__" not in path.parts
            if prose and path.is_file() and not path.is_symlink():
                found.append(path)
    return found


def test_every_heading_the_repository_cites_is_a_heading() -> None:
    headings = set(re.findall(r"^#{2,3} (.+)$", text(), re.MULTILINE))
    cited: dict[str, set[str]] = {}
    for path in prose_files():
        # A citation may wrap, inside a docstring or a comment.
        joined = re.sub(r"\s*\n\s*(?:#\s*)?", " ", path.read_text(encoding="utf-8"))
        for heading in CITATION.findall(joined):
            cited.setdefault(heading, set()).add(path.relative_to(REPO).as_posix())
    dangling = {
        heading: sorted(paths) for heading, paths in cited.items() if heading not in headings
    }
    assert not dangling, f"cited headings ARCHITECTURE.md does not have: {dangling}"


def test_no_line_is_longer_than_the_limit() -> None:
    long = [
        f"line {n}: {len(line)} characters"
        for n, line in enumerate(text().splitlines(), start=1)
        if len(line) > MAX_LINE
    ]
    assert not long, f"ARCHITECTURE.md lines over {MAX_LINE} characters:\n" + "\n".join(long)


def test_the_loop_is_one_class_read_in_at_most_250_lines() -> None:
    """The loop stays readable top to bottom: what a stall, a resume or a screen needs lives
    beside it (stall.py, resume.py, talk.py), not in it."""
    lines = (REPO / "engine" / "run" / "loop.py").read_text().splitlines()
    assert len(lines) <= 250, f"engine/run/loop.py has {len(lines)} lines"
