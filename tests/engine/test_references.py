"""The reference check: tests read against the module without running either. It must name
what would fail for the wrong reason (a missing name, a call that does not fit) and stay quiet
about everything it cannot judge (methods, other modules, spread arguments)."""

from __future__ import annotations

from textwrap import dedent

from engine.spec.definition import parse_signature
from engine.spec.references import ReferenceProblem, Target, check_tests, module_names

MODULE = dedent(
    """
    import re
    from functools import lru_cache

    UNITS = {"h": 3600, "m": 60, "s": 1}


    def parse_duration(text: str) -> int:
        return 0


    def split_parts(text: str, /, *, strict: bool = False) -> list[str]:
        return []


    def total(*parts: int, scale: int = 1, **unused: int) -> int:
        return 0


    class Duration:
        def __init__(self, seconds: int, label: str = "") -> None:
            self.seconds = seconds

        def minutes(self) -> float:
            return self.seconds / 60


    @lru_cache
    def cached(text: str) -> int:
        return 0


    if True:
        FALLBACK = 0
    """
)
SPEC = parse_signature("parse_duration(text: str) -> int")


def problems(tests: str, module: str = MODULE, spec: bool = True) -> list[ReferenceProblem]:
    names = module_names(module)
    assert names is not None
    authoritative = {SPEC.name: SPEC.params} if spec else {}
    target = Target("durations.py", "durations", names, authoritative)
    return check_tests(target, {"tests/test_durations.py": dedent(tests)})


def messages(tests: str, module: str = MODULE) -> list[str]:
    return [p.message for p in problems(tests, module)]


def test_correct_tests_have_no_problem() -> None:
    assert (
        messages(
            """
            import pytest

            from durations import UNITS, Duration, parse_duration, split_parts, total


            def test_units():
                assert parse_duration("5m") == 5 * UNITS["m"]
                assert parse_duration(text="5m") == 300
                assert split_parts("1h5m", strict=True) == ["1h", "5m"]
                assert total(1, 2, 3, scale=2, extra=1) == 12
                assert Duration(90, label="x").minutes() == 1.5


            @pytest.mark.parametrize("text", ["5x", "10"])
            def test_bad(text):
                with pytest.raises(ValueError):
                    parse_duration(text)
            """
        )
        == []
    )


def test_importing_a_name_the_module_does_not_define() -> None:
    [found] = problems(
        """
        from durations import format_duration, parse_duration


        def test_round_trip():
            assert format_duration(parse_duration("5m")) == "5m"
        """
    )
    assert found.file == "tests/test_durations.py"
    assert found.line == 2
    assert found.source == "from durations import format_duration, parse_duration"
    assert found.message == (
        "imports format_duration from durations, but durations.py does not define it "
        "(it defines Duration, FALLBACK, UNITS, cached, lru_cache, parse_duration, re, "
        "split_parts, total)"
    )


def test_calling_a_name_that_is_defined_nowhere() -> None:
    [found] = problems(
        """
        from durations import parse_duration


        def test_minutes():
            assert parse_minutes("5m") == 5
        """
    )
    assert found.test == "test_minutes"
    assert found.line == 6
    assert found.message == (
        "calls parse_minutes, which is defined nowhere: not in durations.py, not imported, "
        "not a builtin"
    )


def test_a_module_attribute_the_module_does_not_define() -> None:
    assert messages(
        """
        import durations as d


        def test_it():
            assert d.parse_duration("1s") == 1
            assert d.MAX_SECONDS > 0
            assert d.seconds("1s") == 1
        """
    ) == [
        "uses d.MAX_SECONDS, but durations.py does not define MAX_SECONDS (it defines "
        "Duration, FALLBACK, UNITS, cached, lru_cache, parse_duration, re, split_parts, total)",
        "uses d.seconds, but durations.py does not define seconds (it defines Duration, "
        "FALLBACK, UNITS, cached, lru_cache, parse_duration, re, split_parts, total)",
    ]


def test_too_many_positional_arguments_is_judged_against_the_spec() -> None:
    [found] = problems(
        """
        from durations import parse_duration


        def test_unit():
            assert parse_duration("5", "m") == 300
        """
    )
    assert found.message == (
        "calls parse_duration('5', 'm'), which takes 1 positional argument but 2 were given: "
        "the spec's signature parse_duration(text: str) -> int"
    )


