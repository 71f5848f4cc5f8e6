"""The plugin's runtime values: the first failure's locals in its deepest project frame,
captured inside a real pytest session (run on the host the way the verifier runs it)."""

from __future__ import annotations

import json
from pathlib import Path

from engine.verify.results import RuntimeValues
from tests.engine.test_pytest_plugin import Session, run_pytest, write_project

BITS = (
    'WORDS = ("none", "one", "two", "three")\n'
    "\n"
    "\n"
    "def bitcount_word(n):\n"
    '    count = bin(n).count("1")\n'
    "    return WORDS[count]\n"
)


def runtime_of(session: Session, name: str) -> RuntimeValues:
    runtime = session.test(name).runtime
    assert runtime is not None, f"no runtime values; report: {session.report_line}"
    return runtime


def values(runtime: RuntimeValues) -> dict[str, str]:
    return {value.name: value.value for value in runtime.values}


def test_the_locals_of_the_failing_line_in_the_code_under_test(tmp_path: Path) -> None:
    project = write_project(
        tmp_path,
        {
            "src/__init__.py": "",
            "src/bits.py": BITS,
            "tests/test_bits.py": (
                "from src.bits import bitcount_word\n"
                "\n"
                "\n"
                "def test_word_of_127():\n"
                "    n = 127\n"
                '    assert bitcount_word(n) == "seven"\n'
            ),
        },
    )
    session = run_pytest(project)
    runtime = runtime_of(session, "test_word_of_127")
    assert (runtime.frame.file, runtime.frame.line) == ("src/bits.py", 6)
    assert runtime.frame.function == "bitcount_word"
    assert [(v.name, v.value) for v in runtime.values] == [("n", "127"), ("count", "7")]
    assert runtime.omitted == 0
    assert session.report.internal_error is None


def test_an_assert_in_the_test_takes_the_test_frame_without_its_imports(tmp_path: Path) -> None:
    project = write_project(
        tmp_path,
        {
            "src/__init__.py": "",
            "src/bits.py": "def bitcount(n):\n    return bin(n)[:5].count('1')\n",
            "tests/test_bits.py": (
                "import os\n"
                "\n"
                "from src.bits import bitcount\n"
                "\n"
                "\n"
                "class Expected:\n"
                "    pass\n"
                "\n"
                "\n"
                "def test_bitcount_of_127(capsys):\n"
                "    helper, module, kind = bitcount, os, Expected\n"
                "    n = 127\n"
                "    count = helper(n)\n"
                "    assert count == 7\n"
            ),
        },
    )
    runtime = runtime_of(run_pytest(project), "test_bitcount_of_127")
    assert (runtime.frame.file, runtime.frame.function) == (
        "tests/test_bits.py",
        "test_bitcount_of_127",
    )
    assert runtime.frame.line == 14
    # No functions, modules, classes, pytest fixtures or `@py_assert` temporaries.
    assert values(runtime) == {"n": "127", "count": "3"}


def test_code_is_not_state_and_addresses_are_left_out(tmp_path: Path) -> None:
    project = write_project(
        tmp_path,
        {
            "src/__init__.py": "",
            "src/primes.py": (
                "import random\n"
                "\n"
                "\n"
                "def largest_prime(numbers):\n"
                "    def is_prime(n):\n"
                "        return n > 1 and all(n % d for d in range(2, n))\n"
                "\n"
                "    rng = random.Random(0)\n"
                "    return max(n for n in numbers if is_prime(n))\n"
            ),
            "tests/test_primes.py": (
                "from src.primes import largest_prime\n"
                "\n"
                "\n"
                "def test_no_primes():\n"
                "    assert largest_prime([4, 6]) is None\n"
            ),
        },
    )
    runtime = runtime_of(run_pytest(project), "test_no_primes")
    assert runtime.frame.function == "largest_prime"
    assert values(runtime) == {"numbers": "[4, 6]", "rng": "<random.Random object>"}


def test_a_failing_repr_says_so_and_the_session_goes_on(tmp_path: Path) -> None:
    project = write_project(
        tmp_path,
        {
            "src/__init__.py": "",
            "src/broken.py": (
                "class Broken:\n"
                "    def __repr__(self):\n"
                "        raise RuntimeError('no repr for you')\n"
                "\n"
                "\n"
                "def use(n):\n"
                "    thing = Broken()\n"
                "    return n / 0\n"
            ),
            "tests/test_broken.py": (
                "from src.broken import use\n\n\ndef test_use():\n    assert use(3) == 1\n"
            ),
        },
    )
    session = run_pytest(project)
    assert values(runtime_of(session, "test_use")) == {"n": "3", "thing": "<repr failed>"}
    assert session.report.internal_error is None
    assert session.report.counts.failed == 1


