"""The model preflight: a missing key or an unknown provider is one line with the fix, found
before a run creates anything; the fast table agrees with litellm's own validation."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from engine.errors import ConfigError
from engine.model.litellm_module import load_litellm
from engine.model.preflight import KNOWN_KEYS, check_model, require_usable_model

KEY = "sk-test-preflight-0123456789"
REPO = Path(__file__).parents[2]


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """No provider key in the environment, whatever the machine has."""
    for variables in KNOWN_KEYS.values():
        for name in variables:
            monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def litellm() -> ModuleType:
    return asyncio.run(load_litellm())


def test_openai_without_a_key_names_the_variable(no_keys: None) -> None:
    assert check_model("openai/gpt-4o-mini") == (
        "no API key for openai (openai/gpt-4o-mini): set OPENAI_API_KEY"
    )


def test_a_local_server_still_needs_a_key_and_is_told_any_value_works(no_keys: None) -> None:
    problem = check_model("openai/scripted", "http://127.0.0.1:8080/v1")
    assert problem is not None
    assert "set OPENAI_API_KEY (a local server at http://127.0.0.1:8080/v1 takes any value)" in (
        problem
    )


def test_an_empty_key_is_no_key(no_keys: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "")
    problem = check_model("openai/gpt-4o-mini")
    assert problem is not None
    assert "OPENAI_API_KEY is empty" in problem


def test_a_set_key_passes_and_its_value_is_never_said(
    no_keys: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    assert check_model("openai/gpt-4o-mini") is None
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    assert check_model("anthropic/claude-3-5-sonnet-latest") is None


def test_any_one_of_a_providers_variables_will_do(
    no_keys: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert check_model("gemini/gemini-2.0-flash") == (
        "no API key for gemini (gemini/gemini-2.0-flash): set GEMINI_API_KEY or GOOGLE_API_KEY"
    )
    monkeypatch.setenv("GOOGLE_API_KEY", KEY)
    assert check_model("gemini/gemini-2.0-flash") is None


def test_the_embedded_model_needs_no_key(no_keys: None) -> None:
    assert check_model("local/qwen2.5-coder-1.5b") is None


def test_a_known_provider_is_answered_without_importing_litellm(no_keys: None) -> None:
    # In a fresh interpreter: this one may have litellm loaded by another test already.
    probe = (
        "import sys; from engine.model.preflight import check_model; "
        "print(check_model('openai/gpt-4o-mini')); print('litellm' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=REPO, env={}
    )
    assert done.stdout.splitlines() == [
        "no API key for openai (openai/gpt-4o-mini): set OPENAI_API_KEY",
        "False",
    ]


def test_an_unknown_provider_is_one_plain_line(litellm: ModuleType) -> None:
    problem = check_model("nosuchprovider/x")
    assert problem == (
        "unknown model provider 'nosuchprovider' in 'nosuchprovider/x': use a litellm model"
        " name such as openai/gpt-4o-mini"
    )


def test_a_bare_name_litellm_cannot_place_asks_for_its_provider(litellm: ModuleType) -> None:
    problem = check_model("no-such-model-7")
    assert problem is not None
    assert problem.startswith("unknown model 'no-such-model-7': name its provider too")
    assert "http" not in problem


def test_a_bare_openai_name_goes_through_litellm_to_the_same_key(
    no_keys: None, litellm: ModuleType
) -> None:
    assert check_model("gpt-4o-mini") == "no API key for openai (gpt-4o-mini): set OPENAI_API_KEY"


def test_a_provider_outside_the_table_is_checked_by_litellm(
    no_keys: None, monkeypatch: pytest.MonkeyPatch, litellm: ModuleType
) -> None:
    monkeypatch.delenv("COHERE_API_KEY", raising=False)
    assert check_model("cohere/command-r") == (
        "no API key for cohere (cohere/command-r): set COHERE_API_KEY"
    )
    monkeypatch.setenv("COHERE_API_KEY", KEY)
    assert check_model("cohere/command-r") is None


def test_only_missing_api_keys_count_not_base_urls_or_cloud_logins(
    monkeypatch: pytest.MonkeyPatch, litellm: ModuleType
) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE", "AWS_ROLE_ARN"):
        monkeypatch.delenv(name, raising=False)
    # litellm lists AWS_ACCESS_KEY_ID as missing; ~/.aws or an instance role may still work.
    assert litellm.validate_environment(model="bedrock/anthropic.claude-v2")["missing_keys"]
    assert check_model("bedrock/anthropic.claude-v2") is None


@pytest.mark.parametrize("provider", sorted(KNOWN_KEYS))
def test_the_fast_table_agrees_with_litellm(
    provider: str, no_keys: None, monkeypatch: pytest.MonkeyPatch, litellm: ModuleType
) -> None:
    model = f"{provider}/some-model"
    assert litellm.get_llm_provider(model=model)[1] == provider
    missing = litellm.validate_environment(model=model)["missing_keys"]
    assert {m for m in missing if m.endswith("_API_KEY")} <= set(KNOWN_KEYS[provider])
    for name in KNOWN_KEYS[provider]:
        monkeypatch.setenv(name, KEY)
        missing = litellm.validate_environment(model=model)["missing_keys"]
        assert not [m for m in missing if m.endswith("_API_KEY")], (name, missing)
        monkeypatch.delenv(name)
    if KNOWN_KEYS[provider]:  # with none set, litellm too finds a key missing
        missing = litellm.validate_environment(model=model)["missing_keys"]
        assert any(m in KNOWN_KEYS[provider] for m in missing)


async def test_a_problem_is_a_usage_error(no_keys: None) -> None:
    with pytest.raises(ConfigError, match="set OPENAI_API_KEY"):
        await require_usable_model("openai/gpt-4o-mini", None)
    await require_usable_model("local/qwen2.5-coder-1.5b", None)
