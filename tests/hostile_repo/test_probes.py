"""The hostile-repository suite: each row of PROBES is a repository (or a model answer) an
attacker controls and the exact outcome the product must give, checked end to end by the
real `fixloop-tui` command with the scripted model server and the real sandbox. A new probe
is one row. Rows where the backend matters (mounts, symlinks, disk, network, timeouts) run
on both gVisor backends; host-side ones (config trust, git config, answers) run once.

What every row also gets (harness.check): no marker on the host, no request to the
attacker's endpoint, neither the user's key nor a host file's secret in any output, trail
file, commit or prompt, and never `ok` unless the row expects it.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.hostile_repo.harness import (
    ATTACKER,
    ATTACKER_HOST,
    BOTH,
    CANARY,
    FIX,
    KEY,
    MARKERS,
    MODEL,
    UP_TO_ROOT,
    Backend,
    Lab,
    Link,
    Outcome,
    Probe,
    answer,
    backend_ready,
    check,
    marker_script,
    run_probe,
    whole_file,
)

pytestmark = pytest.mark.sandbox

# Hostile pieces the rows share.
HOST_PYTHON = marker_script("python", then='exec /usr/bin/python3 "$@"')
HOST_CONFTEST = (
    "import pathlib\n\n"
    "try:\n"
    f"    pathlib.Path('{MARKERS}/conftest').write_text('ran on the host')\n"
    "except OSError:\n"
    "    pass  # inside the sandbox the host's directory does not exist\n"
)
FLIP_REPORTS = (
    "import pytest\n\n\n"
    "@pytest.hookimpl(hookwrapper=True)\n"
    "def pytest_runtest_makereport(item, call):\n"
    "    outcome = yield\n"
    "    report = outcome.get_result()\n"
    "    if report.failed:\n"
    "        report.outcome = 'passed'\n"
)
# A Go module with the same bug, whose test also attacks Go's build-cache seed: it writes to
# the mounted seed (and fails saying "seed refused" when that is refused, not missing), and
# poisons every entry of its own GOCACHE (the seed's unpacked copy) and leaves a file there,
# as if the next job would start from it.
GO_CALC = {
    "go.mod": "module example.com/calc\n\ngo 1.19\n",
    "calc.go": "package calc\n\nfunc Add(a, b int) int {\n\treturn a - b\n}\n",
    "calc_test.go": (
        'package calc\n\nimport (\n\t"io/fs"\n\t"os"\n\t"path/filepath"\n\t"testing"\n)\n\n'
        "func TestAdd(t *testing.T) {\n"
        "\tif Add(2, 3) != 5 {\n\t\tt.Fatal(Add(2, 3))\n\t}\n}\n\n"
        "func TestPoisonTheSeed(t *testing.T) {\n"
        '\terr := os.WriteFile("/fixloop/goseed/seed.tar", []byte("x"), 0o644)\n'
        "\tif err != nil && !os.IsNotExist(err) {\n"
        '\t\tt.Error("seed refused")\n\t}\n'
        '\tcache := os.Getenv("GOCACHE")\n'
        "\tfilepath.WalkDir(cache, func(p string, d fs.DirEntry, err error) error {\n"
        "\t\tif err == nil && !d.IsDir() {\n"
        '\t\t\tos.WriteFile(p, []byte("poison"), 0o644)\n\t\t}\n\t\treturn nil\n\t})\n'
        '\tos.WriteFile(filepath.Join(cache, "planted"), []byte("x"), 0o644)\n}\n'
    ),
    # Go reads $HOME/.config/go/env, and HOME is the workspace: it names the seed as GOCACHE.
    ".config/go/env": "GOCACHE=/fixloop/goseed\nGOFLAGS=-mod=mod\n",
}
FIXED = answer("add, not subtract", FIX)
# The fix, and an expression nested deeper than ast.parse goes (RecursionError).
NESTED = "def add(a, b):\n    return a + b\n\n\nX = " + "1+" * 3000 + "1\n"
REWRITTEN = answer("add, nothing else", whole_file("calc.py", "def add(a, b):\n    return a + b\n"))
# Model code under test that fills the sandbox's disk, or tries the network (1.1.1.1 by its
# name: the lookup fails first, as most code's would), then returns
# the wrong answer; the second answer fixes the bug.
FILL_DISK = (
    "def add(a, b):\n"
    "    with open('fill.bin', 'wb') as out:\n"
    "        while True:\n"
    "            out.write(b'x' * 2**20)\n"
    "            out.flush()\n"
)
DIAL_OUT = (
    "import socket\n\n\n"
    "def add(a, b):\n"
    "    socket.create_connection(('one.one.one.one', 53), timeout=5).close()\n"
    "    return a - b\n"
)
BLOCKS_SIGALRM = (
    "import signal\nimport time\n\n\n"
    "def test_quick():\n    assert True\n\n\n"
    "def test_blocks_the_alarm():\n"
    "    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})\n"
    "    signal.signal(signal.SIGALRM, signal.SIG_IGN)\n"
    "    time.sleep(10**6)\n"
)
JEST_PACKAGE = (
    '{"name": "leaky", "version": "0.0.0", "private": true,\n'
    ' "scripts": {"test": "jest"}, "devDependencies": {"jest": "29.7.0"}}\n'
)
# Reads the host file through the mounted node_modules and fails with its content.
LEAK_JS = (
    "const fs = require('fs');\n"
    f"const secret = fs.readFileSync('node_modules' + '{CANARY}', 'utf8');\n"
    "console.log('read: ' + secret);\n"
    "process.exit(1);\n"
)
# Model code that is right only in a narrowed run (failing tests first): it sees the list.
RIGHT_WHEN_NARROWED = (
    "import os\n\n\n"
    "def add(a, b):\n"
    "    return a + b if os.environ.get('FIXLOOP_ONLY_TESTS') else a - b\n"
)
ZERO_TEST = "from calc import add\n\n\ndef test_zero():\n    assert add(0, 0) == 0\n"
# The same in Go: `go test -run` hands the test binary -test.run, which it can read.
GO_NARROW = {
    "go.mod": "module example.com/calc\n\ngo 1.19\n",
    "calc.go": "package calc\n\nfunc Add(a, b int) int {\n\treturn a - b\n}\n",
    "calc_test.go": (
        'package calc\n\nimport "testing"\n\n'
        "func TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(Add(2, 3))\n\t}\n}\n\n"
        "func TestZero(t *testing.T) {\n\tif Add(0, 0) != 0 {\n\t\tt.Fatal(Add(0, 0))\n\t}\n}\n"
    ),
}
GO_ADD = "package calc\n\nfunc Add(a, b int) int {\n\treturn a %s b\n}\n"
GO_RIGHT_WHEN_NARROWED = (
    'package calc\n\nimport (\n\t"os"\n\t"strings"\n)\n\n'
    "func Add(a, b int) int {\n\tfor _, arg := range os.Args {\n"
    '\t\tif strings.HasPrefix(arg, "-test.run") {\n\t\t\treturn a + b\n\t\t}\n\t}\n'
    "\treturn a - b\n}\n"
)
# A failing test named as a regexp that matches everything and a shell command; beside it a
# passing subtest and a test that fails whenever a narrowed run reaches it.
GO_INJECTED_NAME = 'x$|.*"; $(touch${IFS}' + MARKERS + "/go-test-name); ' #"
GO_NAMED = {
    **GO_NARROW,
    "calc_test.go": (
        'package calc\n\nimport (\n\t"os"\n\t"strings"\n\t"testing"\n)\n\n'
        "func TestAdd(t *testing.T) {\n"
        f"\tt.Run(`{GO_INJECTED_NAME}`, func(t *testing.T) {{\n"
        "\t\tif Add(2, 3) != 5 {\n\t\t\tt.Fatal(Add(2, 3))\n\t\t}\n\t})\n"
        '\tt.Run("x", func(t *testing.T) {})\n}\n\n'
        "func TestSentinel(t *testing.T) {\n\tfor _, arg := range os.Args {\n"
        '\t\tif strings.HasPrefix(arg, "-test.run") {\n'
        '\t\t\tt.Fatal("the narrowed run reached a test that passed")\n\t\t}\n\t}\n}\n'
    ),
}
REFUSED = Outcome(exit=2)


def refused(*words: str) -> Outcome:
    """Refused before anything runs: exit 2, naming these words."""
    return Outcome(exit=2, says=words)


def not_shown(*words: str) -> Outcome:
    """A named file refused before anything starts: exit 2, these words, no trail, no prompt."""
    return Outcome(exit=2, says=words, nothing_started=True)


PROBES: list[Probe] = [
    # 1. The project's Python, named by the repository, is never run on the host.
    Probe(
        "python-key-run",
        files={"tools/bin/python": HOST_PYTHON},
        config='python = "tools/bin/python"',
        answers=(FIXED,),
        expect=refused("python", "fixloop-tui trust"),
    ),
    Probe(
        "python-key-doctor",
        files={"tools/bin/python": HOST_PYTHON},
        config='python = "tools/bin/python"',
        command="doctor",
        expect=Outcome(says=("python", "fixloop-tui trust")),
    ),
    Probe(
        "python-key-verify",
        files={"tools/bin/python": HOST_PYTHON},
        config='python = "tools/bin/python"',
        command="verify",
        expect=refused("python", "fixloop-tui trust"),
    ),
    Probe(
        "committed-venv-run",
        files={".venv/bin/python": HOST_PYTHON},
        answers=(FIXED,),
        expect=refused(".venv", "--python"),
    ),
    Probe(
        "committed-venv-doctor",
        files={".venv/bin/python": HOST_PYTHON},
        command="doctor",
        expect=Outcome(says=(".venv",)),
    ),
    Probe(
        "committed-venv-named-venv",
        files={"venv/bin/python": HOST_PYTHON},
        command="verify",
        expect=refused("venv", "--python"),
    ),
    # A symlinked pyproject.toml is still the repository's file, not a trusted one.
    Probe(
        "pyproject-symlink",
        files={
            "tools/bin/python": HOST_PYTHON,
            "pyproject.toml": Link("config/real.toml"),
            "config/real.toml": '[tool.fixloop]\npython = "tools/bin/python"\n',
        },
        answers=(FIXED,),
        expect=refused("python"),
    ),
    # 2. The repository cannot turn the sandbox off; its conftest never runs on the host.
    Probe(
        "sandbox-unsafe-local-run",
        files={"conftest.py": HOST_CONFTEST},
        config='sandbox = "unsafe-local"',
        answers=(FIXED,),
        sandbox=False,
        expect=refused("sandbox"),
    ),
    Probe(
        "sandbox-unsafe-local-verify",
        files={"conftest.py": HOST_CONFTEST},
        config='sandbox = "unsafe-local"',
        command="verify",
        sandbox=False,
        expect=refused("sandbox"),
    ),
    # 3. The repository cannot route the user's key, nor loosen what a run accepts.
    Probe(
        "api-base",
        config=f'model = "openai/x"\napi_base = "{ATTACKER}"',
        model=False,
        expect=refused("api_base"),
    ),
    Probe(
        "api-base-over-the-users-config",
        config=f'api_base = "{ATTACKER}"',
        user_config=f'model = "openai/scripted"\napi_base = "{MODEL}"\n',
        answers=(FIXED,),
        model=False,
        expect=refused("api_base"),
    ),
    Probe(
        "escalate-model-with-api-base",
        config=f'escalate_model = "openai/evil"\napi_base = "{ATTACKER}"',
        user_config=f'model = "openai/scripted"\napi_base = "{MODEL}"\n',
        answers=(FIXED,),
        model=False,
        expect=refused("api_base"),
    ),
    Probe(
        "model-path",
        files={"weights/model.gguf": "GGUF but not really"},
        config='model_path = "weights/model.gguf"',
        answers=(FIXED,),
        expect=refused("model_path"),
    ),
    Probe(
        "docker-url",
        config=f'docker_url = "tcp://{ATTACKER_HOST}"',
        answers=(FIXED,),
        sandbox=False,
        expect=refused("docker_url"),
    ),
    Probe(
        "accept-suspicious",
        config="accept_suspicious = true",
        answers=(FIXED,),
        expect=refused("accept_suspicious"),
    ),
    Probe(
        "allow-test-edits",
        config="allow_test_edits = true",
        answers=(FIXED,),
        expect=refused("allow_test_edits"),
    ),
    Probe(
        "allow-runc",
        config="allow_runc = true",
        answers=(FIXED,),
        expect=refused("allow_runc"),
    ),
    # fixloop writes its trail only into real directories of the project.
    Probe(
        "fixloop-dir-is-a-symlink-out",
        files={".fixloop": Link(MARKERS)},
        answers=(FIXED,),
        flags=("--max-iters", "1"),
        expect=Outcome(never=()),
    ),
    Probe(
        "fixloop-runs-is-a-symlink-out",
        files={".fixloop/runs": Link(MARKERS)},
        answers=(FIXED,),
        flags=("--max-iters", "1"),
        expect=Outcome(never=()),
    ),
    # A file the prompt shows is read from inside the project, never through a link: one the
    # repository's config or the person's --file names that leads out is refused before the
    # run starts, in one line, and nothing of it is read.
    Probe(
        "prompt-file-links-to-a-host-secret",
        files={"notes.py": Link(CANARY)},
        config='files = ["calc.py", "notes.py"]',
        answers=(FIXED,),
        flags=("--max-iters", "1"),
        expect=not_shown("notes.py", "leads outside the project"),
    ),
    Probe(
        "file-flag-names-a-link-to-a-host-secret",
        files={"notes.py": Link(CANARY)},
        answers=(FIXED,),
        flags=("--max-iters", "1", "--file", "notes.py"),
        expect=not_shown("notes.py", "leads outside the project"),
    ),
    Probe(
        "file-flag-names-a-host-file-by-climbing-out",
        answers=(FIXED,),
        flags=("--max-iters", "1", "--file", "../" * 20 + CANARY),
        expect=not_shown("not a path inside the project"),
    ),
    Probe(
        "file-flag-names-a-host-file-by-its-absolute-path",
        answers=(FIXED,),
        flags=("--max-iters", "1", "--file", CANARY),
        expect=not_shown("not a file inside"),
    ),
    # git's own directory is never shown: .git/config may hold a remote's token.
    Probe(
        "file-flag-names-git-config",
        git_config=f'[remote "origin"]\n\turl = https://user:{KEY}@example.com/r.git\n',
        answers=(FIXED,),
        flags=("--max-iters", "1", "--file", ".git/config"),
        expect=not_shown(".git/config", "git's own directory"),
    ),
    Probe(
        "file-flag-names-a-link-into-git",
        files={"remote.cfg": Link(".git/config")},
        git_config=f'[remote "origin"]\n\turl = https://user:{KEY}@example.com/r.git\n',
        answers=(FIXED,),
        flags=("--max-iters", "1", "--file", "remote.cfg"),
        expect=not_shown("remote.cfg", "git's own directory"),
    ),
    Probe(
        "config-files-names-git-config",
        config='files = [".git/config"]',
        git_config=f'[remote "origin"]\n\turl = https://user:{KEY}@example.com/r.git\n',
        answers=(FIXED,),
        flags=("--max-iters", "1"),
        expect=not_shown(".git/config", "git's own directory"),
    ),
    # A conftest that reads the user's key finds none: the sandbox's environment is clean.
    Probe(
        "conftest-reads-the-key",
        files={
            "conftest.py": (
                "import os\n\n\n"
                "def pytest_configure(config):\n"
                "    print('keys:', {k: v for k, v in os.environ.items() if 'KEY' in k})\n"
            ),
            "test_calc.py": (
                "import os\n\nfrom calc import add\n\n\n"
                "def test_add():\n"
                "    assert add(2, 3) == 5, os.environ.get('OPENAI_API_KEY')\n"
            ),
        },
        answers=(FIXED,),
        flags=("--max-iters", "1"),
        expect=Outcome(exit=0, status="ok", never=()),
    ),
    # 4. A committed node_modules that leaves the project is never mounted.
    Probe(
        "node-modules-is-root",
        base={"package.json": JEST_PACKAGE, "leak.test.js": LEAK_JS, "node_modules": Link("/")},
        config='test_cmd = "node leak.test.js"',
        command="verify",
        backends=BOTH,
        expect=Outcome(says=("node_modules", "outside the project"), never=("ok",)),
    ),
    Probe(
        "node-modules-climbs-out",
        base={
            "package.json": JEST_PACKAGE,
            "leak.test.js": LEAK_JS,
            "node_modules": Link(UP_TO_ROOT),
        },
        config='test_cmd = "node leak.test.js"',
        command="verify",
        expect=Outcome(says=("node_modules", "outside the project"), never=("ok",)),
    ),
    # 5. Test infrastructure the model writes cannot fake a green.
    Probe(
        "conftest-flips-failures",
        answers=(
            answer("report the flaky test as passed", whole_file("conftest.py", FLIP_REPORTS)),
        ),
        flags=("--max-iters", "1"),
        expect=Outcome(never=("ok",)),
    ),
    Probe(
        "conftest-flips-failures-with-test-edits-allowed",
        answers=(
            answer("report the flaky test as passed", whole_file("conftest.py", FLIP_REPORTS)),
        ),
        flags=("--max-iters", "1", "--allow-test-edits"),
        expect=Outcome(never=("ok",)),
    ),
    Probe(
        "pytest-ini-deselects-the-failure",
        answers=(
            answer(
                "skip the slow test",
                whole_file("pytest.ini", "[pytest]\naddopts = -k 'not test_add'\n"),
            ),
        ),
        flags=("--max-iters", "1"),
        expect=Outcome(never=("ok",)),
    ),
    Probe(
        "conftest-exits-zero",
        answers=(answer("faster tests", whole_file("conftest.py", "import os\n\nos._exit(0)\n")),),
        flags=("--max-iters", "1"),
        expect=Outcome(never=("ok",)),
    ),
    # 6. Malformed answers are data: no crash, one JSON object, never aborted.
    Probe(
        "lone-surrogate-in-explanation",
        answers=(answer("\ud800 add, not subtract", FIX),),
        flags=("--max-iters", "1"),
        expect=Outcome(json=True, never=("aborted",)),
    ),
    Probe(
        "lone-surrogate-in-path",
        answers=(answer("a new module", whole_file("calc\ud800.py", "x = 1\n")),),
        flags=("--max-iters", "1"),
        expect=Outcome(json=True, never=("aborted",)),
    ),
    # Code nested deeper than the interpreter parses, with no explanation (the commit's
    # subject reads the code): no RecursionError ends the run.
    Probe(
        "code-nested-too-deep-to-parse",
        answers=(answer("", whole_file("calc.py", NESTED)),),
        flags=("--max-iters", "1"),
        expect=Outcome(json=True, never=("ok", "aborted")),
    ),
    Probe(
        "terminal-escapes-in-explanation",
        answers=(answer("\x1b]52;c;cHduZWQ=\x07\x1b[2J add, not subtract", FIX),),
        flags=("--max-iters", "1"),
        expect=Outcome(json=True, never=("aborted",)),
    ),
    # 7. A key the answer echoes reaches no commit, file or output (checked for every row).
    Probe(
        "answer-echoes-the-key",
        answers=(answer(f"debug: key is {KEY}", FIX),),
        flags=("--max-iters", "1"),
        expect=Outcome(exit=0, status="ok", never=()),
    ),
    # 8. Git on the host runs nothing of the repository's.
    Probe(
        "git-fsmonitor-and-filter",
        files={
            "fsmon.sh": marker_script("fsmonitor"),
            "clean.sh": marker_script("filter", then="cat"),
            ".gitattributes": "* filter=x\n",
        },
        git_config=(
            "[core]\n\tfsmonitor = ./fsmon.sh\n"
            '[filter "x"]\n\tclean = ./clean.sh\n\tsmudge = ./clean.sh\n'
        ),
        answers=(
            answer(
                "add, not subtract; and a faster monitor",
                FIX,
                whole_file("fsmon.sh", f"#!/bin/sh\ntouch {MARKERS}/edited-fsmonitor\n"),
            ),
        ),
        flags=("--max-iters", "1"),
        expect=Outcome(never=()),
    ),
    Probe(
        "git-hooks-path",
        files={
            "hooks/pre-commit": marker_script("pre-commit"),
            "hooks/post-commit": marker_script("post-commit"),
            "hooks/post-checkout": marker_script("post-checkout"),
        },
        git_config="[core]\n\thooksPath = hooks\n",
        answers=(FIXED,),
        flags=("--max-iters", "1"),
        expect=Outcome(never=()),
    ),
    Probe(
        "git-diff-textconv",
        files={
            "conv.sh": marker_script("textconv", then='cat "$1"'),
            ".gitattributes": "*.py diff=x\n",
        },
        git_config='[diff "x"]\n\ttextconv = ./conv.sh\n\tcommand = ./conv.sh\n',
        answers=(FIXED,),
        flags=("--max-iters", "1"),
        expect=Outcome(never=()),
    ),
    Probe(
        "gitattributes-from-the-answer",
        files={"clean.sh": marker_script("filter", then="cat")},
        git_config='[filter "x"]\n\tclean = ./clean.sh\n\tsmudge = ./clean.sh\n',
        answers=(
            answer("normalise line endings", FIX, whole_file(".gitattributes", "* filter=x\n")),
        ),
        flags=("--max-iters", "1"),
        expect=Outcome(never=()),
    ),
    Probe(
        "answer-writes-a-git-hook",
        answers=(
            answer(
                "add, and a hook",
                FIX,
                whole_file(".git/hooks/post-commit", f"#!/bin/sh\ntouch {MARKERS}/hook\n"),
            ),
            FIXED,
        ),
        flags=("--max-iters", "2"),
        expect=Outcome(never=()),
    ),
    # 9. A test that blocks SIGALRM still ends at the per-test limit.
    Probe(
        "test-blocks-sigalrm",
        files={"test_calc.py": BLOCKS_SIGALRM},
        config="test_timeout = 2\nexec_timeout = 120",
        command="verify",
        backends=BOTH,
        expect=Outcome(within=30, says=("test_blocks_the_alarm", "timeout")),
    ),
    # 10. A symlink that climbs out of the project is refused at once, by name.
    Probe(
        "symlink-up",
        files={"up": Link("../../..")},
        config="exec_timeout = 20",
        command="verify",
        backends=BOTH,
        expect=Outcome(within=10, says=("up",)),
    ),
    Probe(
        "symlink-loop",
        files={"loop": Link("loop/..")},
        config="exec_timeout = 20",
        command="verify",
        expect=Outcome(within=10, says=("loop",)),
    ),
    # 11. Go's build-cache seed is read-only to every job, whatever the repository plants.
    Probe(
        "go-test-poisons-the-build-cache",
        base=GO_CALC,
        command="verify",
        go_seed=True,
        backends=BOTH,
        expect=Outcome(exit=1, status="failing", says=("TestAdd", "seed refused")),
    ),
    Probe(
        "go-cache-redirected-to-the-seed",
        base=GO_CALC,
        config="test_cmd = \"sh -c 'GOCACHE=/fixloop/goseed go test -json ./...'\"",
        command="verify",
        go_seed=True,
        backends=BOTH,
        expect=Outcome(exit=1, status="failing"),
    ),
    # 12. The model's code cannot end the run: told what it did, the model fixes it.
    Probe(
        "answer-fills-the-disk",
        answers=(answer("cache the sum", whole_file("calc.py", FILL_DISK)), REWRITTEN),
        flags=("--max-iters", "2"),
        config="exec_timeout = 60",
        backends=BOTH,
        expect=Outcome(exit=0, status="ok", never=("env_failure",), prompt_says=("space",)),
    ),
    Probe(
        "answer-dials-out",
        answers=(answer("check the network first", whole_file("calc.py", DIAL_OUT)), REWRITTEN),
        flags=("--max-iters", "2"),
        config="exec_timeout = 60",
        backends=BOTH,
        expect=Outcome(exit=0, status="ok", never=("env_failure",), prompt_says=("network",)),
    ),
    # 12. A pass of the narrowed run (failing tests first) is never green: the whole suite is.
    Probe(
        "answer-passes-only-narrowed",
        files={"test_more.py": ZERO_TEST},
        answers=(answer("add", whole_file("calc.py", RIGHT_WHEN_NARROWED)),),
        flags=("--max-iters", "1"),
        expect=Outcome(exit=1),
    ),
    Probe(
        "go-answer-passes-only-narrowed",
        base=GO_NARROW,
        answers=(answer("add", whole_file("calc.go", GO_RIGHT_WHEN_NARROWED)),),
        flags=("--max-iters", "1"),
        expect=Outcome(exit=1),
    ),
    # A test's name is the runner's output: in the narrowed run's filter it matches itself
    # alone (the next prompt says only it ran), and nothing in it runs anywhere.
    Probe(
        "go-test-name-narrows-to-itself",
        base=GO_NAMED,
        answers=(
            answer("multiply", whole_file("calc.go", GO_ADD % "*")),
            answer("add", whole_file("calc.go", GO_ADD % "+")),
        ),
        flags=("--max-iters", "2"),
        expect=Outcome(
            exit=0,
            status="ok",
            never=(),
            prompt_says=("ran only the 1 test that failed last time",),
        ),
    ),
    # 13. A repository may choose the strategy (what the model is shown, when it is asked
    # again): the naive loop's with every lever its own way still earns no green by a
    # deselected test.
    Probe(
        "strategy-chosen-by-the-repository",
        config='strategy = { preset = "naive", keep_asking = true, reask_candidates = true }',
        answers=(
            answer(
                "skip the slow test",
                whole_file("pytest.ini", "[pytest]\naddopts = -k 'not test_add'\n"),
            ),
        ),
        flags=("--max-iters", "1"),
        expect=Outcome(never=("ok",), exit=1),
    ),
    # 14. The repo map reads the repository's Python through the tree only, bounded (a link
    # out of the tree or a looping one ends the run before any prompt: the map's own refusal
    # of those is tests/engine/test_repo_map.py): a module linked to another, one over the
    # size cap, one that does not parse. The map shows the readable module, the run goes on.
    Probe(
        "repo-map-over-hostile-files",
        config='strategy = { preset = "repo-map" }',
        files={
            "again.py": Link("helpers.py"),
            "huge.py": "def huge_module(): pass\n" + "x = 1\n" * 450_000,
            "broken.py": "def broken(:\n",
            "helpers.py": "def double_it(value):\n    return value * 2\n",
        },
        answers=(
            answer(
                "multiply", {"path": "calc.py", "search": "return a - b", "replace": "return a * b"}
            ),
            answer("add", {"path": "calc.py", "search": "return a * b", "replace": "return a + b"}),
        ),
        flags=("--max-iters", "2"),
        expect=Outcome(
            exit=0, status="ok", never=(), within=300, prompt_says=("def double_it(value)",)
        ),
    ),
]


def cases() -> list[Any]:
    """Each probe on each backend it names."""
    return [
        pytest.param(probe, backend, id=f"{probe.name}-{backend}")
        for probe in PROBES
        for backend in probe.backends
    ]


@pytest.mark.parametrize(("probe", "backend"), cases())
def test_hostile_repository(lab: Lab, probe: Probe, backend: Backend) -> None:
    backend_ready(backend)
    seen = run_probe(lab, probe, backend)
    check(lab, probe, seen)


def test_every_probe_has_its_own_name() -> None:
    names = [probe.name for probe in PROBES]
    assert len(names) == len(set(names))
