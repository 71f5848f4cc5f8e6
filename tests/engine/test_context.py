"""Prompts on a large project: a real project with a 3,000-line module, verified for real in
gVisor, whose bug sits deep inside a long function. The prompt fits the embedded model's
window, shows the traced function whole, and an answer to the excerpt applies."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from engine.edits.apply import apply
from engine.edits.parse import parse
from engine.errors import EditFormatError
from engine.feedback.checkout import verify_checkout
from engine.feedback.context import (
    message_tokens,
    prompt_budget,
    scope_excerpt,
)
from engine.feedback.context import repair_prompt as context_prompt
from engine.feedback.excerpt_answers import answer_for_excerpts
from engine.feedback.tree import Verification
from engine.model.local import EMBEDDED_MODEL
from engine.project.settings import load_settings
from engine.project.strategy import Strategy
from engine.run.answers import repair_prompt
from tests.projects import committed_copy

TASK = "Make the failing tests pass."
FILLERS = 142  # functions of 20 lines around the buggy one: a module of ~3,000 lines


def filler(n: int) -> str:
    body = "".join(f"    total += {k} * value  # step {k}\n" for k in range(16))
    return f"def helper_{n}(value):\n    total = 0\n{body}    return total + {n}\n\n\n"


# The bug is on the long function's 40th line: a fixed window around the failing line misses
# the `def` line, the whole function does not.
TRACED = (
    "def weighted_total(values, weights):\n"
    '    """The sum of each value times its weight."""\n'
    + "".join(f"    checked_{k} = len(values) + {k}  # bookkeeping {k}\n" for k in range(36))
    + "    total = 0\n"
    "    for value, weight in zip(_present(values), weights):\n"
    "        total += value - weight\n"
    "    return total\n"
)
# A function the traced one calls, a thousand lines before it: shown whole too.
CALLED = (
    "def _present(values):\n"
    '    """The values that are there."""\n'
    "    return [value for value in values if value is not None]\n"
)
FIXED_TRACED = TRACED.replace("total += value - weight", "total += value * weight")
TESTS = (
    "from bigpkg import tables, units\nfrom bigpkg.core import weighted_total\n\n\n"
    + "".join(
        f"def test_ok_{k}():\n    assert weighted_total([{k}], [1]) is not None\n\n\n"
        for k in range(60)
    )
    + "def test_weighted_total():\n    assert weighted_total([1, 2], [3, 4]) == 11\n"
)


def big_module() -> str:
    head = "".join(filler(n) for n in range(FILLERS // 2))
    head = head.replace("def helper_20(", CALLED + "\n\ndef helper_20(")
    tail = "".join(filler(n) for n in range(FILLERS // 2, FILLERS))
    return '"""A large module."""\n\n\n' + head + TRACED + "\n\n" + tail


def large_project(top: Path) -> Path:
    """The project, committed under `top`: the large module, two mid-size ones its tests
    import (each under the size shown whole, together more than the embedded model's
    window), one they do not, and the tests."""
    source = top / "source" / "largeproject"
    (source / "bigpkg").mkdir(parents=True)
    (source / "tests").mkdir()
    (source / "bigpkg" / "__init__.py").write_text("")
    (source / "bigpkg" / "core.py").write_text(big_module())
    for name in ("units", "tables"):
        (source / "bigpkg" / f"{name}.py").write_text(
            "".join(filler(n).replace("helper_", f"{name}_") for n in range(15))
        )
    (source / "bigpkg" / "extra.py").write_text(
        "def unit_weight(name: str) -> float:\n    return 1.0\n\n\n"
        "class Scale:\n    def weigh(self, thing, *, exact=False):\n        return 0\n"
    )
    (source / "tests" / "test_core.py").write_text(TESTS)
    (source / "pyproject.toml").write_text('[project]\nname = "largeproject"\nversion = "0"\n')
    (top / "project").mkdir()
    return committed_copy(source, top / "project")


@pytest.fixture(scope="module")
def large(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Verification]:
    root = large_project(tmp_path_factory.mktemp("large"))
    settings = load_settings(root, {"sandbox": "gvisor"})
    return root, asyncio.run(verify_checkout(root, settings))


def prompt_text(root: Path, current: Verification, context: str) -> tuple[str, int, list[str]]:
    budget = prompt_budget(EMBEDDED_MODEL)
    prompt = repair_prompt(
        root, current, [], TASK, [], "whole", strategy=Strategy(context=context), window=budget
    )
    return prompt.messages[1].content, message_tokens(prompt.messages), prompt.excerpts


def test_the_module_is_large_and_the_traced_line_is_deep_in_its_function() -> None:
    text = big_module()
    assert len(text.splitlines()) >= 3000
    start = text.splitlines().index("def weighted_total(values, weights):") + 1
    bug = text.splitlines().index("        total += value - weight") + 1
    assert bug - start > 25  # past today's fixed radius
    assert start - text.splitlines().index("def _present(values):") > 500


@pytest.mark.sandbox
@pytest.mark.usefixtures("needs_gvisor")
@pytest.mark.parametrize("context", ["files", "traces", "map"])
def test_a_prompt_on_a_3000_line_module_fits_the_embedded_models_window(
    large: tuple[Path, Verification], context: str
) -> None:
    root, current = large
    assert current.packet is not None
    assert current.packet.failures
    _, tokens, _ = prompt_text(root, current, context)
    assert tokens <= 4096 - 1024


@pytest.mark.sandbox
@pytest.mark.usefixtures("needs_gvisor")
@pytest.mark.parametrize("context", ["traces", "map"])
def test_the_traced_function_and_what_it_calls_are_shown_whole(
    large: tuple[Path, Verification], context: str
) -> None:
    root, current = large
    text, _, excerpts = prompt_text(root, current, context)
    assert "bigpkg/core.py" in excerpts
    shown = {re.sub(r"^\s*\d+  ", "", line) for line in text.splitlines()}
    assert set(TRACED.splitlines()) <= shown
    assert set(CALLED.splitlines()) <= shown


@pytest.mark.sandbox
@pytest.mark.usefixtures("needs_gvisor")
def test_the_repo_map_names_the_other_modules_definitions(
    large: tuple[Path, Verification],
) -> None:
    root, current = large
    text, _, _ = prompt_text(root, current, "map")
    assert "bigpkg/extra.py:" in text
    assert "def weigh(self, thing, *, exact=False)" in text


@pytest.mark.sandbox
@pytest.mark.usefixtures("needs_gvisor")
def test_a_whole_format_answer_with_only_the_fixed_function_applies_to_the_excerpted_module(
    large: tuple[Path, Verification], tmp_path: Path
) -> None:
    root, current = large
    _, _, excerpts = prompt_text(root, current, "traces")
    answer = f"Multiply, not subtract.\n\nbigpkg/core.py\n```python\n{FIXED_TRACED}```\n"
    proposal = answer_for_excerpts(parse(answer, "whole"), root, excerpts)
    work = committed_copy(root, tmp_path)
    apply(proposal, work)
    after = (work / "bigpkg" / "core.py").read_text()
    assert after == big_module().replace(TRACED, FIXED_TRACED)


def test_a_search_copied_with_the_excerpts_line_numbers_applies(tmp_path: Path) -> None:
    (tmp_path / "core.py").write_text(big_module())
    lines = big_module().splitlines()
    bug = lines.index("        total += value - weight") + 1
    excerpt = scope_excerpt(big_module(), [bug])
    quoted = next(line for line in excerpt.splitlines() if "value - weight" in line)
    answer = (
        '{"explanation": "x", "edits": [{"path": "core.py", "search": "'
        + quoted
        + '", "replace": "'
        + quoted.replace("-", "*")
        + '"}]}'
    )
    proposal = answer_for_excerpts(parse(answer, "json"), tmp_path, ["core.py"])
    apply(proposal, tmp_path)
    assert (tmp_path / "core.py").read_text() == big_module().replace(TRACED, FIXED_TRACED)


def test_a_whole_file_answer_from_an_excerpt_never_deletes_what_the_model_did_not_see(
    tmp_path: Path,
) -> None:
    (tmp_path / "core.py").write_text(big_module())
    answer = f"fixed\n\ncore.py\n```python\nimport os\n\n\n{FIXED_TRACED}```\n"
    with pytest.raises(EditFormatError, match="shown in excerpts"):
        answer_for_excerpts(parse(answer, "whole"), tmp_path, ["core.py"])
    assert (tmp_path / "core.py").read_text() == big_module()


def test_a_method_sent_inside_its_class_keeps_the_classs_other_methods(tmp_path: Path) -> None:
    source = (
        "class Box:\n"
        "    def one(self):\n        return 1\n\n"
        "    def two(self):\n        return 3\n\n"
        "    def three(self):\n        return 3\n"
    )
    (tmp_path / "box.py").write_text(source)
    answer = "fix two\n\nbox.py\n```python\nclass Box:\n    def two(self):\n        return 2\n```\n"
    proposal = answer_for_excerpts(parse(answer, "whole"), tmp_path, ["box.py"])
    apply(proposal, tmp_path)
    assert (tmp_path / "box.py").read_text() == source.replace("return 3\n\n", "return 2\n\n", 1)


def test_a_prompt_whose_failure_report_alone_overflows_the_window_is_cut_to_it(
    tmp_path: Path,
) -> None:
    (tmp_path / "core.py").write_text(big_module())
    told = "FAILED tests/test_core.py::test_weighted_total\n" + "captured output line\n" * 2000
    prompt = context_prompt(
        tmp_path, None, told, ["core.py"], TASK, [], "whole", Strategy(context="traces"), 3072
    )
    assert message_tokens(prompt.messages) <= 3072
    assert "FAILED tests/test_core.py::test_weighted_total" in prompt.messages[1].content


def test_an_excerpt_sent_back_with_its_numbers_and_gaps_is_read_as_its_functions(
    tmp_path: Path,
) -> None:
    (tmp_path / "core.py").write_text(big_module())
    lines = big_module().splitlines()
    wanted = [lines.index("def _present(values):") + 1, lines.index(TRACED.splitlines()[0]) + 1]
    excerpt = scope_excerpt(big_module(), wanted).replace("value - weight", "value * weight")
    answer = f"fixed\n\ncore.py\n```python\n{excerpt}\n```\n"
    proposal = answer_for_excerpts(parse(answer, "whole"), tmp_path, ["core.py"])
    apply(proposal, tmp_path)
    assert (tmp_path / "core.py").read_text() == big_module().replace(TRACED, FIXED_TRACED)