def test_the_spec_signature_wins_over_the_module() -> None:
    module = MODULE.replace(
        "def parse_duration(text: str) -> int:", "def parse_duration(text: str, unit: str = 's'):"
    )
    assert messages(
        """
        from durations import parse_duration


        def test_unit():
            assert parse_duration("5", unit="m") == 300
        """,
        module,
    ) == [
        "calls parse_duration('5', unit='m'), which has no parameter 'unit' that can be passed "
        "by keyword: the spec's signature parse_duration(text: str) -> int"
    ]


def test_keyword_arguments_are_checked_against_the_module() -> None:
    assert messages(
        """
        from durations import Duration, split_parts, total


        def test_calls():
            split_parts(text="1h")
            split_parts("1h", True)
            Duration()
            total(1, 2, scale=3, scale2=4)
            Duration(1, seconds=2)
        """
    ) == [
        "calls split_parts(text='1h'), which has no parameter 'text' that can be passed by "
        "keyword: durations.py defines split_parts(text: str, /, *, strict: bool=False) -> "
        "list[str]",
        "calls split_parts('1h', True), which takes 1 positional argument but 2 were given: "
        "durations.py defines split_parts(text: str, /, *, strict: bool=False) -> list[str]",
        "calls Duration(), which is missing the required argument 'seconds': durations.py "
        "defines Duration(seconds: int, label: str='') -> None",
        "calls Duration(1, seconds=2), which gets 'seconds' twice, by position and by keyword: "
        "durations.py defines Duration(seconds: int, label: str='') -> None",
    ]


def test_methods_and_attributes_of_objects_are_not_judged() -> None:
    assert (
        messages(
            """
            from durations import Duration


            class Helper:
                def check(self):
                    return self.anything(1, 2, 3)


            def test_methods():
                d = Duration(60)
                assert d.minutes(1, 2, 3) is not None
                assert d.no_such_method() is None
                assert "x".upper().nope() == 1
                assert Helper().check()
            """
        )
        == []
    )


def test_other_modules_are_taken_on_trust() -> None:
    assert (
        messages(
            """
            import math
            import os.path
            from collections import Counter
            from durations import parse_duration
            from helpers import anything_at_all


            def test_others():
                assert math.isclose(parse_duration("1s"), 1.0, whatever=3)
                assert os.path.no_such_function()
                assert Counter("aab")["a"] == 2
                assert anything_at_all(1, 2, 3)
            """
        )
        == []
    )


def test_spread_arguments_and_decorated_functions_are_not_judged() -> None:
    assert (
        messages(
            """
            from durations import cached, parse_duration


            def test_spread():
                args = ["5m", "extra"]
                assert parse_duration(*args)
                assert parse_duration(**{"text": "5m", "more": 1})
                assert cached("1s", "more", "than", "the", "def", "takes")
            """
        )
        == []
    )


def test_a_star_import_checks_the_names_it_brings() -> None:
    assert messages(
        """
        from durations import *


        def test_star():
            assert parse_duration("5m", 1) == 300
            assert seconds_in("5m") == 300
        """
    ) == [
        "calls parse_duration('5m', 1), which takes 1 positional argument but 2 were given: "
        "the spec's signature parse_duration(text: str) -> int",
        "calls seconds_in, which is defined nowhere: not in durations.py, not imported, "
        "not a builtin",
    ]


def test_a_module_that_can_define_any_name_is_trusted() -> None:
    module = MODULE + "\n\ndef __getattr__(name: str) -> object:\n    return name\n"
    assert messages("from durations import whatever\n", module) == []


def test_calls_inside_lambdas_and_parametrize_are_checked() -> None:
    [found] = problems(
        """
        import pytest

        from durations import parse_duration

        CASES = [pytest.param(lambda: parse_duration(), id="none")]
        """
    )
    assert found.line == 6
    assert found.test == ""
    assert "is missing the required argument 'text'" in found.message


def test_a_test_file_that_does_not_parse_is_left_to_pytest() -> None:
    assert messages("from durations import nope\ndef test_(:\n") == []


def test_a_module_that_does_not_parse_has_no_names() -> None:
    assert module_names("def broken(:\n") is None


def test_names_bound_anywhere_in_the_file_are_not_flagged() -> None:
    assert messages(
        """
            from durations import parse_duration

            try:
                from durations import parse_fast
            except ImportError:
                parse_fast = parse_duration


            def test_local():
                def helper(x):
                    return x

                for check in [helper]:
                    assert check(parse_fast("1s"))
                with open(__file__) as handle:
                    assert handle.read()
            """
    ) == [
        "imports parse_fast from durations, but durations.py does not define it (it "
        "defines Duration, FALLBACK, UNITS, cached, lru_cache, parse_duration, re, "
        "split_parts, total)"
    ]
