"""`LiteLLMClient.sample`: several sampled answers in one request (a provider's `n`), through
the real litellm code path against the scripted server on 127.0.0.1."""

from __future__ import annotations

import asyncio
from types import ModuleType

import pytest

from engine.errors import ModelError
from engine.model.client import LiteLLMClient
from engine.model.litellm_module import load_litellm
from engine.model.types import Completion
from tests.engine.test_model import API_KEY, ASK, client_for
from tests.model_server import ScriptedModelServer, model_server, replies, reply, status

__all__ = ["model_server"]  # the fixture, imported for the tests below

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:litellm")

USAGE = {"prompt_tokens": 40, "completion_tokens": 12, "total_tokens": 52}


@pytest.fixture(scope="module", autouse=True)
def litellm_module() -> ModuleType:
    return asyncio.run(load_litellm())


async def test_two_answers_come_from_one_request_with_the_prompt_counted_once(
    model_server: ScriptedModelServer,
) -> None:
    model_server.script(replies("one two three", "four five six seven eight nine", usage=USAGE))
    client = client_for(model_server)

    assert await client.samples_together()
    answers = await client.sample(ASK, 2, temperature=0.8, seed=1)

    assert [a.text for a in answers if isinstance(a, Completion)] == [
        "one two three",
        "four five six seven eight nine",
    ]
    assert model_server.count == 1
    sent = model_server.requests[0].body
    assert (sent["n"], sent["temperature"], sent["seed"]) == (2, 0.8, 1)
    assert not sent.get("stream")  # a stream would lose choice 1's finish reason
    first, second = answers
    assert isinstance(first, Completion)
    assert isinstance(second, Completion)
    # The prompt is billed once: on the first answer. The completion tokens the server counted
    # are shared out by length, and add up to its count.
    assert (first.usage.prompt_tokens, second.usage.prompt_tokens) == (40, 0)
    assert first.usage.completion_tokens + second.usage.completion_tokens == 12
    assert first.usage.completion_tokens < second.usage.completion_tokens
    assert await client.samples_together()  # the server honours n: go on asking so


async def test_a_truncated_or_empty_choice_is_that_answers_error_only(
    model_server: ScriptedModelServer,
) -> None:
    model_server.script(
        replies("cut off mid", "", "a whole answer", finish_reasons=("length", "stop", "stop"))
    )
    answers = await client_for(model_server).sample(ASK, 3, temperature=0.8, seed=1)

    truncated, empty, whole = answers
    assert isinstance(truncated, ModelError)
    assert truncated.answered
    assert "truncated at max_tokens=2048" in str(truncated)
    assert isinstance(empty, ModelError)
    assert "empty answer" in str(empty)
    assert isinstance(whole, Completion)
    assert whole.text == "a whole answer"
    assert whole.usage.prompt_tokens > 0  # the first answer that counts carries the prompt
    assert model_server.count == 1  # not asked again: the others came with them


async def test_a_server_that_ignores_n_gives_one_answer_and_is_not_asked_so_again(
    model_server: ScriptedModelServer,
) -> None:
    model_server.script(reply("just the one"))
    client = client_for(model_server)

    answers = await client.sample(ASK, 2, temperature=0.8, seed=1)

    assert [a.text for a in answers if isinstance(a, Completion)] == ["just the one"]
    assert model_server.requests[0].body["n"] == 2
    assert not await client.samples_together()


async def test_a_failed_request_is_retried_then_its_error_raised(
    model_server: ScriptedModelServer,
) -> None:
    model_server.script(status(503), replies("a", "b"))
    answers = await client_for(model_server).sample(ASK, 2, temperature=0.8, seed=1)
    assert [a.attempts for a in answers if isinstance(a, Completion)] == [2, 2]

    model_server.script(status(503), status(503), status(503))
    with pytest.raises(ModelError, match="gave up after 3 attempts"):
        await client_for(model_server).sample(ASK, 2, temperature=0.8, seed=1)


async def test_a_key_is_never_in_a_failed_requests_error(model_server: ScriptedModelServer) -> None:
    model_server.script(status(401))
    with pytest.raises(ModelError) as failed:
        await client_for(model_server).sample(ASK, 2, temperature=0.8, seed=1)
    assert API_KEY not in str(failed.value)
    assert model_server.count == 1  # not retried


@pytest.mark.parametrize(
    "model",
    [
        "anthropic/claude-3-5-sonnet-20240620",  # litellm: the provider takes no n
        "ollama/qwen2.5-coder",
    ],
)
async def test_models_without_n_are_asked_each_answer_on_its_own(model: str) -> None:
    assert not await LiteLLMClient(model).samples_together()
