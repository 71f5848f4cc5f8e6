"""Git as fixloop runs it on the host: never running a program the repository's config names
(`host_git_env`), without the user's hooks, failures as `WorkspaceError`, scratch index files,
and the bookkeeping of run worktrees and branches.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import git

from engine.errors import WorkspaceError
from engine.text.redact import redact
from engine.text.untrusted import printable

# The user's hooks must not run (or prompt) for the loop's own bookkeeping.
_NO_HOOKS = ("-c", f"core.hooksPath={os.devnull}")


# Set on every git call, whoever's config says otherwise: fsmonitor would run a program on
# every index refresh, hooks run on commits and checkouts. fixloop's bookkeeping wants
# neither, from the repository or from the user.
_ALWAYS = (("core.fsmonitor", "false"), ("core.hooksPath", os.devnull))
# Config keys whose value git runs as a program, and what each is set to when the repository
# names one. An empty command runs nothing: for clean/smudge/process it is no filter (the
# content goes through as stored); for textconv or an external diff git fails instead, and
# fixloop's own diffs pass --no-ext-diff --no-textconv. A merge driver becomes `false`, the
# host's: the file is a conflict, so an accept that needs it is refused and the branch kept.
_PROGRAM_KEYS = (
    (re.compile(r"filter\..+\.(?:clean|smudge|process)"), ""),
    (re.compile(r"diff\..+\.(?:textconv|command)"), ""),
    (re.compile(r"diff\.external"), ""),
    (re.compile(r"merge\..+\.driver"), "false"),
    (re.compile(r"core\.(?:sshcommand|editor|askpass|gitproxy)"), ""),
    (re.compile(r"sequence\.editor"), ""),
    (re.compile(r"core\.pager"), "cat"),
    (re.compile(r"pager\..+"), "false"),
    (re.compile(r"credential\.(?:.+\.)?helper"), ""),
    (re.compile(r"gpg\.(?:.+\.)?program|gpg\.ssh\.defaultkeycommand"), ""),
)
_FILTER_DRIVER = re.compile(r"filter\.(.+)\.(?:clean|smudge|process)")
# Scopes the repository writes: its .git/config (and what that includes), config.worktree.
_REPOSITORY_SCOPES = frozenset({"local", "worktree"})
_CONFIG_SECONDS = 30.0


def host_git_env(cwd: Path) -> dict[str, str]:
    """The environment variables that make git in `cwd` run no program the repository names.

    They are git's GIT_CONFIG_COUNT/KEY_n/VALUE_n, which act like `-c` and win over every
    config file: `_ALWAYS`, and every key of `_PROGRAM_KEYS` that the repository's own
    config sets (a hostile repository controls .git/config, and the model edits the scripts
    it would name), or that the user's config sets to a relative program (`./lint.sh`: a
    file of the worktree). A filter driver neutralized here is also made not `required`,
    so the file goes through as stored (`required_filters` refuses a run that needs one).
    Reading the config runs nothing; the user's other settings are kept, and variables the
    user already set this way come first (later ones win)."""
    return config_env(_neutral_config(cwd), os.environ)


def _neutral_config(cwd: Path) -> dict[str, str]:
    overrides = dict(_ALWAYS)
    for scope, key, value in _config_entries(cwd):
        if scope not in _REPOSITORY_SCOPES and not _relative_program(value):
            continue
        for pattern, neutral in _PROGRAM_KEYS:
            if pattern.fullmatch(key.lower()):
                overrides[key] = neutral
                if driver := _FILTER_DRIVER.fullmatch(key):
                    overrides[f"filter.{driver.group(1)}.required"] = "false"
    return overrides


def config_env(overrides: Mapping[str, str], environ: Mapping[str, str]) -> dict[str, str]:
    """`overrides` as GIT_CONFIG_COUNT/KEY_n/VALUE_n after those already in `environ`."""
    try:
        start = int(environ.get("GIT_CONFIG_COUNT", "0"))
    except ValueError:
        start = 0
    env = {"GIT_CONFIG_COUNT": str(start + len(overrides))}
    for index, (key, value) in enumerate(overrides.items(), start=start):
        env[f"GIT_CONFIG_KEY_{index}"] = key
        env[f"GIT_CONFIG_VALUE_{index}"] = value
    return env


def required_filters(cwd: Path, rev: str = "HEAD") -> list[str]:
    """The filter drivers `host_git_env` neutralizes though the config marks them `required`
    and a file of `rev` names them (e.g. a repository-local git-lfs): a run there would
    commit the files unfiltered, so it is refused instead."""
    neutral = _neutral_config(cwd)
    required = {
        driver.group(1)
        for key in neutral
        if (driver := re.fullmatch(r"filter\.(.+)\.required", key))
        and _config_true(cwd, f"filter.{driver.group(1)}.required")
    }
    if not required:
        return []
    paths = git_bytes(cwd, "ls-tree", "-r", "-z", "--name-only", rev)
    done = subprocess.run(
        ["git", "check-attr", "--stdin", "-z", "filter"],
        cwd=cwd,
        input=paths,
        capture_output=True,
        env={**os.environ, **config_env(neutral, os.environ)},
        check=False,
    )
    fields = done.stdout.decode("utf-8", "surrogateescape").split("\0")
    used = {fields[at + 2] for at in range(0, len(fields) - 2, 3)}
    return sorted(required & used)


def _config_true(cwd: Path, key: str) -> bool:
    done = subprocess.run(
        ["git", "config", "--type=bool", "--get", key],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, **config_env(dict(_ALWAYS), os.environ)},
        check=False,
    )
    return done.stdout.strip() == "true"


def _config_entries(cwd: Path) -> list[tuple[str, str, str]]:
    """(scope, key, value) of every config entry git sees in `cwd`, includes followed; none
    where git cannot read them (no such directory)."""
    try:
        done = subprocess.run(
            ["git", "config", "--show-scope", "--includes", "--null", "--list"],
            cwd=cwd,
            capture_output=True,
            env={**os.environ, **config_env(dict(_ALWAYS), os.environ)},
            timeout=_CONFIG_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    fields = done.stdout.decode("utf-8", "surrogateescape").split("\0")
    entries = []
    for scope, entry in zip(fields[0::2], fields[1::2], strict=False):
        key, _, value = entry.partition("\n")
        entries.append((scope, key, value))
    return entries


def _relative_program(command: str) -> bool:
    """Whether a command's program is a path relative to where git runs (`./x`, `tools/x`)."""
    program = command.strip().split(maxsplit=1)[0] if command.strip() else ""
    return "/" in program and not program.startswith(("/", "~"))


