"""The bench's arms: named presets of the loop's run options, so one bench run compares the
real loop with and without each lever on the same tasks and seed."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from bench.errors import ArmError
from engine.project.settings import Settings
from engine.project.strategy import PRESETS, Strategy


class ArmOptions(BaseModel):
    """The run options an arm sets; None leaves the setting as a user would get it."""

    model_config = ConfigDict(frozen=True)

    feedback: Literal["packet", "raw"] | None = None
    candidates: int | None = None
    context: Literal["files", "traces", "map"] | None = None
    prompt_profile: Literal["auto", "small", "full"] | None = None
    runtime_values: bool | None = None
    test_focus: bool | None = None
    repeat_called: bool | None = None
    called_code: bool | None = None
    code_last: bool | None = None
    noop_retry: bool | None = None
    reask_candidates: bool | None = None
    code_noop: bool | None = None
    docs_noop: bool | None = None
    sample_after_noop: bool | None = None
    restart_on_stall: bool | None = None
    keep_asking: bool | None = None


# The loop as it was before the repair levers: the `levers-off` strategy, one answer.
TODAY = ArmOptions(candidates=1, **PRESETS["levers-off"].model_dump())


def _today_with(**levers: object) -> ArmOptions:
    return TODAY.model_copy(update=levers)


def _one_answer(**levers: object) -> ArmOptions:
    """The defaults with one answer an iteration, as every arm measured before the embedded
    model's default became 3 candidates ran, so its ledger lines still measure it."""
    return ArmOptions(candidates=1).model_copy(update=levers)


def _values_off(**levers: object) -> ArmOptions:
    """An arm measured before runtime values were a default: runtime values off, as it ran,
    so its ledger lines still measure it (and `code_noop` off and one answer an iteration,
    defaults since)."""
    return _one_answer(**{"runtime_values": False, "code_noop": False, **levers})


ARMS: dict[str, ArmOptions] = {
    "today": TODAY,
    # The naive loop, the `naive` strategy: the raw test output, "please fix it".
    "raw": ArmOptions(candidates=1, **PRESETS["naive"].model_dump()),
    "small": _today_with(prompt_profile="small"),
    "noop": _today_with(noop_retry=True),
    "runtime": _today_with(runtime_values=True),
    "focus": _today_with(test_focus=True),
    "cand3": _today_with(candidates=3),
    # ... and when none of the 3 is left to verify because they changed nothing, one re-ask.
    "cand3-reask": _today_with(candidates=3, reask_candidates=True),
    "restart": _today_with(restart_on_stall=True),
    "all": ArmOptions(
        feedback="packet",
        context="files",
        candidates=3,
        prompt_profile="small",
        runtime_values=True,
        test_focus=False,
        repeat_called=True,
        called_code=False,
        code_last=False,
        noop_retry=True,
        reask_candidates=False,  # as it was measured: the options came later
        code_noop=False,
        docs_noop=False,
        sample_after_noop=False,  # its 3 candidates sample every iteration anyway
        restart_on_stall=True,
        keep_asking=False,
    ),
    "defaults": ArmOptions(),  # whatever a plain `fixloop-tui run` does for this model
    "no-values": _values_off(),  # the defaults before runtime values were on
    # The defaults with every first answer greedy: what `defaults` was before sampling after
    # a no-op was turned on, and what it was measured against.
    "greedy": _values_off(sample_after_noop=False),
    # greedy + runtime values
    "values": _one_answer(runtime_values=True, sample_after_noop=False, code_noop=False),
    # The defaults of then + sampling after a no-op (the same as `no-values` since it is on).
    "sampled": _values_off(sample_after_noop=True),
    # The defaults of then with the small prompt.
    "compact": _values_off(prompt_profile="small"),
    # ... without a called function shown twice (its whole file is in the prompt).
    "lean": _values_off(repeat_called=False),
    # ... and the code to fix after the failure, where the repeat was (nearest the answer).
    "last": _values_off(repeat_called=False, code_last=True),
    # ... with an answer that changes only docstrings or comments re-asked.
    "docs": _values_off(docs_noop=True),
    # ... with the repeated called function shown as code, its docstring left out.
    "code": _values_off(called_code=True),
    # The defaults with runtime values (the same as `defaults` since they are on): `values` is
    # the greedy defaults with them, measured before sampling was a default.
    "defaults-values": _one_answer(runtime_values=True, code_noop=False),
    # The defaults with 3 candidates an iteration: what `cand3` adds to `today`, on the defaults.
    "defaults-cand3": ArmOptions(candidates=3, code_noop=False),
    # The defaults with an answer that changes only comments or strings that do nothing re-asked
    # (since it is on, the defaults with one answer an iteration: before the embedded model's
    # default became 3 candidates), and the defaults before it was on, which the arms measured
    # before (`defaults-values`, `defaults-cand3`, `no-values` ...) keep.
    "code-noop": _one_answer(code_noop=True),
    "no-code-noop": _one_answer(code_noop=False),
    # ... and a stall with the code still at the baseline uses no restart: asked on.
    "keep-asking": _one_answer(code_noop=True, keep_asking=True),
    # The defaults with large files cut to the traced functions (and what they call), test
    # files to their failing tests; and that with the map of the other modules.
    "traces": ArmOptions(context="traces"),
    "repo-map": ArmOptions(context="map"),
}
DEFAULT_ARMS = ("today",)
# `--feedback`, the flag arms replaced, still names its old choices.
FEEDBACK_ARMS: dict[str, tuple[str, ...]] = {
    "packet": ("today",),
    "raw": ("raw",),
    "both": ("today", "raw"),
}


