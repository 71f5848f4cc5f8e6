"""Trust, end to end: a repository's host-side setting (`python`) is obeyed only once the
user ran `fixloop-tui trust PATH`, and only while its pyproject.toml is the file they trusted;
the user's own config is trusted as it is. What does not fit a probe row: several commands in
turn on one repository."""

from __future__ import annotations

import hashlib
import shutil

import pytest

from tests.hostile_repo.harness import (
    Lab,
    Outcome,
    Probe,
    build_repo,
    collect,
    marker_script,
)

pytestmark = [pytest.mark.sandbox, pytest.mark.usefixtures("needs_gvisor")]

HOST_PYTHON = marker_script("python", then='exec /usr/bin/python3 "$@"')
PYTHON_KEY = Probe(
    "trusted-python",
    files={"tools/bin/python": HOST_PYTHON},
    config='python = "tools/bin/python"',
    expect=Outcome(),
)


def test_a_trusted_python_key_is_obeyed(lab: Lab) -> None:
    root = build_repo(lab, PYTHON_KEY)
    trusted, _ = lab.cli("trust", str(root), cwd=root)
    assert trusted.returncode == 0, trusted.stderr
    done, seconds = lab.cli("verify", str(root), "--json", "--sandbox", "gvisor", cwd=root)
    seen = collect(lab, root, done, seconds)
    assert seen.markers == ["python"], f"the trusted interpreter did not run: {done.stderr}"


def test_trust_is_the_config_files_hash_in_the_users_store(lab: Lab) -> None:
    root = build_repo(lab, PYTHON_KEY)
    trusted, _ = lab.cli("trust", str(root), cwd=root)
    assert trusted.returncode == 0, trusted.stderr
    store = lab.config_home / "fixloop" / "trusted.json"
    digest = hashlib.sha256((root / "pyproject.toml").read_bytes()).hexdigest()
    assert digest in store.read_text()


def test_an_edited_config_is_untrusted_again(lab: Lab) -> None:
    root = build_repo(lab, PYTHON_KEY)
    trusted, _ = lab.cli("trust", str(root), cwd=root)
    assert trusted.returncode == 0, trusted.stderr
    with (root / "pyproject.toml").open("a") as config:
        config.write("# edited after it was trusted\n")
    done, seconds = lab.cli("verify", str(root), "--json", "--sandbox", "gvisor", cwd=root)
    seen = collect(lab, root, done, seconds)
    assert seen.markers == [], "an edited config's interpreter ran on the host"
    assert done.returncode == 2, done.stderr
    assert "python" in seen.output
    assert "fixloop-tui trust" in seen.output


def test_a_trusted_config_copied_to_another_repository_is_not_trusted_there(lab: Lab) -> None:
    """Trust is for a project, not for a text: the same pyproject.toml elsewhere names that
    repository's own tools/bin/python."""
    root = build_repo(lab, PYTHON_KEY)
    trusted, _ = lab.cli("trust", str(root), cwd=root)
    assert trusted.returncode == 0, trusted.stderr
    copy = root.parent / "copy"
    shutil.copytree(root, copy, symlinks=True)
    done, seconds = lab.cli("verify", str(copy), "--json", "--sandbox", "gvisor", cwd=copy)
    seen = collect(lab, copy, done, seconds)
    assert seen.markers == [], "a copy of a trusted config was obeyed"
    assert done.returncode == 2, done.stderr


def test_the_users_own_config_names_the_python_without_trust(lab: Lab) -> None:
    """The user's config.toml is theirs: a `python` there is obeyed as it is."""
    probe = Probe("users-python", expect=Outcome())
    root = build_repo(lab, probe)
    python = lab.tmp / "users-python"
    python.write_text(HOST_PYTHON.text.replace("@MARKERS@", str(lab.markers)))
    python.chmod(0o755)
    lab.write_user_config(f'python = "{python}"\n')
    done, seconds = lab.cli("verify", str(root), "--json", "--sandbox", "gvisor", cwd=root)
    seen = collect(lab, root, done, seconds)
    assert seen.markers == ["python"], done.stderr
