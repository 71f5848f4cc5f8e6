"""Bench suites, seeded selection and mutants: pure functions over real task data."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from bench.errors import SuiteError
from bench.suite.mutants import OPERATORS, mutants_of, reference_program, seeded_mutants
from bench.suite.selection import natural_key, select
from bench.suite.tasks import BenchTask, load_suite


def task(solution: str, prompt: str = "def f(a, b):\n", task_id: str = "t/f") -> BenchTask:
    return BenchTask(
        task_id=task_id,
        prompt=prompt,
        entry_point="f",
        canonical_solution=solution,
        test="def check(candidate):\n    assert candidate(1, 2) == 3\n",
    )


def write_suite(directory: Path, tasks: list[dict[str, str]], name: str = "tasks.jsonl") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / name).write_text("".join(json.dumps(t) + "\n" for t in tasks))
    return directory


def raw_task(task_id: str) -> dict[str, str]:
    return {
        "task_id": task_id,
        "prompt": "def f(x):\n",
        "entry_point": "f",
        "test": "def check(candidate):\n    assert candidate(1) == 1\n",
        "canonical_solution": "    return x\n",
    }


# --- suites ----------------------------------------------------------------------------------


def test_humaneval_loads_all_164_tasks_from_the_installed_package() -> None:
    tasks = load_suite("humaneval")
    assert len(tasks) == 164
    assert tasks[2].task_id == "HumanEval/2"
    assert tasks[2].entry_point == "truncate_number"
    assert "def check(candidate)" in tasks[2].test


def test_examples_suite_is_the_bundled_textstats_tasks() -> None:
    ids = [t.task_id for t in load_suite("examples")]
    assert ids == ["textstats/word_count", "textstats/mean_word_length", "textstats/top_words"]


def test_a_directory_suite_reads_jsonl_and_gzipped_jsonl(tmp_path: Path) -> None:
    write_suite(tmp_path, [raw_task("a/1")])
    # files are read in name order
    (tmp_path / "zz.jsonl.gz").write_bytes(gzip.compress(json.dumps(raw_task("b/2")).encode()))
    assert [t.task_id for t in load_suite(str(tmp_path))] == ["a/1", "b/2"]


def test_unknown_suite_names_the_choices() -> None:
    with pytest.raises(SuiteError, match="unknown suite 'nope': use humaneval, examples, or a"):
        load_suite("nope")


def test_directory_without_task_files_is_refused(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("no tasks here")
    with pytest.raises(SuiteError, match=r"holds no task files \(\*\.jsonl or \*\.jsonl\.gz\)"):
        load_suite(str(tmp_path))


def test_a_bad_task_line_is_named_by_file_and_line(tmp_path: Path) -> None:
    write_suite(tmp_path, [raw_task("a/1")])
    with (tmp_path / "tasks.jsonl").open("a") as f:
        f.write('{"task_id": "a/2", "prompt": "x"}\n')
    with pytest.raises(SuiteError, match=r"tasks\.jsonl:2: entry_point: Field required"):
        load_suite(str(tmp_path))


def test_duplicate_task_ids_are_refused(tmp_path: Path) -> None:
    write_suite(tmp_path, [raw_task("a/1"), raw_task("a/1")])
    with pytest.raises(SuiteError, match="task id 'a/1' appears twice"):
        load_suite(str(tmp_path))


# --- selection -------------------------------------------------------------------------------


def test_the_same_seed_selects_the_same_tasks_whatever_the_input_order() -> None:
    tasks = load_suite("humaneval")
    forward = [t.task_id for t in select(tasks, 20, seed=0)]
    backward = [t.task_id for t in select(list(reversed(tasks)), 20, seed=0)]
    assert forward == backward
    assert len(set(forward)) == 20
    # Pinned: a change to the selection would silently change every published number.
    assert forward[:5] == [
        "HumanEval/2",
        "HumanEval/6",
        "HumanEval/32",
        "HumanEval/35",
        "HumanEval/47",
    ]


def test_another_seed_selects_other_tasks() -> None:
    tasks = load_suite("humaneval")
    assert {t.task_id for t in select(tasks, 20, 0)} != {t.task_id for t in select(tasks, 20, 1)}


def test_a_larger_limit_keeps_the_smaller_selection() -> None:
    tasks = load_suite("humaneval")
    small = {t.task_id for t in select(tasks, 10, 7)}
    large = {t.task_id for t in select(tasks, 11, 7)}
    assert small < large


def test_selected_tasks_are_listed_in_natural_order() -> None:
    ids = ["t/10", "t/2", "t/1"]
    assert sorted(ids, key=natural_key) == ["t/1", "t/2", "t/10"]
    tasks = [BenchTask.model_validate(raw_task(i)) for i in ids]
    assert [t.task_id for t in select(tasks, None, 3)] == ["t/1", "t/2", "t/10"]


# --- mutants ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("solution", "operator", "before", "after"),
    [
        ("    return a + b\n", "arith", "+", "-"),
        ("    return a // b\n", "arith", "//", "/"),
        ("    return a < b\n", "boundary", "<", "<="),
        ("    return a >= b\n", "flip", ">=", "<="),
        ("    return a == b\n", "negate", "==", "!="),
        ("    return a not in b\n", "negate", "not in", "in"),
        ("    return a and b\n", "bool", "and", "or"),
        ("    return a[1]\n", "const+1", "1", "2"),
        ("    return a[1]\n", "const-1", "1", "0"),
        ("    return list(range(len(a)))\n", "range+1", "len(a)", "len(a) + 1"),
        ("    return list(range(1, a + b))\n", "range-1", "a + b", "(a + b) - 1"),
    ],
)
def test_each_operator_changes_one_token_of_the_solution(
    solution: str, operator: str, before: str, after: str
) -> None:
    found = [m for m in mutants_of(task(solution)) if m.operator == operator]
    assert [(m.before, m.after) for m in found] == [(before, after)]
    mutated = found[0].program
    assert mutated == "def f(a, b):\n" + solution.replace(before, after, 1)
    assert found[0].line == 2


def test_every_operator_is_exercised_on_humaneval() -> None:
    seen = {m.operator for t in load_suite("humaneval")[:40] for m in mutants_of(t)}
    assert seen == set(OPERATORS)


def test_the_prompt_is_never_mutated() -> None:
    prompt = "def helper(x):\n    return x + 1\n\n\ndef f(a, b):\n"
    found = mutants_of(task("    return helper(a) * b\n", prompt=prompt))
    assert [(m.operator, m.before, m.after) for m in found] == [("arith", "*", "/")]
    assert all(m.program.startswith(prompt) for m in found)


def test_comments_and_strings_survive_a_mutation() -> None:
    solution = "    # a + b would be wrong here\n    return a - b  # minus, see 'a + b'\n"
    [mutant] = mutants_of(task(solution))
    assert mutant.program == "def f(a, b):\n" + solution.replace("a - b ", "a + b ", 1)


def test_mutants_are_the_same_every_time_and_ordered_by_the_seed() -> None:
    humaneval = load_suite("humaneval")
    subject = next(t for t in humaneval if t.task_id == "HumanEval/0")
    assert mutants_of(subject) == mutants_of(subject)
    assert [m.id for m in seeded_mutants(subject, 0)] == [m.id for m in seeded_mutants(subject, 0)]
    assert [m.id for m in seeded_mutants(subject, 0)] != [m.id for m in seeded_mutants(subject, 1)]
    assert {m.id for m in seeded_mutants(subject, 0)} == {m.id for m in mutants_of(subject)}


def test_every_humaneval_mutant_parses_and_differs_from_the_reference() -> None:
    import ast

    for subject in load_suite("humaneval"):
        reference = ast.dump(ast.parse(reference_program(subject)))
        for mutant in mutants_of(subject):
            assert ast.dump(ast.parse(mutant.program)) != reference, mutant.id
