"""The command line as a user runs it: a real process, real exit codes."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.project.paths import runs_dir
from engine.run.start import run_config
from tui.cli import build_parser, settings_from_args


def fixloop(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        check=False,
    )


@pytest.mark.usefixtures("needs_gvisor")
def test_sandbox_run_prints_the_command_output(tmp_path: Path) -> None:
    done = fixloop("sandbox", "run", "--workdir", str(tmp_path), "--", "python", "-c", "print(1)")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "1\n"


@pytest.mark.usefixtures("needs_gvisor")
def test_sandbox_run_exits_with_the_command_status(tmp_path: Path) -> None:
    done = fixloop("sandbox", "run", "--workdir", str(tmp_path), "--", "sh", "-c", "exit 3")
    assert done.returncode == 3


@pytest.mark.usefixtures("needs_gvisor")
def test_sandbox_run_timeout_exits_124(tmp_path: Path) -> None:
    done = fixloop(
        "sandbox", "run", "--workdir", str(tmp_path), "--timeout", "1", "--", "sleep", "30"
    )
    assert done.returncode == 124
    assert "timeout" in done.stderr


@pytest.mark.usefixtures("needs_gvisor")
def test_sandbox_run_json_prints_the_result_fields(tmp_path: Path) -> None:
    (tmp_path / "hello.txt").write_text("from the workdir")
    done = fixloop(
        "sandbox",
        "run",
        "--json",
        "--workdir",
        str(tmp_path),
        "--",
        "python",
        "-c",
        "print(open('hello.txt').read())",
    )
    result = json.loads(done.stdout)
    assert set(result) == {
        "exit_code",
        "stdout",
        "stderr",
        "duration_ms",
        "timed_out",
        "oom_killed",
        "truncated",
        "backend",
        "changes",
        "changes_truncated",
    }
    assert result["changes"] is None  # not asked for
    assert result["stdout"] == "from the workdir\n"
    assert result["backend"] == "gvisor"


def test_sandbox_run_without_a_command_is_a_usage_error() -> None:
    done = fixloop("sandbox", "run")
    assert done.returncode == 2
    assert "needs a command" in done.stderr


def test_sandbox_run_with_a_missing_workdir_is_one_line(tmp_path: Path) -> None:
    done = fixloop("sandbox", "run", "--workdir", str(tmp_path / "nope"), "--", "true")
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0
    assert "is not a directory" in done.stderr


def test_unsafe_local_backend_warns(tmp_path: Path) -> None:
    done = fixloop(
        "sandbox",
        "run",
        "--backend",
        "unsafe-local",
        "--workdir",
        str(tmp_path),
        "--",
        "python",
        "-c",
        "print(2)",
    )
    assert done.returncode == 0
    assert done.stdout == "2\n"
    assert "unsandboxed" in done.stderr


def test_without_headless_run_starts_the_app_which_checks_the_project_first(
    tmp_path: Path,
) -> None:
    done = fixloop(str(tmp_path / "missing"))
    assert done.returncode == 2
    assert done.stderr.strip() == f"fixloop-tui: error: {tmp_path / 'missing'} is not a directory"


def test_help_lists_every_command() -> None:
    done = fixloop("--help")
    assert done.returncode == 0
    for command in (
        "doctor",
        "sandbox",
        "verify",
        "run",
        "watch",
        "runs",
        "replay",
        "report",
        "bench",
    ):
        assert command in done.stdout


@pytest.mark.usefixtures("needs_gvisor")
def test_doctor_json_reports_a_working_sandbox(tmp_path: Path) -> None:
    done = fixloop("doctor", "--json", str(tmp_path))
    report = json.loads(done.stdout)
    checks = {c["name"]: c for c in report["checks"]}
    assert done.returncode == 0
    assert report["sandbox_works"] is True
    assert checks["gvisor sandbox"]["ok"] is True
    assert checks["git"]["ok"] is True


def test_doctor_fails_a_model_whose_key_is_missing_and_says_the_fix(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env.update(FIXLOOP_MODEL="openai/gpt-4o-mini", XDG_CONFIG_HOME=str(tmp_path / "config"))
    done = subprocess.run(
        [sys.executable, "-m", "tui.cli", "doctor", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    model = [line for line in done.stdout.splitlines() if " model " in f" {line} "]
    assert len(model) == 1, done.stdout
    assert model[0].startswith("FAIL model")
    assert model[0].endswith(
        "openai/gpt-4o-mini  -> no API key for openai (openai/gpt-4o-mini): set OPENAI_API_KEY"
    )


def test_replay_without_runs_or_of_an_unknown_run_is_one_line(tmp_path: Path) -> None:
    done = fixloop("replay", str(tmp_path))
    assert (done.returncode, done.stderr.strip()) == (
        2,
        f"fixloop-tui: error: no runs yet in {tmp_path}",
    )
    runs_dir(tmp_path).mkdir(parents=True)
    done = fixloop("replay", "20990101-000000-dead", str(tmp_path))
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"fixloop-tui: error: no run '20990101-000000-dead' in {tmp_path} (see `fixloop-tui runs`)"
    )


def test_the_prompt_flags_reach_the_run_config(tmp_path: Path) -> None:
    def config(*flags: str) -> tuple[bool, bool, bool, bool]:
        args = build_parser().parse_args(["run", str(tmp_path), "--model", "openai/x", *flags])
        found = settings_from_args(args)
        assert not isinstance(found, int)
        made = run_config(found[1], "openai/x").strategy
        return made.repeat_called, made.code_last, made.called_code, made.docs_noop

    assert config() == (True, False, False, False)
    assert config("--no-repeat-called", "--code-last") == (False, True, False, False)
    assert config("--called-code", "--docs-noop") == (True, False, True, True)
    assert config("--set", "strategy.called_code=true") == (True, False, True, False)
    assert config("--strategy", "levers-off", "--set", "strategy.code_last=on") == (
        True,
        True,
        False,
        False,
    )


def test_report_of_a_run_without_one_says_why_and_how_to_go_on(tmp_path: Path) -> None:
    from engine.run.events import RunStarted, RunStopped

    runs = runs_dir(tmp_path)
    started = RunStarted(
        run_id="r", task="Fix it.", project=str(tmp_path), model="m", sandbox="s", max_iterations=4
    )
    stopped = RunStopped(run_id="r", n=1, reason="stopped: the terminal closed")
    for run, events in (
        ("20990101-000000-stop", [started, stopped]),
        ("20990101-000000-cut", [started]),
    ):
        (runs / run).mkdir(parents=True)
        lines = "".join(event.model_dump_json() + "\n" for event in events)
        (runs / run / "events.jsonl").write_text(lines)

    done = fixloop("report", "20990101-000000-stop", str(tmp_path))
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "run 20990101-000000-stop is stopped (stopped: the terminal closed), no report until it "
        f"ends; continue it: fixloop-tui resume 20990101-000000-stop {tmp_path}"
    )
    done = fixloop("report", "20990101-000000-cut", str(tmp_path))
    assert done.stderr.strip() == (
        "run 20990101-000000-cut has no ending (still running, or its process died): "
        f"fixloop-tui resume 20990101-000000-cut {tmp_path}"
    )


def test_an_old_lever_flag_works_and_says_what_replaced_it(tmp_path: Path) -> None:
    from tui.cli import deprecated_lever_flags

    args = build_parser().parse_args(["run", str(tmp_path), "--no-code-noop", "--model", "m"])
    assert deprecated_lever_flags(args) == [
        "fixloop-tui: --no-code-noop is now --set strategy.code_noop=false (it still works)"
    ]
    found = settings_from_args(args)
    assert not isinstance(found, int)
    assert found[1].strategy.code_noop is False


def test_a_set_that_is_not_key_value_is_a_usage_error(tmp_path: Path) -> None:
    args = build_parser().parse_args(["run", str(tmp_path), "--set", "strategy.code_noop"])
    assert settings_from_args(args) == 2


@pytest.mark.parametrize(
    ("layer", "args"),
    [
        ("sandbox", ("sandbox", "run", "--backend", "docker", "--workdir", "{tmp}", "--", "true")),
        ("engine", ("trust", "{tmp}")),
        ("bench", ("bench", "--suite", "{tmp}/no-such-suite")),
    ],
)
def test_an_error_from_any_layer_is_one_line(
    tmp_path: Path, layer: str, args: tuple[str, ...]
) -> None:
    """A FixloopError that reaches the command line, whichever layer raised it, is printed as
    `fixloop-tui: error: ...` on one line, never as a traceback."""
    env = {**os.environ, "FIXLOOP_DOCKER_URL": f"unix://{tmp_path}/no-engine.sock"}
    done = subprocess.run(
        [sys.executable, "-m", "tui.cli", *(arg.format(tmp=tmp_path) for arg in args)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode in (2, 6), done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("fixloop-tui: error: "), layer