def test_at_most_eight_names_of_at_most_eighty_characters(tmp_path: Path) -> None:
    names = "".join(f"    v{i} = {i}\n" for i in range(10))
    project = write_project(
        tmp_path,
        {
            "src/__init__.py": "",
            "src/many.py": (
                "def many():\n"
                "    text = 'x' * 10_000\n"
                "    items = list(range(1_000_000))\n"
                "    huge = 10 ** 5000\n"
                f"{names}"
                "    raise ValueError('too many')\n"
            ),
            "tests/test_many.py": "from src.many import many\n\n\ndef test_many():\n    many()\n",
        },
    )
    runtime = runtime_of(run_pytest(project), "test_many")
    assert [value.name for value in runtime.values] == [
        "text", "items", "huge", "v0", "v1", "v2", "v3", "v4",
    ]  # fmt: skip
    assert runtime.omitted == 5
    shown = values(runtime)
    assert all(len(value) <= 80 for value in shown.values())
    assert shown["text"].startswith("'xxx")
    assert "..." in shown["text"]
    assert shown["items"].startswith("[0, 1, 2")
    assert "..." in shown["items"]
    assert shown["v0"] == "0"


def test_slow_reprs_stop_the_capture_within_its_time_budget(tmp_path: Path) -> None:
    project = write_project(
        tmp_path,
        {
            "src/__init__.py": "",
            "src/slow.py": (
                "import time\n"
                "\n"
                "\n"
                "class Slow:\n"
                "    def __repr__(self):\n"
                "        time.sleep(0.3)\n"
                "        return 'Slow()'\n"
                "\n"
                "\n"
                "def crawl():\n"
                "    a, b, c, d, e = Slow(), Slow(), Slow(), Slow(), Slow()\n"
                "    raise ValueError('late')\n"
            ),
            "tests/test_slow.py": (
                "from src.slow import crawl\n\n\ndef test_crawl():\n    crawl()\n"
            ),
        },
    )
    runtime = runtime_of(run_pytest(project), "test_crawl")
    assert 1 <= len(runtime.values) < 5
    assert runtime.omitted == 5 - len(runtime.values)


def test_only_the_first_real_failure_is_captured_never_a_pass_or_an_xfail(
    tmp_path: Path,
) -> None:
    project = write_project(
        tmp_path,
        {
            "src/__init__.py": "",
            "src/bits.py": BITS,
            "tests/test_bits.py": (
                "import pytest\n"
                "\n"
                "from src.bits import bitcount_word\n"
                "\n"
                "\n"
                "def test_passes_catching_a_failure():\n"
                "    with pytest.raises(IndexError):\n"
                "        bitcount_word(255)\n"
                "\n"
                "\n"
                "@pytest.mark.xfail(reason='known')\n"
                "def test_known_failure():\n"
                "    bitcount_word(63)\n"
                "\n"
                "\n"
                "def test_first_failure():\n"
                "    bitcount_word(127)\n"
                "\n"
                "\n"
                "def test_second_failure():\n"
                "    bitcount_word(31)\n"
            ),
        },
    )
    session = run_pytest(project)
    assert session.report.counts.passed == 1
    assert session.test("test_known_failure").outcome == "xfailed"
    assert session.test("test_known_failure").runtime is None
    assert values(runtime_of(session, "test_first_failure")) == {"n": "127", "count": "7"}
    assert session.test("test_second_failure").runtime is None


def test_a_passing_session_reports_no_runtime_values(tmp_path: Path) -> None:
    project = write_project(
        tmp_path,
        {
            "src/__init__.py": "",
            "src/bits.py": BITS,
            "tests/test_bits.py": (
                "from src.bits import bitcount_word\n"
                "\n"
                "\n"
                "def test_three():\n"
                "    n = 7\n"
                '    assert bitcount_word(n) == "three"\n'
            ),
        },
    )
    session = run_pytest(project)
    assert session.exit_code == 0
    assert "runtime" not in json.dumps(session.payload)


def test_a_comprehensions_hidden_iterator_is_not_a_local(tmp_path: Path) -> None:
    project = write_project(
        tmp_path,
        {
            "src/__init__.py": "",
            "src/prices.py": (
                "def totals(prices):\n"
                "    return [amount * 2 for name, amount in prices.items() if name.upper()]\n"
            ),
            "tests/test_prices.py": (
                "from src.prices import totals\n"
                "\n"
                "\n"
                "def test_totals():\n"
                "    assert totals({'tea': None}) == []\n"
            ),
        },
    )
    runtime = runtime_of(run_pytest(project), "test_totals")
    assert runtime.frame.file == "src/prices.py"
    assert "name" in values(runtime)
    assert all(name.isidentifier() for name in values(runtime))


def test_a_fake_in_the_tests_is_passed_over_for_the_code_under_test(tmp_path: Path) -> None:
    project = write_project(
        tmp_path,
        {
            "src/__init__.py": "",
            "src/shop.py": (
                "def checkout(cart, pay):\n"
                "    total = sum(cart.values())\n"
                "    return pay(total * 100)\n"
            ),
            "tests/__init__.py": "",
            "tests/fakes.py": (
                "def refusing_card(cents):\n"
                "    limit = 500\n"
                "    raise ValueError(f'{cents} is over {limit}')\n"
            ),
            "tests/test_shop.py": (
                "from src.shop import checkout\n"
                "from tests.fakes import refusing_card\n"
                "\n"
                "\n"
                "def test_checkout():\n"
                "    assert checkout({'tea': 2}, refusing_card) is None\n"
            ),
        },
    )
    runtime = runtime_of(run_pytest(project), "test_checkout")
    assert (runtime.frame.file, runtime.frame.function) == ("src/shop.py", "checkout")
    assert values(runtime)["total"] == "2"
