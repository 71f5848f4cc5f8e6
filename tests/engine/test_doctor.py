import subprocess
import sys
from pathlib import Path

import git
import pytest

from engine.doctor import (
    Check,
    Diagnosis,
    check_go_build_cache,
    check_job_limits,
    check_model,
    check_project_config,
    check_project_package,
    check_python,
    check_runsc_platform,
    check_toolchain,
    look_up_python,
    platform_of_version,
    project_python,
)
from engine.errors import ConfigError
from engine.project.settings import read_project_config
from engine.project.trust import TrustStore
from engine.verify.go_seed import SEED_ARCHIVE, seed_dir
from sandbox.contract import Limits
from tests.projects import PROJECTS, committed_copy


def fake_python(project: Path, script: str) -> Path:
    python = project / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f"#!/bin/sh\n{script}\n")
    python.chmod(0o755)
    return python


def test_project_venv_is_preferred_over_fixloops_python(tmp_path: Path) -> None:
    python = made_venv(tmp_path)
    assert project_python(tmp_path) == python


def test_without_a_venv_fixloops_own_python_runs_the_tests(tmp_path: Path) -> None:
    assert project_python(tmp_path) == Path(sys.executable)


def made_venv(project: Path) -> Path:
    """A real venv in `project/.venv`, as `python -m venv` makes it (without pip: quicker)."""
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(project / ".venv")], check=True
    )
    return project / ".venv" / "bin" / "python"


def committed_fake_venv(project: Path, marker: Path) -> Path:
    """A repository that commits `.venv/bin/python` (a script that leaves `marker` behind
    when run) and a `pyvenv.cfg` that looks like a real one."""
    python = fake_python(project, f"touch {marker}")
    (project / ".venv" / "pyvenv.cfg").write_text(
        f"home = {Path(sys.executable).resolve().parent}\nversion = {sys.version.split()[0]}\n"
    )
    repo = git.Repo.init(project)
    repo.git.add("-A")
    repo.index.commit("a venv of its own")
    return python