def parse_arms(text: str) -> list[str]:
    """`today,raw` as arm names, in order, each once; ArmError names an unknown one."""
    names = list(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    if not names:
        raise ArmError(f"--arms needs at least one arm ({', '.join(ARMS)})")
    for name in names:
        if name not in ARMS:
            raise ArmError(f"unknown arm {name!r} (known: {', '.join(ARMS)})")
    return names


def arm_settings(name: str, base: Settings) -> Settings:
    """`base` with the arm's run options set: its candidates, and its levers over the base's
    strategy."""
    options = ARMS[name].model_dump(exclude_none=True)
    update: dict[str, Any] = {}
    if "candidates" in options:
        update["candidates"] = options.pop("candidates")
    update["strategy"] = Strategy.model_validate({**base.strategy.model_dump(), **options})
    return base.model_copy(update=update)


# What a run's options resolved to before the ledger recorded them (the loop's defaults until
# `sample_after_noop` was measured): what every unrecorded ledger line measured.
DEFAULTS_BEFORE_RECORDED: dict[str, Any] = {
    "feedback": "packet",
    "candidates": 1,
    "prompt_profile": "full",
    "runtime_values": False,
    "test_focus": False,
    "noop_retry": True,
    "sample_after_noop": False,
    "restart_on_stall": True,
}


def arm_levers(name: str, model: str) -> dict[str, Any]:
    """The run options the arm's runs get for `model`, as the loop resolves them (`auto`
    and per-model defaults decided): what a ledger line records, so a change of the loop's
    defaults is a new measurement for the arms that rely on them, not a reused one."""
    from engine.run.start import run_config  # the engine only when a bench runs

    config = run_config(arm_settings(name, Settings(model=model)), model)
    resolved = {"candidates": config.candidates, **config.strategy.model_dump()}
    return {key: resolved[key] for key in ArmOptions.model_fields}


# Options added after ledger lines began to record theirs, each with what the loop did before
# it existed: what a line that does not name it measured.
LEVERS_ADDED_LATER: dict[str, Any] = {
    "context": "files",
    "repeat_called": True,
    "called_code": False,
    "code_last": False,
    "docs_noop": False,
    "reask_candidates": False,
    "code_noop": False,
    "keep_asking": False,
}


def unrecorded_levers(name: str) -> dict[str, Any]:
    """What a ledger line written before lines recorded their options measured."""
    before = {**DEFAULTS_BEFORE_RECORDED, **LEVERS_ADDED_LATER}
    return {**before, **ARMS[name].model_dump(exclude_none=True)}


def recorded_levers(levers: dict[str, Any]) -> dict[str, Any]:
    """A line's recorded options, with those added since it was written as it ran them."""
    return {**LEVERS_ADDED_LATER, **levers}


def describe(name: str) -> str:
    """The arm's options in a few words, for the help and the report: `today` in full, the
    others by how they differ from it, or from the defaults when they set only a few."""
    options = ARMS[name].model_dump(exclude_none=True)
    if not options:
        return "the run's own defaults for the model (no option set)"
    prefix = ""
    if len(options) < len(ArmOptions.model_fields):  # the other options as a run has them
        prefix = "defaults + "
    elif name != "today":
        today = TODAY.model_dump()
        options = {key: value for key, value in options.items() if today[key] != value}
        prefix = "today + "
    words = [_said(key, value) for key, value in options.items() if not isinstance(value, bool)]
    for state in (True, False):
        switched = [_WORDS[key] for key, value in options.items() if value is state]
        if switched:
            words.append(f"{', '.join(switched)} {'on' if state else 'off'}")
    return prefix + ", ".join(words)


_WORDS = {
    "runtime_values": "runtime values",
    "test_focus": "test focus",
    "repeat_called": "called functions repeated",
    "called_code": "called functions without docstrings",
    "code_last": "code last",
    "noop_retry": "no-op retry",
    "reask_candidates": "candidates re-asked",
    "code_noop": "comment and string edits as no-ops",
    "docs_noop": "docstring edits as no-ops",
    "sample_after_noop": "sampling after a no-op",
    "restart_on_stall": "restart on stall",
    "keep_asking": "asking on at the baseline",
}


def _said(key: str, value: object) -> str:
    if key == "feedback":
        return f"{value} feedback"
    if key == "context":
        return f"{value} context"
    if key == "candidates":
        return f"{value} candidate{'s' if value != 1 else ''}"
    return f"{value} prompt"
