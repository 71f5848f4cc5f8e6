"""fixloop's pytest plugin: one JSON report of the session, written to the real stderr.

Runs inside the sandbox (mounted read-only, loaded with ``-p fixloop_pytest``), so it
imports nothing from fixloop: stdlib and pytest (7 or 8) only. It does nothing unless
FIXLOOP_REPORT_NONCE is set. When the session is over it writes one line, nonce + JSON,
to the stderr it duplicated at import (before pytest captured fd 2); the host takes the
last line that starts with the nonce. The JSON's field names are the contract with
``engine.verify.results.TestReport``. It never fails the session: its own errors end up in
the report's "internal_error" field.

Its helpers are sibling modules in the same directory, mounted with it on PYTHONPATH (and
copied beside it into a built image's site-packages): `fixloop_pytest_source` (text, frames,
statements), `fixloop_pytest_describe` (an exception, a failure and a test's entry as
JSON), `fixloop_pytest_runtime` (the first failure's local variables), `fixloop_pytest_fit`
(fitting the report into its byte budget), `fixloop_pytest_timeout` (per-test limits) and
`fixloop_pytest_rewrites` (reports the project's hooks rewrote from failed to passed).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Generator, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from fixloop_pytest_describe import (
    MESSAGE_CHARS,
    Comparison,
    Describer,
    case_entry,
    classify,
    collection_error,
    collection_skip,
)
from fixloop_pytest_fit import fit_report
from fixloop_pytest_rewrites import RewriteWatch
from fixloop_pytest_source import asserting_frame, clip, describe_error, safe_repr
from fixloop_pytest_timeout import (
    MARKER,
    RECORD_S,
    TestTimeout,
    TimeBudget,
    Watchdog,
    configured_limit,
    configured_needs,
    describe_hang,
    limit_for_test,
    limit_of,
    slowest,
    time_limit,
)

NONCE_VARIABLE = "FIXLOOP_REPORT_NONCE"

COUNT_NAMES = ("collected", "passed", "failed", "errors", "skipped", "xfailed", "xpassed")
# Failures first: they get the full details when there are too many entries to keep.
OUTCOME_RANK = {"failed": 0, "error": 0, "xpassed": 1, "skipped": 2, "xfailed": 2}
# Raised to skip or xfail a test: the reason says it all, there is no failure to describe.
NOT_FAILURES = (pytest.skip.Exception, pytest.xfail.Exception)


def _dup_stderr() -> int | None:
    """The real stderr, taken before pytest's fd capture replaces fd 2."""
    if not os.environ.get(NONCE_VARIABLE):
        return None
    try:
        return os.dup(2)
    except OSError:
        return None


_NONCE = os.environ.get(NONCE_VARIABLE, "")
_real_stderr = _dup_stderr()
_recording = False  # one report per process, for the outermost session


def pytest_configure(config: pytest.Config) -> None:
    global _recording
    if not _NONCE or _recording or hasattr(config, "workerinput"):  # xdist workers: controller
        return
    try:
        if not config.pluginmanager.hasplugin("timeout"):  # pytest-timeout registers its own
            config.addinivalue_line("markers", MARKER)
        config.pluginmanager.register(SessionRecorder(config), "fixloop-session-recorder")
        _recording = True
    except Exception as exc:  # the plugin must never break the session
        _write_line({"internal_error": f"configure: {describe_error(exc)}"})


FOCUS_VARIABLE = "FIXLOOP_ONLY_TESTS"


def _only_tests() -> frozenset[str] | None:
    """The node ids a narrowed run keeps (JSON list in FIXLOOP_ONLY_TESTS), None: all."""
    raw = os.environ.get(FOCUS_VARIABLE)
    if not _NONCE or raw is None:
        return None
    try:
        ids = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(ids, list):
        return None
    return frozenset(nodeid for nodeid in ids if isinstance(nodeid, str))


