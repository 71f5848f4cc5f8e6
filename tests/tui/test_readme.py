"""The README is short and every command in it is one the parser takes as written: each
`fixloop-tui ...` line of its code blocks, its optional parts (`[...]`) dropped and its
placeholders given values, parses without a usage error."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from tui.cli import COMMANDS, build_parser

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")
PLACEHOLDERS = {"PATH": ".", "RUN": "0ef6", "TEXT": "fix it", "M": "gpt-4o-mini", "N": "3"}
PLACEHOLDERS |= {"TASKS.jsonl": "tasks.jsonl", "ADDRESS": "auto", "URL": "http://127.0.0.1:1"}


def commands() -> list[str]:
    """Every command line in the README's code blocks that runs fixloop-tui."""
    found: list[str] = []
    for block in re.findall(r"```(?:bash|sh)?\n(.*?)```", README, flags=re.DOTALL):
        for line in block.splitlines():
            line = line.split("  #")[0].strip()
            line = re.sub(r"^(?:cd \S+ && |\S*/)", "", line)
            for part in line.split(" && "):
                if part.startswith("fixloop-tui"):
                    found.append(part)
    return found


def as_typed(line: str, *, optional: bool) -> list[str]:
    """The line with its optional parts left out, or each given (its first alternative)."""
    while re.search(r"\[[^\[\]]*\]", line):
        if optional:
            line = re.sub(r"\[([^\[\]]*)\]", lambda part: part[1].split(" | ")[0], line)
        else:
            line = re.sub(r"\s*\[[^\[\]]*\]", "", line)
    words = [PLACEHOLDERS.get(word, word) for word in shlex.split(line)[1:]]
    return [word.split("|")[0] if word.startswith("--") else word for word in words]


def test_the_readme_is_read_in_five_minutes() -> None:
    assert len(README.splitlines()) <= 250


def test_the_readme_shows_commands() -> None:
    assert len(commands()) >= 10


@pytest.mark.parametrize("optional", [False, True], ids=["bare", "every-option"])
@pytest.mark.parametrize("line", commands())
def test_each_readme_command_parses_as_written(line: str, optional: bool) -> None:
    typed = as_typed(line, optional=optional)
    if not typed or typed[0] not in COMMANDS:  # `run` is the default command, as tui.cli says
        typed.insert(0, "run")
    try:
        build_parser().parse_args(typed)
    except SystemExit as exit:  # argparse's usage error
        pytest.fail(f"{line!r} does not parse as {typed}: exit {exit.code}")


def test_every_page_the_readme_links_exists() -> None:
    links = re.findall(r"\]\(((?:docs/)?[\w./-]+\.(?:md|svg))\)", README)
    links += re.findall(r"\]\((tests/[^)]+\.svg)\)", README)
    assert links
    assert [link for link in links if not (REPO / link).is_file()] == []
