"""Hostile repositories against the real product: a probe row becomes a git repository in
tmp_path, the `fixloop-tui` command runs on it as a user would (a subprocess, the scripted
model server over HTTP, the real sandbox), and everything an attacker could have reached is
collected: the exit code and output, the trail under .fixloop, every branch's git log, host
markers, and what the scripted server and an "attacker" server were sent.

The threat model: the repository (its config, symlinks, conftest, .git/config) and every
model answer are hostile. A row says what the attacker plants and what must come of it; the
checks every row gets (no marker on the host, no request to the attacker, the user's key in
no output, no file, no commit and no prompt, never `ok` unless the row says so) are in
`check`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import git
import pytest

from engine.verify.go_seed import SEED_ARCHIVE
from engine.verify.go_seed_job import build_seed
from tests.conftest import open_backend
from tests.model_server import RecordedRequest, ScriptedModelServer, reply

REPO = Path(__file__).resolve().parents[2]

# Placeholders a row's files, config and answers may hold, filled in per run.
MARKERS = "@MARKERS@"  # a host directory outside the project: hostile scripts write here
ATTACKER = "@ATTACKER@"  # the attacker server's base URL (…/v1)
MODEL = "@MODEL@"  # the scripted (legitimate) server's base URL
CANARY = "@CANARY@"  # a world-readable host file outside the project holding a secret
KEY = "@KEY@"  # the user's API key (a fake canary)
ATTACKER_HOST = "@ATTACKER_HOST@"  # the attacker server's host:port
UP_TO_ROOT = "@UP_TO_ROOT@"  # a relative path from the project's root to the host's /

Backend = Literal["gvisor", "docker"]
ONE: tuple[Backend, ...] = ("gvisor",)  # host-side probes: the backend does not matter
BOTH: tuple[Backend, ...] = ("gvisor", "docker")  # mounts, symlinks, disk, network, timeouts
Command = Literal["run", "verify", "doctor"]


@dataclass(frozen=True)
class Link:
    """A committed symlink."""

    target: str


@dataclass(frozen=True)
class Script:
    """A committed executable file."""

    text: str


FileSpec = str | Link | Script | None  # None: the base project's file is left out


@dataclass(frozen=True)
class Outcome:
    """What must come of a probe. `says`: words that must each appear (case-insensitive) in
    stdout or stderr; `status`: the run's (or verification's) status, exactly; `never`: statuses
    it must not end with; `within`: seconds the command may take; `prompt_says`: words the
    second iteration's prompt (trail iterations/02/prompt.json) must hold; `json`: stdout is one
    valid JSON object; `nothing_started`: no trail written and no model asked."""

    exit: int | None = None
    says: tuple[str, ...] = ()
    status: str | None = None
    never: tuple[str, ...] = ("ok",)
    within: float | None = None
    prompt_says: tuple[str, ...] = ()
    json: bool = False
    nothing_started: bool = False


@dataclass(frozen=True)
class Probe:
    """One hostile repository and what a command on it must do. `files` are over the base
    project (`base`); `config` lines go under its `[tool.fixloop]`; `git_config` is appended to
    .git/config after the commit; `user_config` is the user's own config.toml (trusted);
    `answers` are the scripted model's, in order; `model`: the user names the scripted server
    with --model/--api-base; `sandbox`: the user names the backend with --sandbox; `env`: more
    variables in the user's environment; `go_seed`: fixloop built Go's build-cache seed in the
    user's cache before the command (it must be byte for byte the same after)."""

    name: str
    expect: Outcome
    files: Mapping[str, FileSpec] = field(default_factory=dict)
    config: str = ""
    git_config: str = ""
    user_config: str = ""
    command: Command = "run"
    flags: tuple[str, ...] = ()
    answers: tuple[str, ...] = ()
    model: bool = True
    sandbox: bool = True
    backends: tuple[Backend, ...] = ONE
    base: Mapping[str, FileSpec] | None = None
    env: Mapping[str, str] = field(default_factory=dict)  # more of the user's environment
    go_seed: bool = False  # the user's cache holds Go's build-cache seed, made by fixloop


# The base project: one bug, one test; the answer FIX repairs it.
CALC = {
    "calc.py": "def add(a, b):\n    return a - b\n",
    "test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
}
FIX = {"path": "calc.py", "search": "return a - b", "replace": "return a + b"}