def unreadable_venv(project: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A venv as a normal user sees root's (root itself may look into any directory)."""
    python = fake_python(project, "exit 0")
    exists = Path.exists

    def denied(path: Path, **kwargs: bool) -> bool:
        if path == python:
            raise PermissionError(13, "Permission denied", str(path))
        return exists(path, **kwargs)

    monkeypatch.setattr(Path, "exists", denied)
    return python


def test_a_venv_this_user_cannot_look_into_is_one_line_naming_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    python = unreadable_venv(tmp_path, monkeypatch)
    with pytest.raises(ConfigError) as raised:
        project_python(tmp_path)
    assert str(raised.value) == (
        f"cannot use the project's interpreter {python}: permission denied; "
        "make .venv/ readable by this user, or pass --python PATH"
    )


def test_the_doctor_reports_a_venv_this_user_cannot_look_into(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    python = unreadable_venv(tmp_path, monkeypatch)
    check = check_python(look_up_python(tmp_path))
    assert not check.ok
    assert check.detail == f"cannot use the project's interpreter {python}: permission denied"
    assert check.fix == "make .venv/ readable by this user, or pass --python PATH"


def test_python_without_pytest_names_the_install_command(tmp_path: Path) -> None:
    python = made_venv(tmp_path)
    check = check_python(look_up_python(tmp_path))
    assert not check.ok
    assert check.fix == f"{python} -m pip install pytest"


def test_the_doctor_runs_nothing_from_a_committed_venv(tmp_path: Path) -> None:
    marker = tmp_path / "ran-on-the-host"
    project = tmp_path / "project"
    committed_fake_venv(project, marker)
    check = check_python(look_up_python(project))
    assert not check.ok
    assert check.detail == (
        f"{project / '.venv'} is part of the repository (git tracks .venv/bin/python): "
        "fixloop only runs an interpreter you made"
    )
    assert check.fix == "pass --python PATH"
    assert not marker.exists()


def test_the_doctor_reads_a_venvs_pytest_without_running_it(tmp_path: Path) -> None:
    marker = tmp_path / "ran-on-the-host"
    python = made_venv(tmp_path)
    site = next((tmp_path / ".venv" / "lib").glob("python*/site-packages"))
    (site / "pytest-8.0.0.dist-info").mkdir()
    (site / "pytest-8.0.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: pytest\nVersion: 8.0.0\n"
    )
    python.unlink()
    python.write_text(f"#!/bin/sh\ntouch {marker}\nexit 1\n")
    python.chmod(0o755)
    check = check_python(look_up_python(tmp_path))
    assert check.ok, check
    assert check.detail.endswith(f"(Python {sys.version.split()[0]}, pytest 8.0.0)")
    assert not marker.exists()


def test_python_with_pytest_reports_both_versions(tmp_path: Path) -> None:
    check = check_python(look_up_python(tmp_path))
    assert check.ok
    assert "pytest" in check.detail


def test_model_from_the_projects_pyproject(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FIXLOOP_MODEL", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    (tmp_path / "pyproject.toml").write_text('[tool.fixloop]\nmodel = "openai/gpt-4o-mini"\n')
    assert check_model(tmp_path).detail == "openai/gpt-4o-mini"


def test_model_from_the_environment_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FIXLOOP_MODEL", "ollama/qwen2.5-coder")
    (tmp_path / "pyproject.toml").write_text('[tool.fixloop]\nmodel = "openai/gpt-4o-mini"\n')
    assert check_model(tmp_path).detail == "ollama/qwen2.5-coder"


def test_a_model_without_its_key_is_a_failure_with_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FIXLOOP_MODEL", "openai/gpt-4o-mini")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    check = check_model(tmp_path)
    assert (check.ok, check.needed, check.detail) == (False, True, "openai/gpt-4o-mini")
    assert check.fix == "no API key for openai (openai/gpt-4o-mini): set OPENAI_API_KEY"


def test_a_model_with_its_key_is_ok_and_the_key_is_not_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FIXLOOP_MODEL", "openai/gpt-4o-mini")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-doctor-0123456789")
    check = check_model(tmp_path)
    assert check.ok
    assert "sk-test-doctor" not in check.model_dump_json()


def test_the_api_base_from_the_pyproject_is_named_in_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FIXLOOP_MODEL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    (tmp_path / "pyproject.toml").write_text(
        '[tool.fixloop]\nmodel = "openai/qwen"\napi_base = "http://127.0.0.1:8080/v1"\n'
    )
    config = read_project_config(tmp_path)
    TrustStore().trust(config.path, config.sha256, list(config.restricted))
    check = check_model(tmp_path)
    assert not check.ok
    assert check.fix is not None
    assert "(a local server at http://127.0.0.1:8080/v1 takes any value)" in check.fix


def test_an_untrusted_api_base_is_not_what_the_doctor_checks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FIXLOOP_MODEL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.fixloop]\nmodel = "openai/qwen"\napi_base = "http://127.0.0.1:8080/v1"\n'
    )
    check = check_model(tmp_path)
    assert check.fix is not None
    assert "127.0.0.1:8080" not in check.fix
    config = check_project_config(tmp_path)
    assert config is not None
    assert not config.ok
    assert "api_base" in config.detail
    assert config.fix == f"if you wrote it: fixloop-tui trust {tmp_path}"


def test_broken_pyproject_does_not_break_the_doctor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FIXLOOP_MODEL", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    (tmp_path / "pyproject.toml").write_text("[tool.fixloop\nmodel = ")
    check = check_model(tmp_path)
    assert check.needed is False


def test_only_a_working_sandbox_makes_a_healthy_machine() -> None:
    broken = Diagnosis(
        checks=[
            Check(name="gvisor sandbox", ok=False, detail="runsc missing"),
            Check(name="git", ok=True, detail="git 2"),
        ]
    )
    assert not broken.sandbox_works
    healthy = Diagnosis(checks=[Check(name="gvisor sandbox", ok=True, detail="ran")])
    assert healthy.sandbox_works


# --- the toolchain a Go or JavaScript project needs ---------------------------------------------


def test_a_python_project_needs_no_other_toolchain(tmp_path: Path) -> None:
    assert check_toolchain(tmp_path) is None


def test_a_go_module_needs_go(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "go.mod").write_text("module example.com/x\n")
    found = check_toolchain(tmp_path)
    assert found is not None
    assert found.ok, found  # CI installs golang-go
    assert found.detail.startswith("go version go")
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    missing = check_toolchain(tmp_path)
    assert missing is not None
    assert not missing.ok
    assert missing.fix == "apt-get install -y golang-go"


def test_the_doctor_says_whether_go_verifications_start_from_a_seed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "go.mod").write_text("module example.com/x\n")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    missing = check_go_build_cache(project)
    assert missing is not None
    assert missing.detail.startswith("not seeded yet")
    where = seed_dir()
    assert where is not None  # CI installs golang-go
    where.mkdir(parents=True, mode=0o755)
    (where / SEED_ARCHIVE).write_bytes(b"seed")
    seeded = check_go_build_cache(project)
    assert seeded is not None
    assert seeded.ok
    assert seeded.detail == f"seeded ({where})"
    assert check_go_build_cache(tmp_path / "elsewhere") is None  # no Go there


