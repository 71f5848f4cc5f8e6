"""The exit codes of every `fixloop-tui` command: how a run ended, what `verify` judged,
and the failures around them (ARCHITECTURE.md, "Guards and endings")."""

from __future__ import annotations

from engine.run.guards import RunStatus

EXIT_USAGE = 2  # the user can fix it: a bad flag, setting, path or spec
EXIT_INFRA = 6  # the machinery failed: no sandbox, a dead model, a crashed engine thread
EXIT_INTERRUPTED = 130
EXIT_TIMEOUT = 124  # `sandbox run`: the command hit its timeout (as timeout(1) says it)
EXIT_OOM = 137  # `sandbox run`: killed at the memory limit (128 + SIGKILL)

RUN_EXIT_CODES: dict[RunStatus, int] = {
    RunStatus.OK: 0,
    RunStatus.NO_TESTS: EXIT_USAGE,  # the person can fix it: write a test, or use spec mode
    RunStatus.EXHAUSTED: 1,
    RunStatus.STALLED: 1,
    RunStatus.NO_PROGRESS: 1,
    RunStatus.ENV_FAILURE: 3,
    RunStatus.SUSPICIOUS_PASS: 4,
    RunStatus.BUDGET_EXCEEDED: 5,
    RunStatus.ERROR: EXIT_INFRA,
    RunStatus.ABORTED: EXIT_INTERRUPTED,
}

# Keyed by each Verdict's value (engine/verify/verdict.py; a Verdict is a StrEnum, so it looks
# itself up): importing the enum would load the verifier into every command, the app's first
# frame included, for one table.
VERDICT_EXIT_CODES: dict[str, int] = {
    "ok": 0,
    "failing": 1,
    "env_failure": 3,
    "suspicious_pass": 4,
    "error": EXIT_INFRA,
}
