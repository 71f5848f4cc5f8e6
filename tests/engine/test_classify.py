"""Classification and signatures of verifier runs.

Every message below was copied from a real run of CPython 3.11.7, pytest 8, ruff and mypy
(`/tmp/realmsgs` while writing these tests); pytest texts are whole, unedited outputs.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from engine.project.modules import modules_of, project_modules
from engine.verify.classify import (
    Classification,
    ErrorClass,
    classify,
    normalise,
    signature,
    signature_text,
)
from engine.verify.results import (
    CollectionError,
    Diagnostic,
    StageKind,
    StageResult,
    TestCase,
    TestCounts,
    TestReport,
)

PROJECT = frozenset({"pkg"})

# --- real outputs -------------------------------------------------------------------------------

PYTEST_TWO_FAILURES = """\
FF                                                                       [100%]
=================================== FAILURES ===================================
__________________________________ test_mean ___________________________________

    def test_mean():
>       assert mean([1, 2, 3]) == 2
E       assert 1.5 == 2
E        +  where 1.5 = mean([1, 2, 3])

tests/test_stats.py:3: AssertionError
__________________________________ test_arity __________________________________

    def test_arity():
>       assert mean([1], 2) == 1
               ^^^^^^^^^^^^
E       TypeError: mean() takes 1 positional argument but 2 were given

tests/test_stats.py:5: TypeError
=========================== short test summary info ============================
FAILED tests/test_stats.py::test_mean - assert 1.5 == 2
FAILED tests/test_stats.py::test_arity - TypeError: mean() takes 1 positional...
2 failed in 0.03s
"""

PYTEST_COLLECTION_SYNTAX_ERROR = """\