def test_a_jest_package_needs_jest_installed_in_it(tmp_path: Path) -> None:
    (tmp_path / "package.json").write_text('{"devDependencies": {"jest": "29.7.0"}}')
    check = check_toolchain(tmp_path)
    assert check is not None
    assert not check.ok
    assert "jest is not installed" in check.detail
    assert check.fix is not None
    assert check.fix.startswith("npm ci")
    runner = tmp_path / "node_modules" / ".bin" / "jest"
    runner.parent.mkdir(parents=True)
    runner.write_text("#!/bin/sh\n")
    installed = check_toolchain(tmp_path)
    assert installed is not None
    assert installed.ok, installed


def test_the_doctor_reports_a_committed_node_modules_leading_out_of_the_project(
    tmp_path: Path,
) -> None:
    (tmp_path / "package.json").write_text('{"devDependencies": {"jest": "29.7.0"}}')
    (tmp_path / "node_modules").symlink_to("/")
    repo = git.Repo.init(tmp_path)
    repo.git.add("-A")
    repo.index.commit("a package whose node_modules is the host")
    check = check_toolchain(tmp_path)
    assert check is not None
    assert not check.ok
    assert check.detail == (
        "node_modules resolves to /, outside the project, and git tracks node_modules"
    )
    assert check.fix == "remove the committed link and run `npm ci`"


@pytest.mark.sandbox
@pytest.mark.usefixtures("needs_gvisor")
async def test_a_src_package_the_interpreter_has_not_installed_fails_with_the_install(
    tmp_path: Path,
) -> None:
    root = committed_copy(PROJECTS / "src_not_installed", tmp_path)
    check = await check_project_package(root, Path(sys.executable))
    assert check is not None
    assert not check.ok
    assert check.detail.startswith("tallies does not import in the sandbox: ")
    assert check.detail.endswith("No module named 'tallies'")
    assert check.fix == f"{sys.executable} -m pip install -e {root}"


def test_the_doctor_says_how_many_threads_a_job_may_start() -> None:
    check = check_job_limits()
    assert check.ok
    assert f"{Limits().pids} processes and threads" in check.detail
    assert Limits().pids >= 256  # a real suite's thread pool of a few hundred


def test_the_runsc_here_runs_on_systrap() -> None:
    """make test and CI install Debian 13's runsc: a ptrace-only one makes every sandboxed
    suite several times slower, so doctor must see the current one here."""
    check = check_runsc_platform()
    assert check is not None
    assert check.ok, check


def test_a_runsc_from_before_systrap_is_named_with_the_line_that_replaces_it() -> None:
    check = platform_of_version("runsc version 0.0~20221219.0")
    assert check is not None
    assert not check.ok
    assert not check.needed
    assert "2022-12-19 runs on ptrace" in check.detail
    assert check.fix is not None
    assert "runsc-current.sh" in check.fix
    assert Path(check.fix.split()[2]).is_file()


def test_a_runsc_with_systrap_is_ok_and_a_version_without_a_date_says_nothing() -> None:
    check = platform_of_version("runsc version release-20240729.0")
    assert check is not None
    assert check.ok
    assert check.detail == "systrap (2024-07-29)"
    assert platform_of_version("runsc version unknown") is None
