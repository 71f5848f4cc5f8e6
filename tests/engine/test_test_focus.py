"""A test file in the full prompt: its imports, the failing tests and the definitions they use."""

from __future__ import annotations

from engine.feedback.packet import Failure, RepairPacket
from engine.feedback.test_focus import failing_tests, focus

SOURCE = '''"""Tests."""
import pytest
from calc import double, triple

LIMIT = 10
UNUSED = 3


def helper(x):
    return clamp(double(x))


def clamp(x):
    return min(x, LIMIT)


def deeper_unused():
    return 0


@pytest.fixture
def numbers():
    return [1, 2, 3]


def test_passes():
    assert triple(1) == 3


def test_passes_too():
    assert triple(2) == 6


@pytest.mark.parametrize("x", [1, 2])
def test_helper(x, numbers):
    assert helper(x) in numbers


class TestCalc:
    def setup_method(self):
        self.value = 2

    def test_other(self):
        assert triple(0) == 0

    def test_double(self):
        assert double(self.value) == 4


def test_last():
    assert triple(3) == 9
'''


def packet(*tests: str, kind: str = "failed") -> RepairPacket:
    return RepairPacket(
        summary="failing",
        error_class="logic",
        failures=[Failure(test=t, kind=kind) for t in tests],
    )


def test_the_failing_test_comes_with_the_imports_helpers_fixtures_and_constants() -> None:
    cut = focus(SOURCE, [["test_helper"]])
    assert cut is not None
    assert cut.startswith("import pytest\nfrom calc import double, triple\n...\nLIMIT = 10\n")
    for kept in ("def helper(x):", "def clamp(x):", "def numbers():", "@pytest.mark.parametrize"):
        assert kept in cut
    for left_out in ("UNUSED", "deeper_unused", "test_passes", "class TestCalc", '"""Tests."""'):
        assert left_out not in cut
    # In file order, `...` where lines were left out.
    assert cut.index("def helper") < cut.index("def clamp") < cut.index("def test_helper")
    assert "\n...\n@pytest.fixture\ndef numbers():" in cut


def test_a_method_comes_with_its_class_line_and_set_up() -> None:
    cut = focus(SOURCE, [["TestCalc", "test_double"]])
    assert cut is not None
    assert "class TestCalc:\n    def setup_method(self):\n        self.value = 2\n...\n" in cut
    assert "    def test_double(self):\n        assert double(self.value) == 4" in cut
    assert "test_other" not in cut


def test_an_unknown_test_or_a_cut_that_saves_little_shows_the_file_whole() -> None:
    assert focus(SOURCE, [["test_gone"]]) is None
    assert focus(SOURCE, [["Missing", "test_double"]]) is None
    assert focus("def broken(:\n", [["test_x"]]) is None
    small = "from calc import double\n\n\ndef test_double():\n    assert double(3) == 6\n"
    assert focus(small, [["test_double"]]) is None


def test_failing_tests_per_file_from_the_packet() -> None:
    found = failing_tests(
        packet(
            "tests/test_calc.py::TestCalc::test_double",
            "tests/test_calc.py::test_helper[2]",
            "tests/test_other.py::test_x",
            "collecting tests/test_bad.py",
        )
    )
    assert found == {
        "tests/test_calc.py": [["TestCalc", "test_double"], ["test_helper"]],
        "tests/test_other.py": [["test_x"]],
    }
    assert failing_tests(None) == {}
    assert failing_tests(packet("tests/test_calc.py::test_x", kind="collection error")) == {}
    assert failing_tests(packet("pkg/stats_test.go::TestMean")) == {}
