"""The small prompt profile on real projects: the code first, then the failure, then what to
send back; no test file, no function shown twice. Packets come from real runs: the captured
sandbox output of tests/fixtures/projects, and the bundled example verified in gVisor."""

from __future__ import annotations

import asyncio
import json
from functools import cache
from pathlib import Path

import pytest

from engine.edits.parse import parse
from engine.edits.proposal import EditFormat
from engine.errors import EditFormatError
from engine.feedback.checkout import verify_checkout
from engine.feedback.distill import distill
from engine.feedback.packet import Failure, RepairPacket
from engine.feedback.raw import raw_feedback
from engine.feedback.small_prompt import SYSTEM, TEST_LINES, small_prompt
from engine.feedback.tree import Verification
from engine.project.modules import project_modules
from engine.project.settings import load_settings
from engine.project.strategy import Strategy
from engine.run.answers import repair_prompt
from engine.text.tokens import approximate_tokens
from engine.verify.classify import classify
from engine.verify.execute import parse_stage
from engine.verify.results import StageResult
from engine.verify.stages import Stage
from sandbox import ExecResult
from tests.projects import EXAMPLES, PROJECTS, committed_copy

CAPTURED = PROJECTS.parent / "captured"
TASK = "Make the failing tests pass."
WHOLE_REPLY = "alone on the first line, then a python code block holding the whole corrected file."


@cache
def captured(case: str) -> tuple[StageResult, RepairPacket]:
    """The real pytest run over tests/fixtures/projects/<case>, parsed and distilled."""
    data = json.loads((CAPTURED / f"{case}.json").read_text())
    stage = parse_stage(
        Stage.model_validate(data["stage"]),
        ExecResult.model_validate(data["result"]),
        data["nonce"],
    )
    classification = classify([stage], project_modules=project_modules(PROJECTS / case))
    return stage, distill([stage], classification)


def told_small(case: str, *, raw: bool = False, edit_format: EditFormat = "whole") -> str:
    stage, packet = captured(case)
    told = raw_feedback([stage], 2000, approximate_tokens) if raw else packet.render()
    prompt = small_prompt(
        PROJECTS / case,
        packet,
        told,
        TASK,
        [],
        edit_format,
        strategy=Strategy(feedback="raw" if raw else "packet"),
    )
    messages = prompt.messages
    assert [m.role for m in messages] == ["system", "user"]
    assert messages[0].content == SYSTEM
    return messages[1].content


def in_order(text: str, *needles: str) -> bool:
    places = [text.find(needle) for needle in needles]
    return -1 not in places and places == sorted(places)


def test_the_code_comes_first_then_the_failure_then_what_to_send_back() -> None:
    told = told_small("assertion_failure")
    assert told.startswith('stats/__init__.py\n```python\n"""Small statistics helpers."""')
    assert in_order(told, "return sum(values) // len(values)", "FAILED: tests/test_stats.py::")
    assert told.endswith(f"Reply with stats/__init__.py {WHOLE_REPLY}")


def test_no_test_file_and_no_test_lines_when_the_failing_assertion_is_quoted() -> None:
    told = told_small("assertion_failure")
    assert "failing line: assert mean([1, 2, 3, 4]) == 2.5" in told
    assert "tests/test_stats.py\n```" not in told
    assert "def test_mean_of_one_value" not in told
    assert "The failing test" not in told


def test_a_line_that_raised_brings_the_failing_tests_own_lines_only() -> None:
    told = told_small("exception_in_code")
    test_lines = (
        "The failing test, tests/test_orders.py line 8 (read only):\n```python\n"
        "def test_summary_of_empty_order():\n    summary = summarize([])\n"
        '    assert summary == {"total": 0, "average": 0.0}\n```'
    )
    assert test_lines in told
    assert "def test_summary_of_two_prices" not in told  # the rest of the test file
    assert in_order(told, "orders/__init__.py\n```python", test_lines, "ZeroDivisionError")


def test_raw_feedback_keeps_the_small_shape_and_adds_no_distilled_pointer() -> None:
    told = told_small("exception_in_code", raw=True)
    assert told.startswith("orders/__init__.py\n```python")
    assert "Verification failed" not in told
    assert in_order(told, "$ python -m pytest -q  (exit 1)", "Please fix it.", "Reply with")
    assert "The failing line calls" not in told


def test_the_json_format_ends_with_its_shape_naming_the_real_file() -> None:
    told = told_small("arity_error", edit_format="json")
    last = told.rsplit("\n\n", 1)[1]
    assert last.startswith("Answer with one JSON object")
    assert last.endswith("Write newlines inside strings as \\n.")
    assert '{"path": "receipts/__init__.py", "search":' in told


