"""One exception tree: everything fixloop raises on purpose is a `FixloopError`, declared in its
layer's one errors module (sandbox/errors.py, engine/errors.py, bench/errors.py), and no
exception is named like an event of the trail. The few signals that steer control flow and
never reach a person are named below, each with why it stays outside the tree."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from types import ModuleType

from bench.errors import BenchError
from engine.errors import EngineError
from engine.run import events
from sandbox.errors import FixloopError, SandboxError

PACKAGES = ("sandbox", "engine", "bench", "tui")
# The pytest plugin runs inside the sandbox and imports nothing of fixloop's, so its
# `TestTimeout` stays there, self-contained.
NOT_WALKED = ("engine.verify.plugin",)

# Control-flow signals: raised and caught inside fixloop, never shown to a person as an error.
SIGNALS = {
    # Carries the caller's own exception out of a streaming callback, re-raised unchanged
    # rather than retried like a model failure.
    "engine.model.client._CallbackFailed",
    # How any step ends the run with a status; FixLoop.run catches it once.
    "engine.run.guards.RunEnded",
    # A stop that keeps the run resumable (the person's, or the model's outage): the loop
    # records the RunStopped event and writes no ending.
    "engine.run.guards.RunInterrupted",
    "engine.run.guards.ModelUnreachable",
    # SIGTERM and SIGHUP as a KeyboardInterrupt, so they unwind exactly as ctrl+c does.
    "tui.signals.Terminated",
}

LAYER_ROOTS = {"sandbox": SandboxError, "engine": EngineError, "bench": BenchError}
ERROR_MODULES = {"sandbox": "sandbox.errors", "engine": "engine.errors", "bench": "bench.errors"}


def modules() -> list[ModuleType]:
    found = []
    for package in PACKAGES:
        root = importlib.import_module(package)
        found.append(root)
        for info in pkgutil.walk_packages(root.__path__, f"{package}."):
            if not info.name.startswith(NOT_WALKED):
                found.append(importlib.import_module(info.name))
    return found


def exception_classes() -> dict[str, type[BaseException]]:
    """Every exception class defined (not merely imported) in fixloop's packages, by its
    qualified name. Warning categories are left out: they are passed to `warnings.warn`,
    never raised."""
    return {
        f"{module.__name__}.{name}": value
        for module in modules()
        for name, value in vars(module).items()
        if inspect.isclass(value)
        and issubclass(value, BaseException)
        and not issubclass(value, Warning)
        and value.__module__ == module.__name__
    }


def test_every_exception_is_a_fixloop_error_or_a_named_signal() -> None:
    outside = sorted(
        name
        for name, cls in exception_classes().items()
        if not issubclass(cls, FixloopError) and name not in SIGNALS
    )
    assert outside == []


def test_the_named_signals_still_exist() -> None:
    assert sorted(SIGNALS - exception_classes().keys()) == []


def test_each_layers_errors_live_in_its_errors_module_under_its_root() -> None:
    misplaced = sorted(
        name
        for name, cls in exception_classes().items()
        if issubclass(cls, FixloopError)
        and cls is not FixloopError
        and (
            cls.__module__ != ERROR_MODULES[name.split(".")[0]]
            or not issubclass(cls, LAYER_ROOTS[name.split(".")[0]])
        )
    )
    assert misplaced == []


def test_no_exception_is_named_like_an_event() -> None:
    event_names = {
        name
        for name, value in vars(events).items()
        if inspect.isclass(value) and issubclass(value, events.BaseEvent)
    }
    exception_names = {name.rsplit(".", 1)[1] for name in exception_classes()}
    assert sorted(event_names & exception_names) == []
