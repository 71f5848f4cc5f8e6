"""docs/configuration.md, rendered from the two things that define a setting: the `Settings`
model (name, type, default) and the `run` command's parser (flag and help text), with the
trust model's restricted keys marked. `python -m tui.configuration_doc > docs/configuration.md`
writes it; tests/tui/test_configuration_doc.py fails when the file and the rendering differ, so
the page cannot drift from the code.

Nothing here reads a project: the page describes fixloop's own settings, so a repository has
no way into it."""

from __future__ import annotations

import argparse
from typing import Any

from engine.project.settings import DEFAULT_TEST_CMD, Settings
from engine.project.strategy import PRESETS, Strategy
from engine.project.trust import RESTRICTED

HEAD = """# Configuration

Every setting, where it can be set, and its default. Generated from the settings model and the
`run` command's flags by `python -m tui.configuration_doc > docs/configuration.md`; a test
fails when this page and the code differ.

A setting comes from, highest first: a flag; the environment (`FIXLOOP_<NAME>`, e.g.
`FIXLOOP_TEST_CMD`); the project's `[tool.fixloop]` in `pyproject.toml`; your
`~/.config/fixloop/config.toml`; the default below. A project's own config may set only the
settings not marked **restricted**: a restricted one (it could run code on the host, weaken
the sandbox, route your key or earn a green) is obeyed only after `fixloop-tui trust PATH`,
and only while the file stays as it was (see [security.md](security.md)).

| setting | flag | default | what it does |
|---|---|---|---|
"""


def _run_parser() -> argparse.ArgumentParser:
    from tui.cli import build_parser

    parser = build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            run = action.choices["run"]
            assert isinstance(run, argparse.ArgumentParser)
            return run
    raise LookupError("the command line has no `run` command")


def _default(name: str, value: Any) -> str:
    if name == "test_cmd" and value is None:
        return f"`{DEFAULT_TEST_CMD}`"
    if value is None:
        return "none"
    if isinstance(value, Strategy):
        return "`default` (see below)"
    if isinstance(value, bool):
        return "on" if value else "off"
    return f"`{value}`"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def render() -> str:
    flags: dict[str, argparse.Action] = {}
    for action in _run_parser()._actions:
        flags.setdefault(action.dest, action)
    rows: list[str] = []
    for name, field in Settings.model_fields.items():
        given = flags.get(name)
        flag = " ".join(f"`{option}`" for option in given.option_strings) if given else ""
        said = (given.help or "") if given else ""
        if name in RESTRICTED:
            said = f"**restricted** ({RESTRICTED[name]}); {said}"
        rows.append(
            f"| `{name}` | {flag or 'config only'} | {_default(name, field.default)} "
            f"| {_cell(said % {'default': field.default} if '%(' in said else said)} |"
        )
    return HEAD + "\n".join(rows) + "\n" + _strategy()


STRATEGY_HEAD = """
## Strategy

How the loop repairs: what a prompt holds, what counts as an answer that changed nothing, what
happens on a stall. Choose a preset by name and change any key:

```bash
fixloop-tui run . --strategy naive --set strategy.code_noop=true
```

```toml
[tool.fixloop.strategy]
preset = "default"
keep_asking = true
```

A key set on its own under its old name (`code_noop = false`, `--no-code-noop`,
`FIXLOOP_CODE_NOOP=0`) still changes the strategy; the old flags say what replaced them.

"""


def _strategy() -> str:
    names = list(PRESETS)
    head = "| key | " + " | ".join(f"`{name}`" for name in names) + " | what it does |"
    rows = [head, "|---" * (len(names) + 2) + "|"]
    for key, field in Strategy.model_fields.items():
        values = " | ".join(_default(key, getattr(PRESETS[name], key)) for name in names)
        rows.append(f"| `{key}` | {values} | {_cell(field.description or '')} |")
    return STRATEGY_HEAD + "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(render(), end="")
