"""The model's code never ends the run by itself, in the real sandbox: a test that keeps the
alarm from stopping it is stopped within seconds and reported as a timeout, a workspace link
that leaves the workspace or loops is refused when the workspace is packed, and what the
candidate's code does inside (filling the disk, trying the network) is a failing verdict with
a packet, not an environment failure."""

from __future__ import annotations

import time
from pathlib import Path

import git
import pytest

from engine.feedback.tree import Baseline, Verification, examine_tree, rendered
from engine.project.settings import Settings
from engine.verify.execute import Verifier
from engine.verify.stages import configured_stages
from engine.verify.verdict import Verdict
from sandbox import Limits
from sandbox.gvisor import GvisorSandbox

pytestmark = pytest.mark.sandbox

PYPROJECT = '[tool.pytest.ini_options]\ntestpaths = ["tests"]\npythonpath = ["."]\n'


def committed(root: Path, files: dict[str, str]) -> Path:
    """A project written, committed as the baseline and readable by the sandbox."""
    root.mkdir(parents=True, exist_ok=True)
    for name, text in {"pyproject.toml": PYPROJECT, **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    repo = git.Repo.init(root)
    repo.git.add("-A")
    repo.index.commit("baseline")
    for path in [root.parent, root, *root.rglob("*")]:
        if ".git" not in path.parts and not path.is_symlink():
            path.chmod(0o755 if path.is_dir() else 0o644)
    return root


async def verify(
    sandbox: GvisorSandbox, root: Path, *, stage_s: float = 120, test_s: float | None = None
) -> Verification:
    verifier = Verifier(
        sandbox,
        configured_stages(Settings()),
        limits=Limits(timeout_s=stage_s),
        test_timeout=test_s,
    )
    return rendered(await examine_tree(root, verifier, baseline=Baseline(repo=root)))


IGNORES_THE_ALARM = """\
import signal


def test_fine():
    assert True


def test_ignores_the_alarm():
    signal.signal(signal.SIGALRM, signal.SIG_IGN)
    while True:
        pass
"""


async def test_a_test_ignoring_the_alarm_is_a_timeout_within_seconds_of_its_limit(
    gvisor: GvisorSandbox, tmp_path: Path
) -> None:
    root = committed(tmp_path / "deaf", {"tests/test_deaf.py": IGNORES_THE_ALARM})
    started = time.monotonic()
    result = await verify(gvisor, root, stage_s=120, test_s=2)
    assert time.monotonic() - started < 30  # never the stage's 120 s
    (stage,) = result.stages
    assert not stage.timed_out
    assert result.judgement.verdict is Verdict.FAILING
    assert result.packet is not None
    first = result.packet.failures[0]
    assert (first.kind, first.test) == ("timeout", "tests/test_deaf.py::test_ignores_the_alarm")
    assert stage.report is not None
    assert stage.report.counts.passed == 1


async def test_a_committed_link_above_the_workspace_is_refused_in_seconds(
    gvisor: GvisorSandbox, tmp_path: Path
) -> None:
    root = committed(tmp_path / "linked", {"tests/test_one.py": "def test_one():\n    pass\n"})
    (root / "up").symlink_to("../../..")
    started = time.monotonic()
    result = await verify(gvisor, root, stage_s=120)
    assert time.monotonic() - started < 10  # never the stage's 120 s
    assert result.judgement.verdict is Verdict.ENV_FAILURE
    assert result.judgement.reasons == [
        "workspace link up -> ../../.. points outside the workspace: fixloop will not copy it "
        "into the sandbox; remove the link or point it at a file inside the project"
    ]


async def test_a_link_inside_the_workspace_still_works(
    gvisor: GvisorSandbox, tmp_path: Path
) -> None:
    files = {
        "data/v2/words.txt": "one two\n",
        "tests/test_words.py": (
            "from pathlib import Path\n\n\ndef test_words():\n"
            "    assert Path('data/latest/words.txt').read_text() == 'one two\\n'\n"
        ),
    }
    root = committed(tmp_path / "inside", files)
    (root / "data" / "latest").symlink_to("v2")
    result = await verify(gvisor, root)
    assert result.judgement.verdict is Verdict.OK


SPINS_IN_C = """\
import collections
import itertools


def test_spins_in_c():
    collections.deque(itertools.repeat(0), maxlen=0)
"""


async def test_a_test_spinning_in_c_is_a_timeout_naming_it_within_seconds(
    gvisor: GvisorSandbox, tmp_path: Path
) -> None:
    root = committed(tmp_path / "spins", {"tests/test_spin.py": SPINS_IN_C})
    started = time.monotonic()
    result = await verify(gvisor, root, stage_s=120, test_s=2)
    assert time.monotonic() - started < 30  # never the stage's 120 s
    assert not result.stages[0].timed_out
    assert result.judgement.verdict is Verdict.FAILING
    assert result.packet is not None
    first = result.packet.failures[0]
    assert (first.kind, first.test) == ("timeout", "tests/test_spin.py::test_spins_in_c")
    assert (first.exception or "").startswith("did not stop at its time limit")
