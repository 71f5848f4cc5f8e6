"""The embedded model's prompt cache: a request continues what its slot decoded, and one
request's answers continue one decoded prompt (engine/model/local/). Tests marked
`local_model` run the real model (CPU-heavy, never in parallel; under the heavy lock)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator

import pytest

from engine.errors import ModelError
from engine.model.client import LiteLLMClient
from engine.model.local import provider, server
from engine.model.types import Completion, Message
from tests.engine.test_local_model import qwen  # noqa: F401 - the loaded model, once

ASK = [{"role": "user", "content": "hi"}]


@pytest.fixture
def cache_off() -> Iterator[None]:
    provider.set_prompt_cache(False)
    yield
    provider.set_prompt_cache(True)


def test_with_the_cache_on_a_request_for_answers_continues_one_decoded_prompt() -> None:
    request = provider._request(ASK, {"temperature": 0.8, "seed": 5, "n": 2})
    assert (request["cache_prompt"], request["n_cmpl"]) == (True, 2)


@pytest.mark.usefixtures("cache_off")
def test_with_the_cache_off_every_prompt_is_read_afresh_one_answer_each() -> None:
    request = provider._request(ASK, {"temperature": 0.8, "seed": 5, "n": 2})
    assert request["cache_prompt"] is False
    assert "n_cmpl" not in request


def test_a_request_never_asks_for_more_answers_than_the_model_has_slots() -> None:
    request = provider._request(ASK, {"temperature": 0.8, "seed": 5, "n": server.SLOTS + 3})
    assert request["n_cmpl"] == server.SLOTS


def test_a_request_for_several_answers_waits_until_as_many_slots_are_free() -> None:
    slots = server.Slots(count=4)
    took_three = threading.Event()
    with slots.taken(2):

        def three() -> None:
            with slots.taken(3):
                took_three.set()

        waiter = threading.Thread(target=three)
        waiter.start()
        time.sleep(0.1)
        assert not took_three.is_set()  # two free: it holds none of them meanwhile
        with slots.taken(1), slots.taken(1):  # ...so single answers still get through
            pass
    waiter.join(timeout=5)
    assert took_three.is_set()
    assert slots.free == 4


@pytest.mark.usefixtures("cache_off")
async def test_with_the_cache_off_the_embedded_model_asks_for_each_answer_on_its_own() -> None:
    client = LiteLLMClient("local/qwen2.5-coder-1.5b", max_tokens=8)
    assert not await client.samples_together()


# --- the real model ---------------------------------------------------------------------------

FILE = "\n".join(f"def f{i}(a, b):\n    return a - b  # case {i}\n" for i in range(30))


def repair(packet: str) -> list[Message]:
    return [
        Message(role="system", content="You fix bugs. Answer with the corrected function only."),
        Message(role="user", content=f"Files:\n\ncalc.py\n```python\n{FILE}```\n\n{packet}"),
    ]


@pytest.mark.local_model
async def test_a_prompt_sharing_the_last_ones_files_reads_only_what_is_new(qwen: str) -> None:  # noqa: F811
    client = LiteLLMClient(qwen, max_tokens=4, timeout_s=300, max_attempts=1)
    # Cut at the 4 tokens asked for (an error to the client): the prompt was read all the same.
    with contextlib.suppress(ModelError):
        await client.complete(repair("Verification failed: test_f3 expected 5, got -1."))
    first = server.last_timings()
    with contextlib.suppress(ModelError):
        await client.complete(repair("Verification failed: test_f7 expected 9, got 1."))
    second = server.last_timings()
    assert first is not None
    assert second is not None
    print(f"\n[local model] first {first}\n[local model] second {second}")
    assert second.cached_prompt_tokens > second.prompt_tokens * 0.8
    assert second.read_prompt_tokens < second.prompt_tokens / 4


@pytest.mark.local_model
async def test_sampled_answers_asked_together_read_their_prompt_once(qwen: str) -> None:  # noqa: F811
    client = LiteLLMClient(qwen, max_tokens=32, timeout_s=300, max_attempts=1)
    assert await client.samples_together()
    seen = len(server.timings_log())
    name_one = [
        Message(role="system", content="Answer with one word only."),
        Message(role="user", content=f"{FILE}\nInvent a name for a Python library of these."),
    ]
    answers = await client.sample(name_one, 3, temperature=0.8, seed=4)
    generations = server.timings_log()[seen:]
    texts = [a.text for a in answers if isinstance(a, Completion)]
    print(f"\n[local model] {generations}\n[local model] answers {texts}")
    assert len(texts) == 3
    assert len(set(texts)) >= 2  # sampled, not one answer three times
    assert len(generations) == 1
    assert generations[0].answers == 3


async def test_with_the_cache_on_the_embedded_model_asks_for_sampled_answers_together() -> None:
    client = LiteLLMClient("local/qwen2.5-coder-1.5b", max_tokens=8)
    assert await client.samples_together()
