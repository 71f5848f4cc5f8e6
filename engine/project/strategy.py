"""How the loop repairs: what a prompt holds, what counts as an answer that changed nothing, and
what the loop does when it stalls, as one frozen value (`Strategy`), chosen by name from a few
presets and adjusted key by key (`--strategy NAME`, `--set strategy.KEY=VALUE`,
`[tool.fixloop.strategy]`).

A repository may choose its strategy: every key shapes only what the model is asked and when
an answer is asked again, inside the budgets the run's own settings bound; none runs anything,
reaches the sandbox or decides a verdict (tests/hostile_repo/ checks a hostile choice cannot
earn a green)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from engine.errors import StrategyError


class Strategy(BaseModel):
    """The repair levers, each with the default the benchmarks chose (docs/benchmark.md, "What
    the defaults are, and why")."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    feedback: Literal["packet", "raw"] = Field(
        default="packet",
        description="what the model is told after a failure: the distilled packet, or the raw "
        "output's tail as a naive loop would",
    )
    # A repository choosing `map` or `traces` changes which of its own files the prompt shows:
    # they are read through `project_text` only (no link out of the tree, no `.git`, nothing
    # over its size cap) and parsed, never run (engine/feedback/context.py, repo_map.py).
    context: Literal["files", "traces", "map"] = Field(
        default="files",
        description="what a prompt shows of the project: files, the traced files with a "
        "large one cut to fixed windows; traces, a large file cut to the traced functions and "
        "those the failing lines call, whole, and test files to their failing tests; map, "
        "traces and a map of the other modules' definitions. Every prompt is cut to the "
        "model's window either way",
    )
    prompt_profile: Literal["auto", "small", "full"] = Field(
        default="auto",
        description="small: the file under repair and the failure first; full: the test files "
        "and pointers too; auto: full for every model (small fixed fewer bench tasks)",
    )
    runtime_values: bool = Field(
        default=True,
        description="the failing frame's local variables in the packet (more bench fixes where "
        "the failing line names no input)",
    )
    test_focus: bool = Field(
        default=False,
        description="test files cut to their failing tests and what those use (no gain measured)",
    )
    repeat_called: bool = Field(
        default=True,
        description="the functions a failing assertion calls shown again after the failure, "
        "even when their whole file is shown (without it the embedded model echoed more)",
    )
    called_code: bool = Field(
        default=False,
        description="those functions shown without their docstrings (fewer bench fixes)",
    )
    code_last: bool = Field(
        default=False,
        description="the test files, the failure, then the code to fix (the code first fixed "
        "more bench tasks)",
    )
    noop_retry: bool = Field(
        default=True,
        description="an answer that changes nothing is asked again once, in the iteration",
    )
    reask_candidates: bool = Field(
        default=False,
        description="with candidates: when none could be verified because they changed "
        "nothing, the model is told so and asked once more (not measured)",
    )
    code_noop: bool = Field(
        default=True,
        description="an answer that changes only comments, layout or string statements that "
        "are no docstring of Python code changes nothing: not applied, asked again",
    )
    docs_noop: bool = Field(
        default=False,
        description="the same for docstrings (never where the project runs doctests)",
    )
    sample_after_noop: bool = Field(
        default=True,
        description="once an answer changed nothing, later iterations' first answers are "
        "sampled instead of greedy",
    )
    restart_on_stall: bool = Field(
        default=True, description="a repeated failure starts once more from the baseline"
    )
    keep_asking: bool = Field(
        default=False,
        description="a stall of answers that left the code as it was at the start uses no "
        "restart: the model is asked on while iterations are left (more tokens for one more "
        "fix in 40)",
    )


LEVERS = tuple(Strategy.model_fields)
# The levers that were `run` flags before strategies (those flags still work, out of the
# help); a key added since is set only as a strategy key.
FLAGGED_LEVERS = tuple(lever for lever in LEVERS if lever != "context")

# Named strategies. `default` is what the benchmarks chose; `levers-off` is the loop with every
# lever off (the benchmark's `today` arm); `naive` is a naive loop's: the raw test output and
# no lever (the benchmark's `raw` arm).
_OFF: dict[str, Any] = {
    "prompt_profile": "full",
    "runtime_values": False,
    "noop_retry": False,
    "code_noop": False,
    "sample_after_noop": False,
    "restart_on_stall": False,
}
PRESETS: dict[str, Strategy] = {
    "default": Strategy(),
    "small-prompt": Strategy(prompt_profile="small"),
    "levers-off": Strategy(**_OFF),
    "naive": Strategy(feedback="raw", **_OFF),
    "traces": Strategy(context="traces"),
    "repo-map": Strategy(context="map"),
}
DEFAULT_STRATEGY = PRESETS["default"]


def preset(name: str) -> Strategy:
    try:
        return PRESETS[name]
    except KeyError:
        raise StrategyError(f"unknown strategy {name!r} (known: {', '.join(PRESETS)})") from None


def resolve_strategy(spec: Mapping[str, Any]) -> Strategy:
    """A strategy from its description: `preset` (a name, default `default`) and any keys to
    change in it. Raises StrategyError naming the key and the known ones."""
    values = dict(spec)
    base = preset(str(values.pop("preset", "default")))
    unknown = [key for key in values if key not in LEVERS]
    if unknown:
        raise StrategyError(
            f"unknown strategy key {unknown[0]!r} (known: preset, {', '.join(LEVERS)})"
        )
    try:
        return Strategy.model_validate({**base.model_dump(), **values})
    except ValidationError as exc:
        error = exc.errors()[0]
        key = ".".join(str(part) for part in error["loc"]) or "?"
        raise StrategyError(f"bad value for strategy.{key}: {error['msg']}") from None


def fold_levers(values: Any) -> Any:
    """A model's input with each lever given by its own name (`code_noop=False`, as settings
    and run records were written before strategies) moved into its `strategy`."""
    if not isinstance(values, dict) or not any(key in LEVERS for key in values):
        return values
    values = dict(values)
    strategy = values.get("strategy", DEFAULT_STRATEGY)
    if isinstance(strategy, Strategy):
        given: dict[str, Any] = strategy.model_dump()
    elif isinstance(strategy, str):
        given = {"preset": strategy}
    else:
        given = dict(strategy)
    given.update({key: values.pop(key) for key in LEVERS if key in values})
    values["strategy"] = given
    return values


def described(strategy: Strategy) -> str:
    """The strategy in a few words: its preset's name when it is one, else the keys that
    differ from the default."""
    for name, known in PRESETS.items():
        if known == strategy:
            return name
    default = DEFAULT_STRATEGY.model_dump()
    changed = {key: value for key, value in strategy.model_dump().items() if default[key] != value}
    return "default + " + ", ".join(f"{key}={value}" for key, value in changed.items())