# A script that proves it ran on the host: a marker named for it, with its environment.
def marker_script(name: str, then: str = "") -> Script:
    return Script(f'#!/bin/sh\nenv > "{MARKERS}/{name}"\n{then}\n')


def answer(explanation: str, *edits: Mapping[str, str]) -> str:
    """A model's answer in the json edit format, fenced as models send it."""
    return "```json\n" + json.dumps({"explanation": explanation, "edits": list(edits)}) + "\n```"


def whole_file(path: str, text: str) -> dict[str, str]:
    """An edit that writes `path` whole (created if missing)."""
    return {"path": path, "content": text}


@dataclass
class Seen:
    """Everything a probe's command left behind or sent out."""

    root: Path
    done: subprocess.CompletedProcess[str]
    seconds: float
    result: dict[str, Any] | None  # stdout as JSON, when it is one object
    markers: list[str]  # files hostile scripts wrote on the host
    requests: list[RecordedRequest]  # what the scripted server was asked
    attacker: list[RecordedRequest]  # what the attacker server was asked
    trail: dict[str, bytes]  # every file under the project's .fixloop/
    git_log: str  # every branch's log with patches
    go_seed: tuple[str, str] | None = None  # the seed's digest before and after the command

    @property
    def output(self) -> str:
        return self.done.stdout + self.done.stderr

    @property
    def status(self) -> str | None:
        return None if self.result is None else self.result.get("status")


@dataclass
class Lab:
    """One probe's world: the user's home and config, the host marker directory, the canary
    secret, the user's key, the scripted server and the attacker's."""

    tmp: Path
    server: ScriptedModelServer
    attacker: ScriptedModelServer
    key: str = field(default_factory=lambda: f"sk-fixloop-canary-{uuid.uuid4()}")
    canary_secret: str = field(default_factory=lambda: f"canary-secret-{uuid.uuid4()}")

    def __post_init__(self) -> None:
        self.home = self.tmp / "home"
        self.config_home = self.tmp / "config"
        self.markers = self.tmp / "markers"
        for path in (self.home, self.config_home, self.markers):
            path.mkdir(parents=True, exist_ok=True)
        # The canary lives where the sandbox's user could read it if it ever saw the host's
        # root: directly in the system's temp directory, world-readable.
        handle, name = tempfile.mkstemp(prefix="fixloop-canary-", dir="/tmp")
        os.write(handle, self.canary_secret.encode())
        os.close(handle)
        self.canary = Path(name)
        self.canary.chmod(0o644)

    def close(self) -> None:
        self.canary.unlink(missing_ok=True)

    def fill(self, text: str, root: Path | None = None) -> str:
        if root is not None:
            text = text.replace(UP_TO_ROOT, "/".join([".."] * len(root.parts[1:])))
        return (
            text.replace(MARKERS, str(self.markers))
            .replace(ATTACKER_HOST, self.attacker.url.removeprefix("http://"))
            .replace(ATTACKER, self.attacker.base_url)
            .replace(MODEL, self.server.base_url)
            .replace(CANARY, str(self.canary))
            .replace(KEY, self.key)
        )

    def env(self, more: Mapping[str, str] | None = None) -> dict[str, str]:
        """A clean environment: the user's key, a private home and config; the docker
        backend's engine passed on when the test run names one; then `more`."""
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.config_home),
            "XDG_STATE_HOME": str(self.tmp / "state"),
            "OPENAI_API_KEY": self.key,
            "LANG": "C.UTF-8",
            "PYTHONPATH": str(REPO),  # this checkout's fixloop, run from the user's project
        }
        for name in ("FIXLOOP_DOCKER_URL", "DOCKER_HOST", "XDG_RUNTIME_DIR"):
            if os.environ.get(name):
                env[name] = os.environ[name]
        return {**env, **{key: self.fill(value) for key, value in (more or {}).items()}}

    def write_user_config(self, text: str) -> None:
        if text:
            where = self.config_home / "fixloop"
            where.mkdir(parents=True, exist_ok=True)
            (where / "config.toml").write_text(self.fill(text))

    def cli(
        self,
        *args: str,
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float = 300,
    ) -> tuple[subprocess.CompletedProcess[str], float]:
        """`fixloop-tui ARGS` as the user runs it, from `cwd` (the project: where a user
        starts it, and where a relative path in its config would point); its output and how
        long it took."""
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "tui.cli", *args],
            capture_output=True,
            text=True,
            errors="replace",
            cwd=cwd or REPO,
            env=self.env(env),
            timeout=timeout,
            check=False,
        )
        return done, time.monotonic() - started


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    server = ScriptedModelServer().start()
    attacker = ScriptedModelServer().start()
    # Whatever the attacker is asked, it answers like a model would: a hostile repo that got
    # through must not fail for want of an answer, so its request is recorded and seen.
    attacker.script(*[reply(answer("attacker", FIX))] * 8)
    world = Lab(tmp_path, server, attacker)
    try:
        yield world
    finally:
        world.close()
        server.stop()
        attacker.stop()