def test_an_answer_in_the_shape_asked_for_parses() -> None:
    told = told_small("arity_error")
    path = told.rsplit("Reply with ", 1)[1].split(" ", 1)[0]
    fixed = (PROJECTS / "arity_error" / path).read_text().replace("(name, amount)", "(amount)")
    proposal = parse(f"{path}\n```python\n{fixed}```", "whole")
    assert [(e.path, e.content) for e in proposal.edits] == [(path, fixed)]


LONE_BLOCK = "Here is the fix:\n```python\nX = 2\n```\n"


def test_a_lone_block_without_its_path_is_the_one_file_asked_for() -> None:
    proposal = parse(LONE_BLOCK, "whole", lone_block_path="calc/core.py")
    assert [(e.path, e.content) for e in proposal.edits] == [("calc/core.py", "X = 2\n")]
    assert proposal.explanation == "Here is the fix:"
    with pytest.raises(EditFormatError, match="without its file path"):
        parse(LONE_BLOCK, "whole")  # nothing asked for: the path is still required


def test_a_block_with_its_own_path_or_a_second_block_keeps_the_rules() -> None:
    named = parse("calc/other.py\n```python\nX = 2\n```\n", "whole", lone_block_path="a.py")
    assert [e.path for e in named.edits] == ["calc/other.py"]
    with pytest.raises(EditFormatError, match="without its file path"):
        parse(LONE_BLOCK + LONE_BLOCK, "whole", lone_block_path="calc/core.py")


def write_project(root: Path, code: str, test: str) -> None:
    (root / "calc").mkdir()
    (root / "tests").mkdir()
    (root / "calc" / "__init__.py").write_text(code)
    (root / "tests" / "test_calc.py").write_text(test)


def double_failing(*, values: bool = True) -> tuple[RepairPacket, Verification]:
    """`assert double(3) == 6` failing in tests/test_calc.py (with its values unless told
    not), as its packet and the `Verification` the loop's prompt is built from."""
    failing = Failure(
        test="tests/test_calc.py::test_double",
        file="tests/test_calc.py",
        line=4,
        assertion="assert double(3) == 6",
        expected="6" if values else None,
        actual="5" if values else None,
    )
    packet = RepairPacket(summary="1 of 1 tests failing", error_class="logic", failures=[failing])
    return packet, Verification.model_construct(packet=packet, packet_text=packet.render())


def test_a_long_failing_test_is_cut_to_its_lines_up_to_the_failing_one(tmp_path: Path) -> None:
    setup = "".join(f"        value_{i} = {i}\n" for i in range(30))
    test = (
        "from calc import double\n\n\nclass TestDouble:\n    def test_many(self):\n"
        f"{setup}        result = double(value_29)\n        assert result == 58\n"
        "        assert value_0 == 0\n"
    )
    write_project(tmp_path, "def double(x):\n    return x + 2\n", test)
    failing = Failure(
        test="tests/test_calc.py::TestDouble::test_many",
        file="tests/test_calc.py",
        line=36,
        exception="TypeError: boom",
    )
    packet = RepairPacket(summary="1 of 1 tests failing", error_class="logic", failures=[failing])
    told = small_prompt(tmp_path, packet, packet.render(), TASK, [], "whole").messages[1].content
    block = told.split("The failing test, ")[1].split("```python\n")[1].split("\n```")[0]
    lines = block.splitlines()
    assert len(lines) == TEST_LINES
    assert lines[-3:] == [
        "        result = double(value_29)",
        "        assert result == 58",
        "        assert value_0 == 0",
    ]
    assert "tests/test_calc.py line 27" in told


def test_a_definition_is_repeated_only_where_its_file_was_cut_to_excerpts(tmp_path: Path) -> None:
    # Over both profiles' limit for a whole file (12,000 characters): cut to excerpts.
    filler = "".join(f"CONSTANT_{i} = {i}  # {'x' * 60}\n" for i in range(200))
    write_project(tmp_path, f"{filler}\n\ndef double(x):\n    return x + 2\n", "")
    packet, current = double_failing()
    named = ["calc/__init__.py"]
    text = small_prompt(tmp_path, packet, packet.render(), TASK, named, "whole").messages[1].content
    assert "calc/__init__.py  (excerpt; line numbers on the left)" in text
    assert "The failing line calls double, defined at calc/__init__.py:203" in text
    small = tmp_path / "small"
    small.mkdir()
    write_project(small, "def double(x):\n    return x + 2\n", "")
    text = small_prompt(small, packet, packet.render(), TASK, named, "whole").messages[1].content
    assert "The failing line calls" not in text
    assert text.count("def double(x):") == 1
    # The full prompt without `repeat_called` keeps the same rule.
    for root, repeated in ((tmp_path, True), (small, False)):
        full = repair_prompt(
            root, current, [], TASK, named, "whole", strategy=Strategy(repeat_called=False)
        ).messages
        assert ("The failing line calls double" in full[1].content) is repeated
        again = repair_prompt(root, current, [], TASK, named, "whole").messages
        assert "The failing line calls double" in again[1].content  # today's prompt


