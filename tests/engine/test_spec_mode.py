"""Spec mode's decisions on a real git worktree, without a model or a sandbox: the examples'
commit, the draft rule, the latch (refusal, the person's approval, the examples' file that never
changes), the reference check's packet, and a resumed run's frozen files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import git
import pytest

from engine.edits.apply import apply
from engine.edits.proposal import Edit, Proposal
from engine.errors import EditFormatError
from engine.feedback.tree import rendered
from engine.project.workspace import Workspace
from engine.run.events import BaseEvent, RunStarted, TestEditsRefused, TestsLatched
from engine.run.gate import Review, split_test_edits
from engine.run.outcome import RunConfig
from engine.run.resume import resume_state
from engine.run.run_directory import RunDirectory
from engine.run.spec_mode import SpecMode
from engine.spec.definition import load_spec

REPO = Path(__file__).resolve().parents[2]
SPEC = load_spec(REPO / "examples" / "specs" / "parse_duration.toml")
MODULE, TESTS, EXAMPLES = SPEC.module, SPEC.tests, SPEC.examples_file
CODE = "def parse_duration(text: str) -> int:\n    return 0\n"
OWN_TESTS = (
    "from durations import parse_duration\n\n\ndef test_constraint_3():\n"
    "    assert parse_duration('1m30s') == 90\n"
)


pytestmark = pytest.mark.usefixtures("git_as_tester")


class Recorder:
    def __init__(self) -> None:
        self.events: list[Any] = []

    def __call__(self, event: BaseEvent) -> None:
        self.events.append(event)


@pytest.fixture
def mode(tmp_path: Path) -> tuple[SpecMode, Recorder]:
    project = tmp_path / "project"
    project.mkdir()
    (project / "README.md").write_text("x\n")
    repo = git.Repo.init(project)
    repo.git.add(A=True)
    repo.index.commit("start")
    workspace = Workspace.create(project, "20260101-000000-abcd")
    run_dir = RunDirectory.create(project, "20260101-000000-abcd")
    config = RunConfig(model="openai/scripted", spec=SPEC)
    recorder = Recorder()
    return SpecMode(SPEC, config, workspace, run_dir, recorder), recorder


def proposal(*edits: Edit) -> Proposal:
    return Proposal(explanation="x", edits=list(edits), format="json")


def committed_draft(mode: SpecMode, code: str = CODE, tests: str = OWN_TESTS) -> str:
    apply(
        proposal(Edit(path=MODULE, content=code), Edit(path=TESTS, content=tests)),
        mode.workspace.root,
    )
    commit = mode.workspace.commit("draft")
    assert commit is not None
    mode.committed(1, commit)
    return commit


def screened(mode: SpecMode, edits: list[Edit], review: Review) -> tuple[Proposal, list[str]]:
    offered = proposal(*edits)
    split = split_test_edits(offered, mode.workspace.pins, mode.workspace.root)
    return mode.screen(2, offered, split, review)


def test_start_commits_the_examples_pinned_and_verifies_nothing(
    mode: tuple[SpecMode, Recorder],
) -> None:
    spec_mode, recorder = mode
    start = spec_mode.start()
    assert start.packet is None
    assert start.stages == []
    root = spec_mode.workspace.root
    assert "def test_example_returns" in (root / EXAMPLES).read_text()
    assert EXAMPLES in spec_mode.workspace.pins.files
    assert (spec_mode.run_dir.path / "spec.toml").read_text() == SPEC.to_toml()
    assert [e.type for e in recorder.events] == ["SpecPrepared", "TestsLatched"]
    message = str(git.Repo(root).head.commit.message).strip()
    assert message == "fixloop[spec]: the 5 examples of spec parse_duration as tests (generated)"


def test_the_draft_must_write_both_files(mode: tuple[SpecMode, Recorder]) -> None:
    spec_mode, _ = mode
    with pytest.raises(EditFormatError) as refused:
        spec_mode.check_draft(proposal(Edit(path=MODULE, content=CODE)))
    assert refused.value.problems == [
        f"your answer has no {TESTS}: the first answer writes both files"
    ]
    spec_mode.check_draft(
        proposal(Edit(path=MODULE, content=CODE), Edit(path=TESTS, content=OWN_TESTS))
    )


@pytest.mark.parametrize(
    ("tests", "problem"),
    [
        ("from durations import parse_duration\n<your tests>\n", f"{TESTS} is not valid Python"),
        ("from durations import parse_duration\n", f"{TESTS} has no test function"),
    ],
)
def test_draft_tests_that_could_never_pass_are_refused_before_they_freeze(
    mode: tuple[SpecMode, Recorder], tests: str, problem: str
) -> None:
    spec_mode, _ = mode
    with pytest.raises(EditFormatError) as refused:
        spec_mode.check_draft(
            proposal(Edit(path=MODULE, content=CODE), Edit(path=TESTS, content=tests))
        )
    assert refused.value.problems[0].startswith(problem)


def test_after_the_draft_a_test_edit_is_refused_and_the_rest_applies(
    mode: tuple[SpecMode, Recorder],
) -> None:
    spec_mode, recorder = mode
    spec_mode.start()
    committed_draft(spec_mode)
    assert spec_mode.latched
    assert TESTS in spec_mode.workspace.pins.files
    fix = Edit(path=MODULE, content=CODE.replace("0", "90"))
    cheat = Edit(path=TESTS, content=OWN_TESTS.replace("90", "0"))
    kept, held = screened(spec_mode, [fix, cheat], Review(decision="approve"))
    assert kept.edits == [fix]
    assert held == [TESTS]
    refused = [e for e in recorder.events if isinstance(e, TestEditsRefused)]
    assert [(e.n, e.files) for e in refused] == [(2, [TESTS])]
    assert spec_mode.held_back_note(held) == (
        f"Note: your edits to {TESTS} were refused: in spec mode the tests are frozen after "
        f"your first answer, and they define what is correct. Change only {MODULE}."
    )


def test_a_conftest_in_the_draft_is_refused_as_test_infrastructure(
    mode: tuple[SpecMode, Recorder],
) -> None:
    spec_mode, recorder = mode
    spec_mode.start()
    code, tests = Edit(path=MODULE, content=CODE), Edit(path=TESTS, content=OWN_TESTS)
    flip = Edit(path="conftest.py", content="def pytest_runtest_makereport(item, call): pass\n")
    kept, held = screened(spec_mode, [code, tests, flip], Review(decision="approve"))
    assert kept.edits == [code, tests]
    assert held == ["conftest.py"]
    refused = [e for e in recorder.events if isinstance(e, TestEditsRefused)]
    assert [(e.files, e.reason.split(":")[0]) for e in refused] == [
        (["conftest.py"], "test infrastructure")
    ]
    assert spec_mode.held_back_note(held) == (
        "Note: your edit to conftest.py was refused: it is test infrastructure (its hooks and "
        f"fixtures decide how tests run and what they report). Change only {MODULE}."
    )


def test_nothing_but_refused_test_edits_is_a_format_error(mode: tuple[SpecMode, Recorder]) -> None:
    spec_mode, _ = mode
    spec_mode.start()
    committed_draft(spec_mode)
    cheat = Edit(path=TESTS, content=OWN_TESTS.replace("90", "0"))
    with pytest.raises(EditFormatError) as refused:
        screened(spec_mode, [cheat], Review(decision="approve"))
    assert "were refused: in spec mode the tests are frozen" in str(refused.value)


def test_the_person_may_let_the_models_tests_change_but_never_the_examples(
    mode: tuple[SpecMode, Recorder],
) -> None:
    spec_mode, recorder = mode
    spec_mode.start()
    committed_draft(spec_mode)
    fixed_test = Edit(path=TESTS, content=OWN_TESTS.replace("90", "91"))
    examples = Edit(path=EXAMPLES, content="def test_nothing():\n    pass\n")
    approval = Review(decision="approve", allow_test_edits=True)
    kept, held = screened(spec_mode, [fixed_test, examples], approval)
    assert kept.edits == [fixed_test]
    assert held == [EXAMPLES]
    apply(kept, spec_mode.workspace.root)
    commit = spec_mode.workspace.commit("the person's approval")
    assert commit is not None
    spec_mode.committed(2, commit)
    latched = [e for e in recorder.events if isinstance(e, TestsLatched) and e.n == 2]
    assert [(list(e.files), e.reason) for e in latched] == [
        ([TESTS], f"changed with the person's approval at the gate: {TESTS}")
    ]
    now = spec_mode.workspace.pins.files[TESTS]
    assert now == latched[0].files[TESTS]


def test_a_test_import_the_module_lacks_is_a_reference_error_packet(
    mode: tuple[SpecMode, Recorder],
) -> None:
    spec_mode, recorder = mode
    spec_mode.start()
    committed_draft(spec_mode, tests=OWN_TESTS.replace("parse_duration\n", "parse_duration, fmt\n"))
    refused = spec_mode.check_before_verify(1)
    assert refused is not None
    assert refused.judgement.classification.error_class.value == "reference_error"
    assert refused.judgement.signature.startswith("reference_error:")
    text = rendered(refused).packet_text  # the loop renders it with the next packet's notes
    assert "REFERENCE ERROR: tests/test_durations.py (tests/test_durations.py:1)" in text
    assert (
        "imports fmt from durations, but durations.py does not define it (it defines "
        "parse_duration)" in text
    )
    assert "The spec's signature: def parse_duration(text: str) -> int" in text
    assert recorder.events[-1].type == "ReferencesChecked"


def test_a_module_whose_function_differs_from_the_spec_is_a_reference_error(
    mode: tuple[SpecMode, Recorder],
) -> None:
    spec_mode, _ = mode
    spec_mode.start()
    committed_draft(spec_mode, code="def parse_duration(text, unit='s'):\n    return 0\n")
    refused = spec_mode.check_before_verify(1)
    assert refused is not None
    assert refused.judgement.reasons == [
        "durations.py: durations.py defines parse_duration(text, unit='s'), but the spec's "
        "signature is parse_duration(text: str) -> int"
    ]


def test_a_module_that_does_not_parse_is_left_to_pytest(mode: tuple[SpecMode, Recorder]) -> None:
    spec_mode, _ = mode
    spec_mode.start()
    committed_draft(spec_mode, code="def parse_duration(text: str) -> int\n    return 0\n")
    assert spec_mode.check_before_verify(1) is None


def test_a_resumed_run_gets_its_frozen_files_back(mode: tuple[SpecMode, Recorder]) -> None:
    spec_mode, recorder = mode
    spec_mode.start()
    committed_draft(spec_mode)
    frozen = dict(spec_mode.workspace.pins.files)
    spec_mode.workspace.pins = spec_mode.baseline_pins  # as a reopened workspace has them
    spec_mode.latched = False
    events = [e for e in recorder.events if isinstance(e, TestsLatched)]
    spec_mode.restore(events)
    assert spec_mode.latched
    assert spec_mode.workspace.pins.files == frozen


def test_a_spec_run_can_be_resumed_before_any_verification(
    mode: tuple[SpecMode, Recorder],
) -> None:
    spec_mode, recorder = mode
    started = RunStarted(task="t", project="p", model="m", sandbox="s", max_iterations=4)
    spec_mode.start()
    state = resume_state([started, *recorder.events])
    assert state.next_n == 1
    assert state.baseline_collected is None


def test_a_small_models_draft_prompt_shows_the_files_to_complete_and_no_code(
    mode: tuple[SpecMode, Recorder],
) -> None:
    spec_mode, _ = mode
    spec_mode.config = spec_mode.config.model_copy(update={"edit_format": "whole"})
    system, user = spec_mode.draft_messages(["a note"])
    assert system.content.startswith("You write a new Python module and its pytest tests")
    assert user.content.endswith(
        "durations.py\n```python\ndef parse_duration(text: str) -> int:\n"
        "    \"\"\"Parse a duration such as '45s', '5m', '2h' or '1h30m' into a whole number "
        'of seconds."""\n    raise NotImplementedError\n```\n\n'
        "tests/test_durations.py\n```python\nimport pytest\n\n"
        "from durations import parse_duration\n\n\n"
        "def test_constraint_1():\n"
        '    """raises ValueError for an unknown unit, such as \'5x\'"""\n\n\n'
        "def test_constraint_2():\n"
        '    """raises ValueError for a number without a unit, such as \'10\'"""\n\n\n'
        "def test_constraint_3():\n"
        '    """the parts add up: \'1m30s\' is 90"""\n```\n\na note'
    )


def test_the_skeletons_copied_as_they_are_are_refused(mode: tuple[SpecMode, Recorder]) -> None:
    spec_mode, _ = mode
    copied = proposal(
        Edit(path=MODULE, content="def parse_duration(text: str) -> int:\n    raise X\n"),
        Edit(
            path=TESTS,
            content='def test_constraint_1():\n    """doc"""\n\n\ndef test_constraint_2():\n'
            "    assert True\n",
        ),
    )
    with pytest.raises(EditFormatError) as refused:
        spec_mode.check_draft(copied)
    assert refused.value.problems == [f"{TESTS}: test_constraint_1 checks nothing: write its check"]


def test_repair_prompts_never_show_the_examples_and_small_models_no_frozen_test(
    mode: tuple[SpecMode, Recorder],
) -> None:
    spec_mode, _ = mode
    spec_mode.start()
    committed_draft(spec_mode)
    paths = [MODULE, TESTS, EXAMPLES, "README.md"]
    assert spec_mode.shown(paths) == [MODULE, TESTS, "README.md"]  # json: hosted models
    spec_mode.config = spec_mode.config.model_copy(update={"edit_format": "whole"})
    assert spec_mode.shown(paths) == [MODULE, "README.md"]