def backend_ready(backend: Backend) -> None:
    """Fail (CI) or skip (elsewhere) when the backend a probe names cannot run here."""
    sandbox = open_backend("gvisor" if backend == "gvisor" else "docker-podman", pool_size=0)
    asyncio.run(sandbox.close())


def readable(top: Path) -> None:
    """The sandbox runs as nobody: every directory on the way must be searchable. Symlinks
    are left alone: chmod would follow a hostile one out of the project."""
    for path in [top, *top.rglob("*")]:
        if ".git" not in path.parts and not path.is_symlink():
            path.chmod(0o755 if path.is_dir() else 0o644)


def build_repo(lab: Lab, probe: Probe) -> Path:
    """The probe's repository: the base project with the row's files, committed, readable by
    the sandbox's user; then its .git/config lines (after the commit: nothing of ours runs
    them)."""
    root = lab.tmp / "repos" / probe.name
    root.mkdir(parents=True)
    files: dict[str, FileSpec] = {**(CALC if probe.base is None else probe.base), **probe.files}
    pyproject = "[project]\nname = 'hostile'\nversion = '0'\n"
    if probe.config:
        pyproject += "\n[tool.fixloop]\n" + probe.config.strip() + "\n"
    files.setdefault("pyproject.toml", pyproject)
    for name, spec in files.items():
        if spec is None:
            continue
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(spec, Link):
            path.symlink_to(lab.fill(spec.target, root))
        else:
            path.write_text(lab.fill(spec if isinstance(spec, str) else spec.text, root))
    readable(root.parent)
    for name, spec in files.items():
        if isinstance(spec, Script):
            (root / name).chmod(0o755)
    repo = git.Repo.init(root)
    repo.git.add("-A", "--force")
    repo.index.commit("the hostile repository")
    if probe.git_config:
        with (root / ".git" / "config").open("a") as config:
            config.write(lab.fill(probe.git_config))
    lab.write_user_config(probe.user_config)
    return root


def command_line(lab: Lab, probe: Probe, root: Path, backend: Backend) -> list[str]:
    args: list[str] = [probe.command, str(root)]
    if probe.command == "run":
        args += ["--headless", "--json"]
        if probe.model:
            args += ["--model", "openai/scripted", "--api-base", lab.server.base_url]
    elif probe.command == "verify":
        args += ["--json"]
    if probe.sandbox and probe.command != "doctor":
        args += ["--sandbox", backend]
    return args + [lab.fill(flag) for flag in probe.flags]


def run_probe(lab: Lab, probe: Probe, backend: Backend) -> Seen:
    """Build the probe's repository, script both servers, run its command, collect."""
    root = build_repo(lab, probe)
    lab.server.script(*(reply(lab.fill(text)) for text in probe.answers))
    seed = go_seed(lab, backend) if probe.go_seed else None
    before = digest(seed)
    done, seconds = lab.cli(*command_line(lab, probe, root, backend), cwd=root, env=probe.env)
    seen = collect(lab, root, done, seconds)
    seen.go_seed = None if seed is None else (before, digest(seed))
    return seen


def go_seed(lab: Lab, backend: Backend) -> Path:
    """Go's build-cache seed in the user's cache (~/.cache: HOME is the lab's), built the way
    fixloop builds it: its archive."""

    async def build() -> Path | None:
        sandbox = open_backend("gvisor" if backend == "gvisor" else "docker-podman", pool_size=0)
        try:
            return await build_seed(sandbox, environ={"XDG_CACHE_HOME": str(lab.home / ".cache")})
        finally:
            await sandbox.close()

    where = asyncio.run(build())
    assert where is not None, "fixloop could not build Go's build-cache seed"
    return where / SEED_ARCHIVE


def digest(path: Path | None) -> str:
    return "" if path is None else hashlib.sha256(path.read_bytes()).hexdigest()