DOCUMENTED_DOUBLE = (
    "def double(x):\n"
    '    """Double x.\n\n'
    + "".join(f"    double({i}) == {2 * i}\n" for i in range(16))
    + '    """\n'
    "    twice = x + 2\n"
    "    return twice\n"
)


def test_with_called_code_the_repeated_function_is_its_code_without_its_docstring(
    tmp_path: Path,
) -> None:
    write_project(tmp_path, DOCUMENTED_DOUBLE, "")
    _, current = double_failing()
    named = ["calc/__init__.py"]

    def repeated(*, called_code: bool = False) -> str:
        told = repair_prompt(
            tmp_path, current, [], TASK, named, "whole", strategy=Strategy(called_code=called_code)
        ).messages
        return told[1].content.split("The failing line calls double, ")[1]

    # Today: the 15 lines hold the docstring, and the bug is past the cut.
    assert "twice = x + 2" not in repeated()
    code = repeated(called_code=True)
    assert code.startswith(
        "defined at calc/__init__.py:1 (its docstring left out):\n```python\n"
        "def double(x):\n    twice = x + 2\n    return twice\n```"
    )
    assert "Double x." not in code
    # The whole file, docstring and all, is still shown once above it.
    whole = repair_prompt(
        tmp_path, current, [], TASK, named, "whole", strategy=Strategy(called_code=True)
    ).messages
    assert whole[1].content.count('"""Double x.') == 1


def test_a_function_that_is_only_its_docstring_is_shown_as_it_is(tmp_path: Path) -> None:
    write_project(tmp_path, 'def double(x):\n    """Double x."""\n', "")
    _, current = double_failing(values=False)
    told = repair_prompt(
        tmp_path,
        current,
        [],
        TASK,
        ["calc/__init__.py"],
        "whole",
        strategy=Strategy(called_code=True),
    ).messages
    assert (
        'defined at calc/__init__.py:1:\n```python\ndef double(x):\n    """Double x."""\n```'
        in told[1].content
    )


def test_a_task_of_the_persons_own_is_said_before_the_reply_line() -> None:
    packet = captured("assertion_failure")[1]
    task = "The function in stats/__init__.py has a bug."
    prompt = small_prompt(PROJECTS / "assertion_failure", packet, "", task, [], "whole")
    assert prompt.messages[1].content.endswith(
        f"Task: {task}\n\nReply with stats/__init__.py {WHOLE_REPLY}"
    )


@pytest.fixture(scope="module")
def textstats(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Verification]:
    """The bundled example verified for real in gVisor: two tests fail on assertions."""
    root = committed_copy(EXAMPLES / "textstats", tmp_path_factory.mktemp("example"))
    settings = load_settings(root, {"sandbox": "gvisor"})
    return root, asyncio.run(verify_checkout(root, settings))


@pytest.mark.sandbox
@pytest.mark.usefixtures("needs_gvisor")
def test_the_example_shows_its_code_once_and_not_its_test_file(
    textstats: tuple[Path, Verification],
) -> None:
    root, current = textstats
    full = repair_prompt(root, current, [], TASK, [], "whole").messages[1].content
    prompt = small_prompt(root, current.packet, current.packet_text, TASK, [], "whole")
    small = prompt.messages[1].content
    # Today's prompt: the test file, the re-exporting __init__, the failing function twice.
    assert "def test_word_count_empty" in full
    assert full.count("def mean_word_length") == 2
    # The small one: the module under repair first, the packet, the reply line; nothing twice.
    assert small.startswith("textstats/core.py\n```python\nimport re")
    assert "def test_word_count_empty" not in small
    assert "textstats/__init__.py" not in small
    assert small.count("def mean_word_length") == 1
    assert "The failing line calls" not in small
    assert in_order(small, "return counts.most_common(n - 1)", "Verification failed", "Reply")
    assert small.endswith(f"Reply with textstats/core.py {WHOLE_REPLY}")
    assert approximate_tokens(small) < approximate_tokens(full) * 0.6
    assert prompt.reply_paths == ["textstats/core.py"]