@pytest.hookimpl(trylast=True)  # after -k, -m and the project's own selection
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A narrowed run: every test but the ones asked for is deselected, as `--deselect`
    would (in each xdist worker too: they collect, the controller does not)."""
    try:
        wanted = _only_tests()
        if wanted is None:
            return
        kept = [item for item in items if item.nodeid in wanted]
        dropped = [item for item in items if item.nodeid not in wanted]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = kept
    except Exception:  # never break the session: it runs whole, and the host sees it did
        pass


# --- the recorder -----------------------------------------------------------------------


class SessionRecorder:
    """Collects what the session did; writes the report when pytest unconfigures."""

    def __init__(self, config: pytest.Config) -> None:
        self.describe = Describer(Path(str(config.rootpath)).resolve())
        self.rewrites = RewriteWatch(config, Path(str(config.rootpath)).resolve())
        self.session: pytest.Session | None = None
        self.counts = dict.fromkeys(COUNT_NAMES, 0)
        self.nodeids: list[str] = []
        self.tests: list[dict[str, Any]] = []
        self.reported: set[str] = set()  # nodeids that already have an entry
        self.collection_errors: list[dict[str, Any]] = []
        self.details: dict[tuple[str, str], dict[str, Any]] = {}  # (nodeid, when) -> failure
        self.collect_details: dict[str, dict[str, Any]] = {}
        self.comparison: Comparison | None = None
        self.runtime_taken = False  # only the first failure's locals are captured
        self.internal_errors: list[str] = []
        self.emitted = False
        # Per-test limits: ours, unless pytest-timeout is loaded and keeps its own.
        external = config.pluginmanager.hasplugin("timeout")
        self.test_timeout = None if external else configured_limit()
        self.limits_tests = not external
        self.budget = TimeBudget.from_env() if self.limits_tests else TimeBudget(None)
        self.needs = configured_needs() if self.limits_tests else {}
        self.durations: dict[str, float] = {}  # call times of RECORD_S or more, not timeouts
        self.timeouts = 0  # tests stopped at their limit so far
        self.finished = 0  # tests whose run (setup, call, teardown) is over
        self.not_run = 0
        self.stopped: str | None = None  # why the session stopped before its last test
        self.watchdog = Watchdog(self.overran, self.where_it_hung, dump_fd=_real_stderr)

    @contextlib.contextmanager
    def guard(self, where: str) -> Iterator[None]:
        """Record, never raise: the session goes on whatever happens here."""
        try:
            yield
        except Exception as exc:
            if len(self.internal_errors) < 5:
                self.internal_errors.append(f"{where}: {describe_error(exc)}")

    # -- hooks: collection

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.session = session

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        with self.guard("collection_finish"):
            self.nodeids = [item.nodeid for item in session.items]

    def pytest_exception_interact(
        self, node: pytest.Item | pytest.Collector, call: pytest.CallInfo[Any], report: Any
    ) -> None:
        # Collection only: test failures are described in pytest_runtest_makereport.
        if not isinstance(report, pytest.CollectReport) or call.excinfo is None:
            return
        with self.guard("exception_interact"):
            exc = call.excinfo.value
            if isinstance(exc, pytest.Collector.CollectError):  # pytest's wrapper: the cause
                exc = exc.__cause__ or exc.__context__ or exc
            self.collect_details[report.nodeid] = self.describe.exception(exc)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        with self.guard("collectreport"):
            if report.failed:
                self.counts["errors"] += 1
                found = self.collect_details.pop(report.nodeid, {})
                self.collection_errors.append(collection_error(report, found))
            elif report.skipped:
                self.counts["skipped"] += 1
                self.add_test(collection_skip(report))

    # -- hooks: running tests

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, Any, None]:
        limit, why = None, ""
        if self.limits_tests:
            limit, why = limit_for_test(
                limit_of(item, self.test_timeout),
                self.budget,
                self.timeouts,
                marked=item.get_closest_marker("timeout") is not None,
                need=self.needs.get(item.nodeid),
            )
        with time_limit(limit, self.where_it_hung, why), self.watchdog.watch(item, limit, why):
            outcome = yield
        # Seen here, before any report hook can hide it: a failure the report must show.
        with self.guard("runtest_call"):
            self.rewrites.failed(item.nodeid, "call", outcome.excinfo and outcome.excinfo[1])

    def overran(self, item: pytest.Item, message: str) -> None:
        """The watchdog's word that `item` outlived its limit though the alarm fired: it
        is recorded as timed out, the tests after it as not run, the report written, and the
        process ended (the test still holds the main thread; the session fails)."""
        with self.guard("overran"):
            self.timeouts += 1
            self.counts["failed"] += 1
            path, line, _ = item.location
            where = {"file": path.replace(os.sep, "/"), "line": (line or 0) + 1}
            self.add_test(
                {"nodeid": item.nodeid, "outcome": "failed", "when": "call", **where}
                | {"exception_type": TestTimeout.__name__, "exception_message": message}
            )
            total = len(self.session.items) if self.session else 0
            self.not_run = max(total - self.finished - 1, 0)
            if self.not_run:
                self.stopped = (
                    f"{self.not_run} of {total} tests not run: "
                    f"{item.nodeid} did not stop at its time limit"
                )
            if self.session is not None:
                self.session.exitstatus = pytest.ExitCode.TESTS_FAILED
        self.pytest_unconfigure(item.config)
        os._exit(int(pytest.ExitCode.TESTS_FAILED))

    def where_it_hung(self, frame: FrameType | None) -> str:
        describe = self.describe
        return describe_hang(
            frame, lambda path: describe.relative(path) if describe.in_project(path) else None
        )

    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        self.comparison = None

    def pytest_runtest_logfinish(self, nodeid: str, location: Any) -> None:
        self.comparison = None  # lets the asserting frame (and its locals) go
        with self.guard("runtest_logfinish"):
            self.finished += 1
            self.stop_if_time_is_up()

    def stop_if_time_is_up(self) -> None:
        """Past the budget with tests still to run: they are not run, and the session fails
        (pytest checks `shouldfail` after each test), so a pass is never read off fewer
        tests than were collected."""
        session = self.session
        if session is None or self.stopped or not self.budget.spent():
            return
        left = len(session.items) - self.finished
        if left <= 0:
            return
        self.not_run = left
        total = len(session.items)
        self.stopped = (
            f"{left} of {total} test{'s' if total != 1 else ''} not run: the stage's "
            f"{self.budget.stage_s:g} s were nearly spent"
            + (f" ({self.timeouts} timed out)" if self.timeouts else "")
        )
        session.shouldfail = f"fixloop: {self.stopped}"

    def pytest_assertrepr_compare(
        self, config: pytest.Config, op: str, left: object, right: object
    ) -> None:
        with self.guard("assertrepr_compare"):
            frame = asserting_frame(sys._getframe(1))
            line = frame.f_lineno if frame is not None else 0
            self.comparison = Comparison(op, safe_repr(left), safe_repr(right), frame, line)

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, Any, None]:
        raised = call.excinfo  # before inner hooks run: one of them may clear it
        outcome = yield  # tryfirst: outermost, so xfail handling has already run
        stopped = call.excinfo is not None and isinstance(call.excinfo.value, TestTimeout)
        if call.when == "call" and call.duration >= RECORD_S and not stopped:
            self.durations[item.nodeid] = call.duration  # what a later limit must allow
        with self.guard("runtest_makereport"):
            for info in (raised, call.excinfo):  # unittest's failures are set by a hook
                if info is not None:
                    self.rewrites.failed(item.nodeid, call.when, info.value)
        if call.excinfo is None or isinstance(call.excinfo.value, NOT_FAILURES):
            return
        if isinstance(call.excinfo.value, TestTimeout):
            self.timeouts += 1
        with self.guard("runtest_makereport"):
            report = outcome.get_result()
            details = self.describe.failure(item, call, self.comparison)
            self.details[(report.nodeid, report.when)] = details
            if report.failed and not self.runtime_taken:  # not an xfail: a failure to show
                self.runtime_taken = True
                runtime = self.describe.runtime_values(item, call.excinfo.tb)
                if runtime is not None:
                    details["runtime"] = runtime

    @pytest.hookimpl(trylast=True)  # the report as every other hook left it
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        with self.guard("runtest_logreport"):
            self.rewrites.logged(report)
            details = self.details.pop((report.nodeid, report.when), {})
            count, outcome = classify(report)
            if count is not None:
                self.counts[count] += 1
            if outcome is not None and report.nodeid not in self.reported:
                self.add_test(case_entry(report, outcome, details))

    def add_test(self, case: dict[str, Any]) -> None:
        self.reported.add(case["nodeid"])
        self.tests.append(case)

    # -- the report

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self.emitted:
            return
        self.emitted = True
        report: dict[str, Any] = {"exitstatus": _exitstatus(self.session), "counts": self.counts}
        with self.guard("report"):
            report = self.build_report()
        if self.internal_errors:
            report["internal_error"] = clip("; ".join(self.internal_errors), MESSAGE_CHARS)
        _write_line(report)

    def build_report(self) -> dict[str, Any]:
        collected = getattr(self.session, "testscollected", None)
        self.counts["collected"] = collected if collected is not None else len(self.nodeids)
        tests = sorted(self.tests, key=lambda case: OUTCOME_RANK.get(case["outcome"], 3))
        return fit_report(
            {
                "exitstatus": _exitstatus(self.session),
                "counts": self.counts,
                "nodeids": [],
                "tests": [],
                "collection_errors": [],
                "truncated": False,
                **({"not_run": self.not_run, "stopped": self.stopped} if self.stopped else {}),
                **({"durations": slowest(self.durations)} if self.durations else {}),
                **self.rewrites.report(),
            },
            tests=tests,
            nodeids=self.nodeids,
            collection_errors=self.collection_errors,
        )


def _exitstatus(session: pytest.Session | None) -> int | None:
    """The session's final exit status (pytest.ExitCode is an int), if it got one."""
    status = getattr(session, "exitstatus", None)
    try:
        return int(status) if status is not None else None
    except (TypeError, ValueError):
        return None


def _write_line(report: dict[str, Any]) -> None:
    """One line, nonce + JSON, to the real stderr; fd 2 if it could not be duplicated."""
    global _real_stderr
    fd, _real_stderr = _real_stderr, None
    try:
        payload = json.dumps(report, separators=(",", ":"))
        data = f"\n{_NONCE}{payload}\n".encode()
        target = fd if fd is not None else 2
        while data:
            data = data[os.write(target, data) :]
    except Exception:  # nowhere left to report to
        pass
    finally:
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)
