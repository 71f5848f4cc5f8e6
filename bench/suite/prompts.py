"""What the model is asked in a bench run. Each prompt stands alone (no chat history), like
the loop's, and the two feedback arms differ only in the feedback paragraph."""

from __future__ import annotations

from typing import Literal

from bench.suite.harness import SOLUTION, has_docstring
from bench.suite.tasks import BenchTask
from engine.model.client import Message

Arm = Literal["packet", "raw"]
ARMS: tuple[Arm, ...] = ("packet", "raw")

SYSTEM = (
    f"You write correct Python. Reply with the whole file {SOLUTION} in one fenced python code "
    "block: its imports and every function, complete. No explanations."
)
REPLY = f"Reply with the whole corrected {SOLUTION} in one fenced python code block."
NO_CODE = (
    f"Your last answer held no complete fenced python code block with {SOLUTION}, so nothing "
    "could be tested."
)
TRUNCATED = (
    "Your last answer was cut off at the length limit, so nothing could be tested. Send a "
    "shorter, complete file."
)


def _file(program: str) -> str:
    return f"{SOLUTION}\n```python\n{program.rstrip()}\n```"


def generate(task: BenchTask) -> list[Message]:
    """Round 0 of `--mode generate`: the prompt, to be completed."""
    user = (
        f"Complete the function `{task.entry_point}` in {SOLUTION}. Keep its name and "
        f"signature.\n\n{_file(task.prompt)}"
    )
    return [Message(role="system", content=SYSTEM), Message(role="user", content=user)]


def repair(task: BenchTask, program: str) -> list[Message]:
    """Round 0 of `--mode repair`: a program with a bug, and no test output yet."""
    user = (
        f"The function `{task.entry_point}` in {SOLUTION} has a bug: its tests fail. Fix it. "
        f"Keep its name and signature.\n\n{_file(program)}"
    )
    return [Message(role="system", content=SYSTEM), Message(role="user", content=user)]


def raw_feedback(log: str) -> str:
    """The naive loop's feedback: the raw test log and a plea."""
    return f"Test output:\n```\n{log.rstrip()}\n```\nPlease fix it."


def feedback(task: BenchTask, program: str, text: str) -> list[Message]:
    """Rounds 1..K: the current file and what the tests said (a packet or a raw log)."""
    parts = [
        f"The function `{task.entry_point}` in {SOLUTION} does not pass its tests yet.",
        _file(program),
        text.strip(),
    ]
    if not has_docstring(program, task.entry_point):  # the specification must not get lost
        parts.append(f"What `{task.entry_point}` must do:\n```python\n{task.prompt.strip()}\n```")
    parts.append(REPLY)
    return [
        Message(role="system", content=SYSTEM),
        Message(role="user", content="\n\n".join(parts)),
    ]
