"""fixloop's pytest plugin, noticing reports that project code rewrote: a test phase that raised
a failure whose report, when it is logged, says it passed (a `pytest_runtest_makereport` or
`pytest_runtest_logreport` hook that flips outcomes), and a failed report that
`pytest_report_teststatus` shows as passed. The hook implementations outside pytest's, the
installed plugins' and fixloop's own are named, with their file and line, for the verdict.
Standalone like the plugin (stdlib and pytest only).

Nothing in pytest itself turns a raised failure into a pass: an xfail is `skipped`, a rerun is
`rerun`, and the exceptions that skip are not failures. Cheap: a set of (nodeid, phase) for the
phases that raised, one lookup per logged report; hooks are listed only once a rewrite is seen.
"""

from __future__ import annotations

import os
import unittest
from pathlib import Path
from typing import Any

import pytest

# What the plugin records of rewrites, at most: the first few say all there is to say.
MAX_REWRITES = 5
MAX_HOOKS = 5
# Raised to skip or xfail a test: not a failure, whatever its report says.
NOT_FAILURES: tuple[type[BaseException], ...] = (
    pytest.skip.Exception,
    pytest.xfail.Exception,
    unittest.SkipTest,
)
# The hooks through which code can decide what a test's report says, outermost first.
REPORT_HOOKS = (
    "pytest_runtest_makereport",
    "pytest_runtest_logreport",
    "pytest_report_teststatus",
    "pytest_runtest_call",
    "pytest_pyfunc_call",
    "pytest_runtest_protocol",
)
_INSTALLED = ("site-packages", "dist-packages")


def is_failure(exc: BaseException | None) -> bool:
    return exc is not None and not isinstance(exc, NOT_FAILURES)


class RewriteWatch:
    """The phases that raised a failure, and the reports that said otherwise."""

    def __init__(self, config: pytest.Config, rootpath: Path) -> None:
        self.config = config
        self.rootpath = rootpath
        self.raised: set[tuple[str, str]] = set()  # (nodeid, phase) that raised a failure
        self.rewrites: list[dict[str, Any]] = []
        self.seen = 0  # every rewrite, also those past MAX_REWRITES
        self.hooks: list[str] | None = None  # found once, at the first rewrite
        ours = Path(__file__).resolve().parent
        self.ignored = (ours, Path(pytest.__file__).resolve().parent, _pytest_internals())

    def failed(self, nodeid: str, when: str, exc: BaseException | None) -> None:
        """A phase of a test raised `exc` (pytest's own call, before any report hook)."""
        if is_failure(exc):
            self.raised.add((nodeid, when))

    def logged(self, report: pytest.TestReport) -> None:
        """A report as it is logged: one that says passed where its phase raised is rewritten;
        a failed one that the status hooks show as passed is rewritten for the terminal."""
        key = (report.nodeid, report.when)
        raised = key in self.raised
        self.raised.discard(key)  # a rerun of the test is judged afresh
        if raised and report.passed:
            self.record(report, "rewritten as passed")
        elif report.failed and self.shown_as_passed(report):
            self.record(report, "shown as passed")

    def shown_as_passed(self, report: pytest.TestReport) -> bool:
        status = self.config.hook.pytest_report_teststatus(report=report, config=self.config)
        return bool(status) and status[0] == "passed"

    def record(self, report: pytest.TestReport, what: str) -> None:
        self.seen += 1
        if len(self.rewrites) >= MAX_REWRITES:
            return
        if self.hooks is None:
            self.hooks = self.project_hooks()
        self.rewrites.append(
            {"nodeid": report.nodeid, "when": report.when, "what": what, "hooks": self.hooks}
        )

    def project_hooks(self) -> list[str]:
        """`hook in file:line` of each report hook implemented outside pytest, fixloop and the
        plugins installed in the interpreter: the project's code (a conftest.py, a `-p` plugin,
        the code under test registering one). Anything under the project's root is the
        project's, even in a directory named site-packages: the repository is not trusted to
        say what is installed."""
        found: list[str] = []
        hooks = self.config.pluginmanager.hook
        for name in REPORT_HOOKS:
            caller = getattr(hooks, name, None)
            for impl in caller.get_hookimpls() if caller is not None else ():
                where = self.where(impl.function)
                if where is not None and len(found) < MAX_HOOKS:
                    found.append(f"{name} in {where}")
        return found

    def where(self, function: Any) -> str | None:
        code = getattr(function, "__code__", None)
        if code is None:
            return None
        file = Path(os.path.realpath(code.co_filename))
        if any(file.is_relative_to(ignored) for ignored in self.ignored if ignored is not None):
            return None
        if file.is_relative_to(self.rootpath):  # the repository's, a committed venv's too
            return f"{file.relative_to(self.rootpath).as_posix()}:{code.co_firstlineno}"
        if any(part in _INSTALLED for part in file.parts):
            return None  # a plugin installed in the interpreter, not the project's
        return f"{file.as_posix()}:{code.co_firstlineno}"

    def report(self) -> dict[str, Any]:
        """The report's fields: nothing when no report was rewritten."""
        if not self.seen:
            return {}
        return {"rewritten": self.rewrites, "rewritten_count": self.seen}


def _pytest_internals() -> Path | None:
    try:
        import _pytest
    except ImportError:
        return None
    return Path(_pytest.__file__).resolve().parent