def git_subprocess_env(cwd: Path) -> dict[str, str]:
    """The whole environment for a `git` subprocess in `cwd`: the user's, plus `host_git_env`."""
    return {**os.environ, **host_git_env(cwd)}


@contextmanager
def open_repo(path: Path) -> Iterator[git.Repo]:
    """A GitPython `Repo` whose git processes (cat-file, diff, ...) get `host_git_env`;
    closed on leaving, in the caller's thread (one left to the garbage collector stops its
    helper processes, and waits for them, in whichever thread collects it)."""
    with git.Repo(path) as repo:
        repo.git.update_environment(**host_git_env(Path(repo.working_dir or path)))
        yield repo


def commit_message(text: str) -> str:
    """A commit message as git gets it: keys redacted as in the trail (a model may echo
    one in its explanation), no escape sequence or control character (`git log` prints
    them to a terminal), and nothing git's argv cannot carry (a lone surrogate)."""
    return redact(printable(text))


@contextmanager
def scratch_index(copy_of: Path | None = None) -> Iterator[dict[str, str]]:
    """An environment pointing git at a throwaway index file (optionally a copy of another)."""
    with tempfile.TemporaryDirectory(prefix="fixloop-index-") as scratch:
        index = Path(scratch) / "index"
        if copy_of is not None and copy_of.is_file():
            shutil.copyfile(copy_of, index)
        yield {"GIT_INDEX_FILE": str(index)}


def run_git(
    cwd: Path, *args: str, env: Mapping[str, str] | None = None, ok: tuple[int, ...] = (0,)
) -> tuple[int, bytes]:
    """Run git in `cwd` without the user's hooks or any program the repository's config names
    (`host_git_env`); a status outside `ok` is a WorkspaceError."""
    status, out, err = git.Git(str(cwd)).execute(
        [str(git.Git.GIT_PYTHON_GIT_EXECUTABLE), *_NO_HOOKS, *args],
        with_extended_output=True,
        with_exceptions=False,
        stdout_as_string=False,
        strip_newline_in_stdout=False,
        env={**host_git_env(cwd), **(env or {})},
    )
    if status not in ok:
        detail = err.strip().splitlines()[-1] if err.strip() else f"exit status {status}"
        raise WorkspaceError(f"`git {' '.join(args[:2])}` failed in {cwd}: {detail}")
    return status, out


def git_bytes(cwd: Path, *args: str, env: Mapping[str, str] | None = None) -> bytes:
    return run_git(cwd, *args, env=env)[1]


def git_text(cwd: Path, *args: str, env: Mapping[str, str] | None = None) -> str:
    return os.fsdecode(git_bytes(cwd, *args, env=env)).rstrip("\n")


def git_ok(cwd: Path, *args: str) -> bool:
    """Whether a git query answers yes (exit 0); any other status means no."""
    return run_git(cwd, *args, ok=tuple(range(256)))[0] == 0


def nul_paths(out: bytes) -> list[str]:
    """NUL-separated git output as paths (undecodable bytes survive a round trip)."""
    return [os.fsdecode(item) for item in out.split(b"\0") if item]


def commit_of(cwd: Path, rev: str) -> str:
    status, out = run_git(cwd, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", ok=(0, 1))
    if status != 0:
        raise WorkspaceError(f"{rev!r} is not a commit in {cwd}; name a commit of the run")
    return out.decode().strip()


def tree_of(cwd: Path, rev: str) -> str:
    return git_text(cwd, "rev-parse", "--verify", f"{rev}^{{tree}}")


def remove_worktree(project: Path, root: Path) -> None:
    if root.is_dir() and root.resolve() in registered_worktrees(project):
        git_bytes(project, "worktree", "remove", "--force", "--force", str(root))
    elif root.exists():  # a leftover directory git no longer knows about
        shutil.rmtree(root)
    git_bytes(project, "worktree", "prune")


def delete_branch(project: Path, branch: str) -> None:
    if git_ok(project, "show-ref", "--verify", "--quiet", f"refs/heads/{branch}"):
        git_bytes(project, "branch", "--quiet", "-D", branch)


def registered_worktrees(project: Path) -> list[Path]:
    out = git_bytes(project, "worktree", "list", "--porcelain", "-z")
    return [
        Path(os.fsdecode(line.removeprefix(b"worktree "))).resolve()
        for line in out.split(b"\0")
        if line.startswith(b"worktree ")
    ]