def collect(lab: Lab, root: Path, done: subprocess.CompletedProcess[str], seconds: float) -> Seen:
    # Markers first: nothing of ours may run the repository's git configuration before.
    markers = sorted(p.name for p in lab.markers.iterdir())
    try:
        result = json.loads(done.stdout) if done.stdout.strip() else None
    except json.JSONDecodeError:
        result = None
    return Seen(
        root=root,
        done=done,
        seconds=seconds,
        result=result if isinstance(result, dict) else None,
        markers=markers,
        requests=list(lab.server.requests),
        attacker=list(lab.attacker.requests),
        trail=trail_files(root),
        git_log=git_log(root),
    )


def trail_files(root: Path) -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    trail = root / ".fixloop"
    if not trail.is_dir():
        return found
    for path in trail.rglob("*"):
        if path.is_symlink() or not path.is_file():
            continue
        try:
            found[str(path.relative_to(root))] = path.read_bytes()
        except OSError:
            continue
    return found


def git_log(root: Path) -> str:
    """Every branch's commits with their patches, read with the repository's own hooks,
    fsmonitor, filters and diff drivers switched off."""
    done = subprocess.run(
        [
            "git",
            "-C",
            str(root),
            "-c",
            "core.fsmonitor=false",
            "-c",
            "core.hooksPath=/dev/null",
            "log",
            "--all",
            "-p",
            "--no-ext-diff",
            "--no-textconv",
            "--format=%H%n%B",
        ],
        capture_output=True,
        text=True,
        errors="replace",
        check=False,
        env={"PATH": "/usr/bin:/bin", "HOME": str(root.parent), "GIT_CONFIG_NOSYSTEM": "1"},
    )
    return done.stdout


def check(lab: Lab, probe: Probe, seen: Seen) -> None:
    """The row's expected outcome, and what holds for every probe."""
    expect = probe.expect
    where = f"[{probe.name}] exit {seen.done.returncode}, stderr: {seen.done.stderr[-1500:]}"
    assert seen.markers == [], f"hostile code ran on the host: {seen.markers}; {where}"
    if seen.go_seed is not None:
        assert seen.go_seed[0] == seen.go_seed[1], f"Go's build-cache seed changed; {where}"
    assert seen.attacker == [], f"the attacker's endpoint was called; {where}"
    assert_no_secret(lab.key, "the user's key", seen)
    assert_no_secret(lab.canary_secret, "a host file's secret", seen)
    # Output is not a terminal: an escape sequence in it came from an answer.
    assert "\x1b" not in seen.output, f"a terminal escape reached the output; {where}"
    if expect.exit is not None:
        assert seen.done.returncode == expect.exit, where
    for word in expect.says:
        assert word.lower() in seen.output.lower(), f"output does not name {word!r}; {where}"
    if expect.json:
        assert seen.result is not None, f"stdout is not one JSON object: {seen.done.stdout[:500]!r}"
    if expect.status is not None:
        assert seen.status == expect.status, where
    if seen.status is not None:
        assert seen.status not in expect.never, f"the run ended {seen.status}; {where}"
    if expect.within is not None:
        assert seen.seconds < expect.within, f"took {seen.seconds:.0f} s; {where}"
    if expect.nothing_started:
        assert seen.requests == [], f"the model was asked; {where}"
        assert not seen.trail, f"a trail was written: {sorted(seen.trail)[:5]}; {where}"
    if expect.prompt_says:
        prompt = second_prompt(seen)
        for word in expect.prompt_says:
            assert word.lower() in prompt.lower(), f"iteration 2's prompt misses {word!r}"


def assert_no_secret(secret: str, what: str, seen: Seen) -> None:
    assert secret not in seen.done.stdout, f"{what} is in stdout"
    assert secret not in seen.done.stderr, f"{what} is in stderr"
    assert secret not in seen.git_log, f"{what} is in git log"
    leaked = [name for name, data in seen.trail.items() if secret.encode() in data]
    assert leaked == [], f"{what} is in the trail: {leaked}"
    asked = [r.path for r in seen.requests if secret in json.dumps(r.body)]
    assert asked == [], f"{what} was sent to the model in a prompt"


def second_prompt(seen: Seen) -> str:
    """Iteration 2's prompt as the trail recorded it (iterations/02/prompt.json)."""
    found = [name for name in seen.trail if name.endswith("iterations/02/prompt.json")]
    assert found, f"no iterations/02/prompt.json in the trail: {sorted(seen.trail)[:40]}"
    return seen.trail[found[0]].decode(errors="replace")
