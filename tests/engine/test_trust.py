"""A repository's own config may not set what runs on the host, weakens the sandbox, routes
credentials or earns a green, until the user trusted the file as it is."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine.batch.batch_file import parse_line
from engine.errors import BatchFileError, ConfigError, UntrustedSettings
from engine.project.settings import FIELDS, load_settings, read_project_config
from engine.project.trust import REPOSITORY_MAY_SET, RESTRICTED, Trusted, TrustStore, Untrusted

# A value of each restricted key that the settings would otherwise accept.
HOSTILE_VALUES: dict[str, Any] = {
    "python": "tools/bin/python",
    "sandbox": "unsafe-local",
    "allow_runc": True,
    "docker_url": "tcp://203.0.113.9:2375",
    "image": "attacker/image",
    "api_base": "http://127.0.0.1:9/v1",
    "model_path": "weights.gguf",
    "accept_suspicious": True,
    "allow_test_edits": True,
    "approve": "auto",
}


def toml_value(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else f'"{value}"'


def write_config(project: Path, **values: Any) -> Path:
    lines = ["[tool.fixloop]", *(f"{key} = {toml_value(v)}" for key, v in values.items())]
    path = project / "pyproject.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def load(project: Path, **kwargs: Any) -> Any:
    return load_settings(project, {}, environ={}, user_config=project / "none.toml", **kwargs)


def trust(project: Path) -> None:
    config = read_project_config(project)
    TrustStore().trust(config.path, config.sha256, list(config.restricted))


def test_every_setting_is_either_restricted_or_one_a_repository_may_set() -> None:
    assert set(RESTRICTED) | REPOSITORY_MAY_SET == set(FIELDS)
    assert not set(RESTRICTED) & REPOSITORY_MAY_SET
    assert set(HOSTILE_VALUES) == set(RESTRICTED)


@pytest.mark.parametrize("key", sorted(RESTRICTED))
def test_a_restricted_key_in_the_projects_config_is_refused_naming_it(
    tmp_path: Path, key: str
) -> None:
    config = write_config(tmp_path, **{key: HOSTILE_VALUES[key]})
    with pytest.raises(UntrustedSettings) as refused:
        load(tmp_path)
    said = str(refused.value)
    assert f"sets {key} (" in said
    assert str(config) in said
    assert said.endswith(f"fixloop-tui trust {tmp_path}")
    assert refused.value.keys == [key]
    assert "\n" not in said


@pytest.mark.parametrize("key", sorted(RESTRICTED))
def test_a_trusted_config_is_obeyed(tmp_path: Path, key: str) -> None:
    write_config(tmp_path, **{key: HOSTILE_VALUES[key]})
    trust(tmp_path)
    value = getattr(load(tmp_path), key)
    assert (str(value) if isinstance(value, Path) else value) == HOSTILE_VALUES[key]


def test_a_trusted_config_edited_afterwards_is_refused_again(tmp_path: Path) -> None:
    config = write_config(tmp_path, api_base="http://127.0.0.1:9/v1")
    trust(tmp_path)
    assert load(tmp_path).api_base == "http://127.0.0.1:9/v1"
    config.write_text(config.read_text().replace(":9/", ":10/"))
    with pytest.raises(UntrustedSettings, match="sets api_base"):
        load(tmp_path)


def test_trust_is_per_project_not_per_content(tmp_path: Path) -> None:
    """The same bytes in another checkout are not trusted by trusting this one."""
    trusted, other = tmp_path / "trusted", tmp_path / "other"
    trusted.mkdir()
    other.mkdir()
    write_config(trusted, sandbox="unsafe-local")
    write_config(other, sandbox="unsafe-local")
    trust(trusted)
    assert load(trusted).sandbox == "unsafe-local"
    with pytest.raises(UntrustedSettings):
        load(other)


def test_revoking_trust_refuses_again(tmp_path: Path) -> None:
    config = write_config(tmp_path, python="tools/bin/python")
    trust(tmp_path)
    assert TrustStore().revoke(config)
    with pytest.raises(UntrustedSettings):
        load(tmp_path)


def test_an_unreadable_store_trusts_nothing(tmp_path: Path) -> None:
    write_config(tmp_path, approve="auto")
    trust(tmp_path)
    TrustStore().path.write_text("{not json")
    with pytest.raises(UntrustedSettings):
        load(tmp_path)


def test_the_users_own_sources_may_set_restricted_keys(tmp_path: Path) -> None:
    user_config = tmp_path / "config.toml"
    user_config.write_text('sandbox = "docker"\napi_base = "http://127.0.0.1:8/v1"\n')
    settings = load_settings(
        tmp_path,
        {"python": Path("/usr/bin/python3")},
        environ={"FIXLOOP_ACCEPT_SUSPICIOUS": "1"},
        user_config=user_config,
    )
    assert settings.sandbox == "docker"
    assert settings.api_base == "http://127.0.0.1:8/v1"
    assert settings.python == Path("/usr/bin/python3")
    assert settings.accept_suspicious is True


def test_left_out_when_dropped_the_rest_of_the_config_still_applies(tmp_path: Path) -> None:
    write_config(tmp_path, test_cmd="pytest -x", sandbox="unsafe-local", api_base="http://x/v1")
    settings = load(tmp_path, drop_untrusted=True)
    assert settings.test_cmd == "pytest -x"
    assert settings.sandbox == "auto"
    assert settings.api_base is None


def test_a_batch_task_trusts_only_what_its_line_says(tmp_path: Path) -> None:
    write_config(tmp_path, api_base="http://127.0.0.1:9/v1")
    hint = 'add "trust": true to line 3 of the batch file if you trust it'
    with pytest.raises(UntrustedSettings) as refused:
        load(tmp_path, trust=Untrusted(hint))
    assert str(refused.value).endswith(hint)
    assert load(tmp_path, trust=Trusted()).api_base == "http://127.0.0.1:9/v1"


def test_a_batch_line_says_trust_as_a_boolean(tmp_path: Path) -> None:
    batch = tmp_path / "batch.jsonl"
    line = parse_line('{"repo": "/r", "trust": true}', 1, batch)
    assert line.trust is True
    assert parse_line('{"repo": "/r"}', 2, batch).trust is False
    with pytest.raises(BatchFileError, match="'trust' must be true or false"):
        parse_line('{"repo": "/r", "trust": "yes"}', 3, batch)


@pytest.mark.parametrize(
    ("key", "value"),
    [("spec", "/etc/passwd"), ("spec", "../outside.toml"), ("files", ["src/a.py", "../../x"])],
)
def test_the_projects_paths_stay_inside_it(tmp_path: Path, key: str, value: Any) -> None:
    rendered = (
        "[" + ", ".join(f'"{v}"' for v in value) + "]" if isinstance(value, list) else f'"{value}"'
    )
    (tmp_path / "pyproject.toml").write_text(f"[tool.fixloop]\n{key} = {rendered}\n")
    with pytest.raises(ConfigError, match=f"{key} .* must name a file inside the project"):
        load(tmp_path)