==================================== ERRORS ====================================
_____________________ ERROR collecting tests/test_stats.py _____________________
/work/main/.venv/lib/python3.11/site-packages/_pytest/python.py:498: in importtestmodule
    mod = import_path(
/work/main/.venv/lib/python3.11/site-packages/_pytest/pathlib.py:587: in import_path
    importlib.import_module(module_name)
/root/.pyenv/versions/3.11.7/lib/python3.11/importlib/__init__.py:126: in import_module
    return _bootstrap._gcd_import(name[level:], package, level)
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
<frozen importlib._bootstrap>:1204: in _gcd_import
    ???
<frozen importlib._bootstrap>:1176: in _find_and_load
    ???
<frozen importlib._bootstrap>:1147: in _find_and_load_unlocked
    ???
<frozen importlib._bootstrap>:690: in _load_unlocked
    ???
/work/main/.venv/lib/python3.11/site-packages/_pytest/assertion/rewrite.py:186: in exec_module
    exec(co, module.__dict__)
tests/test_stats.py:1: in <module>
    from pkg.stats import mean
E     File "/tmp/realmsgs/proj/pkg/stats.py", line 1
E       def mean(xs)
E                   ^
E   SyntaxError: expected ':'
=========================== short test summary info ============================
ERROR tests/test_stats.py
!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!
1 error in 0.16s
"""

PYTEST_COLLECTION_VALUE_ERROR_TEXT = """\
tests/test_coll.py:1: in <module>
    LIMIT = int("x")
            ^^^^^^^^
E   ValueError: invalid literal for int() with base 10: 'x'"""

PYTEST_CONFTEST_MISSING_MODULE_STDERR = """\
ImportError while loading conftest '/tmp/realmsgs/proj/tests/conftest.py'.
tests/conftest.py:1: in <module>
    import yaml_nope
E   ModuleNotFoundError: No module named 'yaml_nope'
"""

PYTEST_TEST_NAMED_FOR_CONNECTION_REFUSED = """\
F                                                                        [100%]
=================================== FAILURES ===================================
______________________ test_connection_refused_is_retried ______________________

    def test_connection_refused_is_retried():
        with pytest.raises(ConnectionRefusedError):
>           assert mean([1, 2, 3]) == 2
E           assert 1 == 2
E            +  where 1 = mean([1, 2, 3])

tests/test_retry.py:7: AssertionError
=========================== short test summary info ============================
FAILED tests/test_retry.py::test_connection_refused_is_retried - assert 1 == 2
1 failed in 0.03s
"""

PYTEST_NO_TESTS = "\nno tests ran in 0.00s\n"

LOADER_MISSING_LIBRARY = (
    "./m2: error while loading shared libraries: libfoo.so.1: cannot open shared object file: "
    "No such file or directory\n"
)

# --- building stage results ---------------------------------------------------------------------


def failed_test(nodeid: str, exception_type: str, message: str) -> TestCase:
    return TestCase(
        nodeid=nodeid,
        outcome="failed",
        file=nodeid.split("::")[0],
        exception_type=exception_type,
        exception_message=message,
    )


def reported_stage(
    *tests: TestCase,
    collection_errors: tuple[CollectionError, ...] = (),
    exit_code: int | None = None,
    collected: int = 5,
    exitstatus: int | None = None,
    stdout: str = "",
    stderr: str = "",
) -> StageResult:
    failing = sum(t.outcome in {"failed", "error"} for t in tests)
    code = exit_code if exit_code is not None else (2 if collection_errors else int(failing > 0))
    report = TestReport(
        exitstatus=exitstatus if exitstatus is not None else code,
        counts=TestCounts(collected=collected, failed=failing, passed=collected - failing),
        tests=list(tests),
        collection_errors=list(collection_errors),
    )
    return StageResult(
        name="tests",
        kind=StageKind.TESTS,
        cmd="python -m pytest",
        exit_code=code,
        duration_ms=840,
        report=report,
        stdout=stdout,
        stderr=stderr,
    )


def raw_stage(
    kind: StageKind = StageKind.TESTS,
    *,
    exit_code: int,
    stdout: str = "",
    stderr: str = "",
    name: str = "tests",
    cmd: str = "python -m pytest",
) -> StageResult:
    """A stage whose output nobody parsed: no report, no diagnostics."""
    return StageResult(
        name=name,
        kind=kind,
        cmd=cmd,
        exit_code=exit_code,
        duration_ms=120,
        stdout=stdout,
        stderr=stderr,
        excerpt=stderr or stdout,
    )


def lint_stage(*diagnostics: Diagnostic) -> StageResult:
    return StageResult(
        name="ruff",
        kind=StageKind.LINT,
        cmd="ruff check --output-format json .",
        exit_code=1 if diagnostics else 0,
        duration_ms=30,
        diagnostics=list(diagnostics),
    )


RUFF_F401 = Diagnostic(
    tool="ruff", file="pkg/stats.py", line=1, col=8, code="F401", message="`os` imported but unused"
)
MYPY_OPERATOR = Diagnostic(
    tool="mypy",
    file="pkg/stats.py",
    line=5,
    code="operator",
    message='Unsupported operand types for + ("float" and "str")',
)
ASSERTION = failed_test("tests/test_stats.py::test_mean", "AssertionError", "assert 1.5 == 2")
ARITY = failed_test(
    "tests/test_stats.py::test_arity",
    "TypeError",
    "mean() takes 1 positional argument but 2 were given",
)


def run(*stages: StageResult, touched: frozenset[str] = frozenset()) -> Classification:
    return classify(stages, project_modules=PROJECT, touched_modules=touched)


# --- infrastructure, memory, time ---------------------------------------------------------------


def test_sandbox_failure_is_env_failure_pointing_at_doctor() -> None:
    broken = StageResult(
        name="tests",
        kind=StageKind.TESTS,
        cmd="python -m pytest",
        exit_code=-1,
        duration_ms=3,
        infrastructure_error="runsc: cannot create sandbox: permission denied",
    )
    result = run(broken)
    assert result.error_class is ErrorClass.ENV_FAILURE
    assert result.env_cause == (
        "the sandbox itself failed: runsc: cannot create sandbox: permission denied: "
        "run `fixloop-tui doctor`"
    )


def test_sandbox_failure_outranks_a_timeout_in_another_stage() -> None:
    slow = raw_stage(exit_code=-9).model_copy(update={"timed_out": True})
    broken = raw_stage(StageKind.LINT, exit_code=-1, name="ruff").model_copy(
        update={"infrastructure_error": "gofer: mount failed"}
    )
    assert run(slow, broken).error_class is ErrorClass.ENV_FAILURE


def test_oom_killed_stage_is_oom() -> None:
    killed = raw_stage(exit_code=-9).model_copy(update={"oom_killed": True})
    result = run(killed)
    assert result.error_class is ErrorClass.OOM
    assert result.primary == "stage 'tests' was killed for running out of memory"


def test_oom_outranks_timeout() -> None:
    killed = raw_stage(exit_code=-9).model_copy(update={"oom_killed": True, "timed_out": True})
    assert run(killed).error_class is ErrorClass.OOM


def test_timed_out_stage_is_timeout_with_its_duration() -> None:
    slow = raw_stage(exit_code=-9).model_copy(update={"timed_out": True, "duration_ms": 60_000})
    result = run(slow)
    assert result.error_class is ErrorClass.TIMEOUT
    assert result.primary == "stage 'tests' timed out after 60s"


# --- the environment ----------------------------------------------------------------------------


def test_missing_third_party_module_is_env_failure_naming_the_install() -> None:
    test = failed_test(
        "tests/test_cfg.py::test_load", "ModuleNotFoundError", "No module named 'yaml'"
    )
    result = run(reported_stage(test))
    assert result.error_class is ErrorClass.ENV_FAILURE
    assert result.env_cause == (
        "module 'yaml' is not installed in the test environment: install it into the "
        "interpreter given by --python (pip install PyYAML?)"
    )
    assert result.primary == "tests/test_cfg.py::test_load: No module named 'yaml'"


def test_missing_project_module_is_mechanical() -> None:
    test = failed_test(
        "tests/test_stats.py::test_mean", "ModuleNotFoundError", "No module named 'pkg.stats2'"
    )
    assert run(reported_stage(test)).error_class is ErrorClass.MECHANICAL


def test_missing_module_the_edit_created_is_mechanical() -> None:
    test = failed_test(
        "tests/test_new.py::test_it", "ModuleNotFoundError", "No module named 'newmod'"
    )
    result = run(reported_stage(test), touched=frozenset({"newmod"}))
    assert result.error_class is ErrorClass.MECHANICAL


def test_missing_module_at_collection_is_env_failure() -> None:
    error = CollectionError(
        nodeid="tests/test_yaml.py",
        exception_type="ModuleNotFoundError",
        exception_message="No module named 'yaml_nope'",
    )
    result = run(reported_stage(collection_errors=(error,)))
    assert result.error_class is ErrorClass.ENV_FAILURE
    assert result.env_cause is not None
    assert result.env_cause.startswith("module 'yaml_nope' is not installed")


def test_submodule_of_an_existing_module_is_a_wrong_name_not_the_environment() -> None:
    test = failed_test(
        "tests/test_a.py::test_a",
        "ModuleNotFoundError",
        "No module named 'os.nope'; 'os' is not a package",
    )
    assert run(reported_stage(test)).error_class is ErrorClass.MECHANICAL


def test_conftest_that_cannot_import_without_a_report_is_env_failure() -> None:
    crashed = raw_stage(exit_code=4, stderr=PYTEST_CONFTEST_MISSING_MODULE_STDERR)
    result = run(crashed)
    assert result.error_class is ErrorClass.ENV_FAILURE
    assert result.env_cause is not None
    assert "module 'yaml_nope'" in result.env_cause


def test_python_dash_m_of_a_missing_tool_is_env_failure() -> None:
    mypy = raw_stage(
        StageKind.TYPES,
        name="mypy",
        cmd="python -m mypy .",
        exit_code=1,
        stderr="/work/main/.venv/bin/python: No module named mypy\n",
    )
    result = run(mypy)
    assert result.error_class is ErrorClass.ENV_FAILURE
    assert result.env_cause is not None
    assert "module 'mypy' is not installed" in result.env_cause


def test_exit_127_is_command_not_found_naming_the_command() -> None:
    ruff = raw_stage(
        StageKind.LINT,
        name="ruff",
        cmd="ruff check .",
        exit_code=127,
        stderr="ruff: command not found\n",
    )
    result = run(ruff)
    assert result.error_class is ErrorClass.ENV_FAILURE
    assert result.env_cause == (
        "command 'ruff' not found in the sandbox (exit 127): install it or fix the stage command"
    )


def test_shell_not_found_message_names_the_command() -> None:
    stage = raw_stage(
        StageKind.OTHER,
        name="build",
        cmd="sh -c foo_missing_cmd",
        exit_code=127,
        stderr="sh: 1: foo_missing_cmd: not found\n",
    )
    result = run(stage)
    assert result.env_cause is not None
    assert result.env_cause.startswith("command 'foo_missing_cmd' not found")


def test_exit_127_without_a_message_names_the_stage_command() -> None:
    stage = raw_stage(StageKind.OTHER, name="build", cmd="make all", exit_code=127)
    result = run(stage)
    assert result.env_cause is not None
    assert result.env_cause.startswith("command 'make' not found")


def test_missing_shared_library_exit_127_is_not_command_not_found() -> None:
    stage = raw_stage(
        StageKind.OTHER, name="native", cmd="./m2", exit_code=127, stderr=LOADER_MISSING_LIBRARY
    )
    result = run(stage)
    assert result.error_class is ErrorClass.ENV_FAILURE
    assert result.env_cause == (
        "missing shared library libfoo.so.1: install the system package providing it"
    )


def test_ctypes_missing_library_in_a_test_is_env_failure() -> None:
    test = failed_test(
        "tests/test_native.py::test_load",
        "OSError",
        "libfoo.so.1: cannot open shared object file: No such file or directory",
    )
    result = run(reported_stage(test))
    assert result.env_cause == (
        "missing shared library libfoo.so.1: install the system package providing it"
    )


def test_disk_full_is_env_failure() -> None:
    test = failed_test(
        "tests/test_io.py::test_dump", "OSError", "[Errno 28] No space left on device"
    )
    result = run(reported_stage(test))
    assert result.env_cause == "disk full in the sandbox workspace: raise --tmpfs or clean outputs"


def test_connection_refused_is_env_failure() -> None:
    test = failed_test(
        "tests/test_net.py::test_net", "ConnectionRefusedError", "[Errno 111] Connection refused"
    )
    result = run(reported_stage(test))
    assert result.env_cause == (
        "a test tried to reach the network (connection refused): the sandbox has no network; "
        "mock it"
    )


def test_name_resolution_in_the_sandbox_is_env_failure() -> None:
    test = failed_test(
        "tests/test_net.py::test_dns",
        "socket.gaierror",
        "[Errno -3] Temporary failure in name resolution",
    )
    result = run(reported_stage(test))
    assert result.env_cause is not None
    assert result.env_cause.startswith("a test tried to reach the network (name resolution")


def test_unreachable_network_is_env_failure() -> None:
    test = failed_test(
        "tests/test_net.py::test_up", "OSError", "[Errno 101] Network is unreachable"
    )
    assert run(reported_stage(test)).error_class is ErrorClass.ENV_FAILURE


def test_env_words_in_a_passing_stage_are_ignored() -> None:
    passing = raw_stage(
        StageKind.OTHER, name="smoke", exit_code=0, stdout="retrying: Connection refused\n"
    )
    assert run(passing).error_class is ErrorClass.NONE


def test_test_source_mentioning_connection_refused_is_not_the_environment() -> None:
    stage = raw_stage(exit_code=1, stdout=PYTEST_TEST_NAMED_FOR_CONNECTION_REFUSED)
    result = run(stage)
    assert result.error_class is ErrorClass.LOGIC
    assert result.primary == (
        "tests/test_retry.py::test_connection_refused_is_retried: AssertionError: assert 1 == 2"
    )


# --- collection ---------------------------------------------------------------------------------


def test_syntax_error_at_collection_is_mechanical() -> None:
    error = CollectionError(
        nodeid="tests/test_stats.py", exception_type="SyntaxError", exception_message="expected ':'"
    )
    result = run(reported_stage(collection_errors=(error,), collected=0))
    assert result.error_class is ErrorClass.MECHANICAL
    assert result.primary == "tests/test_stats.py failed to collect: SyntaxError: expected ':'"


def test_other_exception_at_collection_is_collection_error() -> None:
    error = CollectionError(
        nodeid="tests/test_coll.py",
        exception_type="ValueError",
        exception_message="invalid literal for int() with base 10: 'x'",
    )
    result = run(reported_stage(collection_errors=(error,), collected=0))
    assert result.error_class is ErrorClass.COLLECTION_ERROR


def test_collection_exception_is_read_from_pytests_text_when_the_report_lacks_it() -> None:
    error = CollectionError(nodeid="tests/test_coll.py", text=PYTEST_COLLECTION_VALUE_ERROR_TEXT)
    result = run(reported_stage(collection_errors=(error,), collected=0))
    assert result.error_class is ErrorClass.COLLECTION_ERROR
    assert result.primary == (
        "tests/test_coll.py failed to collect: ValueError: invalid literal for int() with base "
        "10: 'x'"
    )


def test_collection_syntax_error_is_found_in_output_without_a_report() -> None:
    stage = raw_stage(exit_code=2, stdout=PYTEST_COLLECTION_SYNTAX_ERROR)
    result = run(stage)
    assert result.error_class is ErrorClass.MECHANICAL
    assert result.primary == "tests/test_stats.py failed to collect: SyntaxError: expected ':'"


# --- no tests -----------------------------------------------------------------------------------


def test_exit_5_is_no_tests() -> None:
    result = run(reported_stage(exit_code=5, collected=0))
    assert result.error_class is ErrorClass.NO_TESTS


def test_exit_5_without_a_report_is_no_tests() -> None:
    assert run(raw_stage(exit_code=5, stdout=PYTEST_NO_TESTS)).error_class is ErrorClass.NO_TESTS


def test_nothing_collected_behind_a_swallowed_exit_is_no_tests() -> None:
    swallowed = reported_stage(exit_code=0, collected=0, exitstatus=5)
    assert run(swallowed).error_class is ErrorClass.NO_TESTS


# --- the code -----------------------------------------------------------------------------------


def test_assertion_failure_is_logic() -> None:
    result = run(reported_stage(ASSERTION))
    assert result.error_class is ErrorClass.LOGIC
    assert result.primary == "tests/test_stats.py::test_mean: AssertionError: assert 1.5 == 2"


def test_the_first_failing_test_decides() -> None:
    assert run(reported_stage(ASSERTION, ARITY)).error_class is ErrorClass.LOGIC
    assert run(reported_stage(ARITY, ASSERTION)).error_class is ErrorClass.MECHANICAL


def test_skipped_tests_before_the_failure_do_not_decide() -> None:
    skipped = TestCase(nodeid="tests/test_a.py::test_skip", outcome="skipped")
    assert run(reported_stage(skipped, ARITY)).error_class is ErrorClass.MECHANICAL


@pytest.mark.parametrize(
    "message",
    [
        "mean() takes 1 positional argument but 2 were given",
        "g() missing 1 required positional argument: 'b'",
        "f() got an unexpected keyword argument 'x'",
        "N() takes no arguments",
        "r() takes from 1 to 2 positional arguments but 3 were given",
        "k() missing 1 required keyword-only argument: 'a'",
        "r() got multiple values for argument 'a'",
    ],
)
def test_call_arity_type_error_is_mechanical(message: str) -> None:
    test = failed_test("tests/test_stats.py::test_call", "TypeError", message)
    assert run(reported_stage(test)).error_class is ErrorClass.MECHANICAL


def test_type_error_of_wrong_operands_is_logic() -> None:
    test = failed_test(
        "tests/test_stats.py::test_add",
        "TypeError",
        "unsupported operand type(s) for +: 'int' and 'str'",
    )
    assert run(reported_stage(test)).error_class is ErrorClass.LOGIC


@pytest.mark.parametrize(
    ("exception_type", "message"),
    [
        ("NameError", "name 'undefined_name' is not defined"),
        (
            "UnboundLocalError",
            "cannot access local variable 'y' where it is not associated with a value",
        ),
        ("SyntaxError", "invalid syntax (m.py, line 1)"),
        (
            "IndentationError",
            "expected an indented block after 'if' statement on line 1 (m.py, line 2)",
        ),
        ("TabError", "inconsistent use of tabs and spaces in indentation (m.py, line 3)"),
    ],
)
def test_name_and_syntax_errors_are_mechanical(exception_type: str, message: str) -> None:
    test = failed_test("tests/test_stats.py::test_mean", exception_type, message)
    assert run(reported_stage(test)).error_class is ErrorClass.MECHANICAL


def test_missing_attribute_of_a_module_is_mechanical() -> None:
    test = failed_test(
        "tests/test_stats.py::test_median",
        "AttributeError",
        "module 'pkg.stats' has no attribute 'median'",
    )
    assert run(reported_stage(test)).error_class is ErrorClass.MECHANICAL


def test_missing_attribute_of_an_object_is_logic() -> None:
    test = failed_test(
        "tests/test_stats.py::test_mean", "AttributeError", "'NoneType' object has no attribute 'x'"
    )
    assert run(reported_stage(test)).error_class is ErrorClass.LOGIC


def test_importing_a_name_the_project_lacks_is_mechanical() -> None:
    test = failed_test(
        "tests/test_stats.py::test_median",
        "ImportError",
        "cannot import name 'median' from 'pkg.stats' (/tmp/realmsgs/proj/pkg/stats.py)",
    )
    assert run(reported_stage(test)).error_class is ErrorClass.MECHANICAL


FIXTURE_NOT_FOUND = (
    "fixture 'db' not found\n available fixtures: capfd, capsys, monkeypatch, tmp_path\n use "
    "'pytest --fixtures [testpath]' for help on them."
)


def test_a_missing_fixture_is_mechanical() -> None:
    error = TestCase(
        nodeid="tests/test_fx.py::test_db",
        outcome="error",
        when="setup",
        exception_message=FIXTURE_NOT_FOUND,
    )
    result = run(reported_stage(error))
    assert result.error_class is ErrorClass.MECHANICAL
    assert result.primary == "tests/test_fx.py::test_db: fixture 'db' not found"


def test_other_exceptions_are_logic() -> None:
    test = failed_test(
        "tests/test_parse.py::test_int", "ValueError", "invalid literal for int() with base 10: 'x'"
    )
    assert run(reported_stage(test)).error_class is ErrorClass.LOGIC


def test_failures_behind_a_swallowed_exit_code_still_count() -> None:
    swallowed = reported_stage(ASSERTION, exit_code=0)
    assert run(swallowed).error_class is ErrorClass.LOGIC


def test_pytest_output_without_a_report_names_the_first_failure() -> None:
    result = run(raw_stage(exit_code=1, stdout=PYTEST_TWO_FAILURES))
    assert result.error_class is ErrorClass.LOGIC
    assert result.primary == "tests/test_stats.py::test_mean: AssertionError: assert 1.5 == 2"


# --- lint and success ---------------------------------------------------------------------------


def test_only_lint_and_type_failures_is_lint() -> None:
    mypy = StageResult(
        name="mypy",
        kind=StageKind.TYPES,
        cmd="mypy --strict pkg",
        exit_code=1,
        duration_ms=900,
        diagnostics=[MYPY_OPERATOR],
    )
    result = run(lint_stage(RUFF_F401), mypy, reported_stage())
    assert result.error_class is ErrorClass.LINT
    assert result.primary == (
        "2 diagnostics; first: ruff F401 at pkg/stats.py:1: `os` imported but unused"
    )


def test_failing_tests_outrank_lint() -> None:
    result = run(lint_stage(RUFF_F401), reported_stage(ASSERTION))
    assert result.error_class is ErrorClass.LOGIC


def test_every_stage_passing_is_none() -> None:
    assert run(lint_stage(), reported_stage()).error_class is ErrorClass.NONE


# --- normalise ----------------------------------------------------------------------------------


def test_normalise_drops_line_numbers() -> None:
    assert normalise('File "pkg/stats.py", line 12, in mean') == normalise(
        'File "pkg/stats.py", line 40, in mean'
    )
    assert (
        normalise("tests/test_stats.py:3: AssertionError")
        == "tests/test_stats.py:?: AssertionError"
    )


def test_normalise_drops_pytest_temporary_directories() -> None:
    first = "FileNotFoundError: '/tmp/pytest-of-root/pytest-3/test_dump0/out.json'"
    second = "FileNotFoundError: '/tmp/pytest-of-fixloop/pytest-17/test_dump0/out.json'"
    assert normalise(first) == normalise(second)
    assert "test_dump0/out.json" in normalise(first)


def test_normalise_drops_the_sandbox_workspace_prefix() -> None:
    assert normalise("/fixloop/work/pkg/stats.py") == "pkg/stats.py"


def test_normalise_drops_object_addresses() -> None:
    first = "<pkg.stats.Mean object at 0x7f3a2c1e4d90> != 3"
    second = "<pkg.stats.Mean object at 0x7f91b00c2a10> != 3"
    assert normalise(first) == normalise(second)


def test_normalise_drops_durations_and_sizes() -> None:
    assert normalise("2 failed in 0.03s") == normalise("2 failed in 1.20s")
    assert normalise("allocated 512 MiB") == normalise("allocated 1.5 GiB")


def test_normalise_keeps_the_values_that_failed() -> None:
    assert normalise("assert 1.5 == 2") == "assert 1.5 == 2"
    assert normalise("assert {'a':1} == x[1:2]") == "assert {'a':1} == x[1:2]"


def test_normalise_collapses_whitespace() -> None:
    assert normalise("assert 1.5 == 2\n +  where 1.5 = mean([1, 2, 3])") == (
        "assert 1.5 == 2 + where 1.5 = mean([1, 2, 3])"
    )


# --- signatures ---------------------------------------------------------------------------------


def signed(*stages: StageResult) -> str:
    return signature(stages, run(*stages))


def test_signature_is_16_hex_characters() -> None:
    value = signed(reported_stage(ASSERTION))
    assert len(value) == 16
    int(value, 16)


def test_same_failure_on_other_lines_and_paths_has_the_same_signature() -> None:
    def located(line: int, tmp: str) -> StageResult:
        test = failed_test(
            "tests/test_io.py::test_dump",
            "FileNotFoundError",
            f"[Errno 2] No such file or directory: '/tmp/pytest-of-root/{tmp}/out.json' "
            f"(line {line})",
        )
        return reported_stage(test.model_copy(update={"line": line}))

    assert signed(located(3, "pytest-1")) == signed(located(30, "pytest-9"))


def test_a_different_failing_test_changes_the_signature() -> None:
    other = ASSERTION.model_copy(update={"nodeid": "tests/test_stats.py::test_mean_empty"})
    assert signed(reported_stage(ASSERTION)) != signed(reported_stage(other))


def test_a_different_test_timing_out_changes_the_signature() -> None:
    # Tests stopped by their limit are a timeout; which test hangs still tells two apart.
    hang = failed_test("tests/test_stats.py::test_mean", "TestTimeout", "did not finish in 1 s")
    other = hang.model_copy(update={"nodeid": "tests/test_stats.py::test_median"})
    assert run(reported_stage(hang)).error_class is ErrorClass.TIMEOUT
    assert signed(reported_stage(hang)) != signed(reported_stage(other))


def test_a_different_exception_changes_the_signature() -> None:
    other = ASSERTION.model_copy(
        update={"exception_type": "ZeroDivisionError", "exception_message": "division by zero"}
    )
    assert signed(reported_stage(ASSERTION)) != signed(reported_stage(other))


def test_lint_signature_ignores_positions_but_not_codes() -> None:
    moved = RUFF_F401.model_copy(update={"line": 7, "col": 1})
    other_code = RUFF_F401.model_copy(update={"code": "F841"})
    assert signed(lint_stage(RUFF_F401)) == signed(lint_stage(moved))
    assert signed(lint_stage(RUFF_F401)) != signed(lint_stage(other_code))


def test_signature_text_names_class_tests_and_first_exception() -> None:
    stages = [reported_stage(ARITY, ASSERTION)]
    text = signature_text(stages, run(*stages))
    assert text == (
        "class: mechanical\n"
        "tests: tests/test_stats.py::test_arity, tests/test_stats.py::test_mean\n"
        "exception: TypeError: mean() takes 1 positional argument but 2 were given"
    )


def test_only_the_first_twenty_failing_tests_are_signed() -> None:
    many = [
        ASSERTION.model_copy(update={"nodeid": f"tests/test_a.py::test_{n:02}"}) for n in range(25)
    ]
    extra = ASSERTION.model_copy(update={"nodeid": "tests/test_z.py::test_late"})
    assert signed(reported_stage(*many)) == signed(reported_stage(*many, extra))


# --- project modules ----------------------------------------------------------------------------


def write(root: Path, *paths: str) -> None:
    for path in paths:
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("")


def test_project_modules_finds_packages_and_modules_at_the_root(tmp_path: Path) -> None:
    write(tmp_path, "pkg/__init__.py", "pkg/stats.py", "tool.py", "README.md")
    assert project_modules(tmp_path) == {"pkg", "tool"}


def test_project_modules_finds_a_src_layout(tmp_path: Path) -> None:
    write(tmp_path, "src/pkg/__init__.py", "src/helper.py")
    assert project_modules(tmp_path) == {"pkg", "helper"}


def test_project_modules_counts_namespace_directories(tmp_path: Path) -> None:
    write(tmp_path, "scripts/run.py", "data/table.csv")
    assert project_modules(tmp_path) == {"scripts"}


def test_project_modules_leaves_out_tests_hidden_dirs_and_venvs(tmp_path: Path) -> None:
    write(tmp_path, "tests/test_a.py", ".hidden/x.py", "env/pyvenv.cfg", "env/activate_this.py")
    assert project_modules(tmp_path) == frozenset()


@pytest.mark.parametrize(
    ("path", "module"),
    [("src/pkg/a.py", "pkg"), ("pkg/a.py", "pkg"), ("mod.py", "mod"), ("./pkg/sub/b.py", "pkg")],
)
def test_modules_of_gives_the_top_level_name(path: str, module: str) -> None:
    assert modules_of([path]) == {module}


def test_modules_of_ignores_files_that_are_not_modules() -> None:
    assert modules_of(["README.md", "pyproject.toml"]) == frozenset()


def test_a_very_long_line_of_output_is_classified_in_well_under_a_second() -> None:
    """A hostile answer can print one line of 200 KB: the environment's patterns read only
    the start of a long line, so none backtracks over all of it (it took 14 s)."""
    long_line = "x" * 200_000 + "\n"
    lint = raw_stage(StageKind.LINT, name="lint", cmd="lint .", exit_code=1, stderr=long_line)
    started = time.monotonic()
    result = run(lint)
    assert time.monotonic() - started < 1.0
    assert result.error_class is not ErrorClass.ENV_FAILURE


def test_an_environment_message_after_a_long_line_is_still_found() -> None:
    stderr = "x" * 5000 + "\nlibfoo.so.1: cannot open shared object file: No such file\n"
    tool = raw_stage(StageKind.LINT, name="tool", cmd="tool .", exit_code=1, stderr=stderr)
    result = run(tool)
    assert result.error_class is ErrorClass.ENV_FAILURE
    assert result.env_cause is not None
    assert "libfoo.so.1" in result.env_cause
