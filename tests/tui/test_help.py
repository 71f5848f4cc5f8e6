"""Help that matches the parser: every flag explained, choices listed and checked, a mistyped
command named as one, a pipe closed early ended quietly, and the README naming what `--help`
names."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import themes
from tui.arguments import THEME_CHOICES
from tui.cli import COMMANDS, build_parser

REPO = Path(__file__).parents[2]


def fixloop(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={"PATH": "/usr/bin:/bin", "HOME": str(cwd), "PYTHONPATH": str(REPO)},
        timeout=120,
        check=False,
    )


def parsers(
    parser: argparse.ArgumentParser, name: str = "fixloop-tui"
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """Every parser of the command line, the top one and each (sub)command's, by its name."""
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for command, sub in action.choices.items():
                yield from parsers(sub, f"{name} {command}")


def flags(parser: argparse.ArgumentParser) -> set[str]:
    return {
        option
        for action in parser._actions
        for option in action.option_strings
        if option.startswith("--") and option not in ("--help", "--version")
    }


def test_every_argument_and_command_has_help() -> None:
    missing = []
    for name, parser in parsers(build_parser()):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                helped = {choice.dest for choice in action._choices_actions if choice.help}
                missing += [
                    f"{name} {command}" for command in action.choices if command not in helped
                ]
            elif not action.help:
                missing.append(f"{name} {'/'.join(action.option_strings) or action.dest}")
    assert missing == []


def test_theme_choices_are_the_apps_own_themes() -> None:
    assert {themes.theme_name(choice) for choice in THEME_CHOICES} == {
        theme.name for theme in themes.THEMES
    }
    for name, parser in parsers(build_parser()):
        for action in parser._actions:
            if "--theme" in action.option_strings:
                assert tuple(action.choices or ()) == THEME_CHOICES, name


def test_an_unknown_theme_is_refused_with_the_choices(tmp_path: Path) -> None:
    done = fixloop("replay", str(tmp_path), "--theme", "bogus", cwd=tmp_path)
    assert done.returncode == 2
    assert (
        "argument --theme: invalid choice: 'bogus' (choose from dark, light, high-contrast)"
        in done.stderr.replace("'dark', 'light', 'high-contrast'", "dark, light, high-contrast")
    )


def test_a_mistyped_command_names_the_nearest(tmp_path: Path) -> None:
    done = fixloop("repot", cwd=tmp_path)
    assert (done.returncode, done.stderr.strip()) == (
        2,
        "fixloop-tui: error: unknown command or directory: repot (did you mean: report?)",
    )


def test_a_word_that_is_no_command_and_no_directory_is_refused_as_such(tmp_path: Path) -> None:
    done = fixloop("bogus", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith("fixloop-tui: error: unknown command or directory: bogus (")
    assert len(done.stderr.strip().splitlines()) == 1
    (tmp_path / "bogus").mkdir()  # a directory of that name is the default command's project
    done = fixloop("bogus", "--headless", "--model", "nosuchprovider/x", cwd=tmp_path)
    assert "unknown command" not in done.stderr


def test_a_reader_that_goes_away_ends_the_command_quietly(tmp_path: Path) -> None:
    """`fixloop-tui runs --json | head -1`: the pipe is closed before the command writes."""
    process = subprocess.Popen(
        [sys.executable, "-m", "tui.cli", "runs", "--json", str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(REPO)},
    )
    assert process.stdout is not None
    assert process.stderr is not None
    process.stdout.close()
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=120) in (0, 141)
    assert stderr == ""


# The user docs: the README and docs/ (the README links every page).
README = "\n".join(
    path.read_text(encoding="utf-8")
    for path in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
)
# `--[no-]failing-first` names both `--failing-first` and `--no-failing-first`.
BOTH_WAYS = re.compile(r"--\[no-\]([a-z][\w-]*)")


def in_readme(flag: str) -> bool:
    said = f"--[no-]{flag.removeprefix('--').removeprefix('no-')}"
    return flag in README or said in README


def usage_lines() -> list[str]:
    """The docs' usage lines: `fixloop-tui ...` as typed, with the indented lines that go on
    with its flags."""
    lines: list[str] = []
    going_on = False
    for line in README.splitlines():
        if re.match(r"\s*(?:cd \S+ && )?fixloop-tui\b", line):
            lines.append(line.strip())
            going_on = True
        elif going_on and re.match(r"\s+\[", line):
            lines.append(line.strip())
        else:
            going_on = False
    return lines


def named_flags(line: str) -> set[str]:
    both = {f"--{name}" for name in BOTH_WAYS.findall(line)}
    both |= {f"--no-{name}" for name in BOTH_WAYS.findall(line)}
    return both | set(re.findall(r"(?<![\w-])--[a-z][\w-]*", BOTH_WAYS.sub("", line)))


def test_readme_names_every_command_and_flag_of_the_help() -> None:
    missing = [
        f"fixloop-tui {command}" for command in COMMANDS if f"fixloop-tui {command}" not in README
    ]
    for name, parser in parsers(build_parser()):
        missing += [f"{name} {flag}" for flag in sorted(flags(parser)) if not in_readme(flag)]
    assert missing == []


def test_readme_usage_lines_name_no_flag_the_parser_lacks() -> None:
    known = set().union(*(flags(parser) for _, parser in parsers(build_parser())))
    named = set().union(*(named_flags(line) for line in usage_lines()))
    assert len(named) > 50  # the usage blocks were read, continuation lines too
    assert sorted(named - known) == []


def test_the_run_help_fits_one_screen_with_the_common_flags_in_groups() -> None:
    shown = subprocess.run(
        [sys.executable, "-m", "tui.cli", "run", "--help"],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "COLUMNS": "80", "PYTHONPATH": str(REPO)},
        cwd=REPO,
        check=True,
    ).stdout
    assert len(shown.splitlines()) <= 60
    for group in ("task:", "model:", "checks", "sandbox:", "budget:", "strategy"):
        assert f"\n{group}" in shown
    assert "--no-code-noop" not in shown  # the levers are the strategy's keys now
