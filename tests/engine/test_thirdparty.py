"""A real third-party suite (toolz 1.2.0, vendored sdist) with one injected bug:
the packet stays under the cap and names the right test, file, line, expected and actual."""

from __future__ import annotations

import hashlib
import tarfile
from pathlib import Path

import git
import pytest

from engine.feedback.tree import Baseline, examine_tree, rendered, working_tree_diff
from engine.project.settings import Settings
from engine.verify.execute import Verifier
from engine.verify.stages import configured_stages
from engine.verify.verdict import Verdict
from sandbox.gvisor import GvisorSandbox

SDIST = Path(__file__).parents[1] / "fixtures" / "thirdparty" / "toolz-1.2.0.tar.gz"
SHA256 = "9667a038e9d6ecba37995e26cb2f59ec6420b6ad8dd9677de59db9b956b08490"
CORRECT = "    d = collections.defaultdict(int)\n"
BUGGY = "    d = collections.defaultdict(lambda: 1)\n"

pytestmark = pytest.mark.sandbox


@pytest.fixture
def toolz_with_a_bug(tmp_path: Path) -> Path:
    assert hashlib.sha256(SDIST.read_bytes()).hexdigest() == SHA256
    with tarfile.open(SDIST) as archive:
        archive.extractall(tmp_path, filter="data")
    root = tmp_path / "toolz-1.2.0"
    repo = git.Repo.init(root)
    repo.git.add("-A")
    repo.index.commit("toolz 1.2.0 as released")
    module = root / "toolz" / "itertoolz.py"
    source = module.read_text()
    assert source.count(CORRECT) == 1
    module.write_text(source.replace(CORRECT, BUGGY))
    for path in [tmp_path, *tmp_path.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return root


async def test_packet_for_an_injected_bug_names_the_failing_test(
    gvisor: GvisorSandbox, toolz_with_a_bug: Path
) -> None:
    root = toolz_with_a_bug
    diff, touched = working_tree_diff(root)
    verifier = Verifier(gvisor, configured_stages(Settings(test_cmd="python -m pytest -q toolz")))
    result = rendered(
        await examine_tree(
            root, verifier, baseline=Baseline(repo=root), touched=touched, last_diff=diff
        )
    )
    assert result.judgement.verdict is Verdict.FAILING
    assert result.judgement.tests is not None
    assert result.judgement.tests.collected > 150
    assert result.packet is not None
    assert result.packet_tokens <= 2000
    first = result.packet.failures[0]
    assert first.test == "toolz/tests/test_itertoolz.py::test_frequencies"
    assert (first.file, first.line) == ("toolz/tests/test_itertoolz.py", 263)
    assert first.expected is not None
    assert "'cat': 2" in first.expected
    assert first.actual is not None
    assert "'cat': 3" in first.actual
    text = result.packet_text
    assert "toolz/tests/test_itertoolz.py::test_frequencies" in text
    assert "toolz/itertoolz.py" in text  # anchored to the edit
    assert result.judgement.classification.error_class.value == "logic"
