"""Answers streamed as data for a screen (`AnswerStreamed`): every candidate's text and its
tokens counted as they come, through the real litellm client against the scripted server on
127.0.0.1, and the loop over real git."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from types import ModuleType

import pytest

from engine.errors import ModelError
from engine.model.client import LiteLLMClient
from engine.model.litellm_module import load_litellm
from engine.model.types import Completion
from engine.model.usage import StreamTokens
from engine.project.workspace import Workspace
from engine.run.events import AnswerStreamed, BaseEvent, ModelResponded
from engine.run.loop import Deps, FixLoop
from engine.run.outcome import RunConfig, RunResult
from engine.run.run_directory import RunDirectory
from engine.verify.execute import Verifier
from engine.verify.stages import Stage, StageKind
from tests.engine.test_loop import (
    BROKEN,
    FIXED,
    RUN_ID,
    ScriptedGate,
    TreeSandbox,
    answer,
    project,
)
from tests.engine.test_model import API_KEY, ASK, client_for
from tests.model_server import ScriptedModelServer, replies, reply

pytestmark = [
    pytest.mark.usefixtures("git_as_tester"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning:litellm"),
]

# A model's answer as it streams, in the server's pieces (a word with its trailing spaces).
ANSWER = (
    '{"explanation": "divide by the number of words, not characters", "edits": [{"path": '
    '"textstats/core.py", "search": "return total // len(text)", "replace": "return total '
    '/ len(words)"}]}\n'
)


CODE = Path(__file__).parents[2] / "examples" / "textstats" / "textstats" / "core.py"


@pytest.fixture(scope="module", autouse=True)
def litellm_module() -> ModuleType:
    return asyncio.run(load_litellm())


class OneRequestEach(LiteLLMClient):
    """A model whose provider takes no `n` (the embedded model, llama.cpp): each candidate is
    a request of its own."""

    async def samples_together(self) -> bool:
        return False


class Heard:
    """Every event and every streamed piece, in the one order they came."""

    def __init__(self) -> None:
        self.said: list[BaseEvent | AnswerStreamed] = []

    def emit(self, event: BaseEvent) -> None:
        self.said.append(event)

    def piece(self, piece: AnswerStreamed) -> None:
        self.said.append(piece)

    def counts(self, k: int) -> list[int]:
        """Candidate k's token counts, piece by piece."""
        return [p.tokens for p in self.said if isinstance(p, AnswerStreamed) and p.candidate == k]

    def streamed_before_its_answer(self, k: int) -> bool:
        """Candidate k's pieces all came before its `ModelResponded`."""
        kinds = [
            "piece" if isinstance(said, AnswerStreamed) else "answer"
            for said in self.said
            if getattr(said, "candidate", None) == k
            and isinstance(said, AnswerStreamed | ModelResponded)
        ]
        return kinds.count("answer") == 1 and kinds[-1] == "answer" and "piece" in kinds


async def run_candidates(tmp_path: Path, client: LiteLLMClient, heard: Heard) -> RunResult:
    root = project(tmp_path, BROKEN)
    deps = Deps(
        model=client,
        verifier=Verifier(TreeSandbox(), [Stage(name="test", kind=StageKind.TESTS, cmd="pytest")]),
        workspace=Workspace.create(root, RUN_ID),
        gate=ScriptedGate(),
        run_dir=RunDirectory.create(root, RUN_ID),
        sinks=[heard],
        on_model_text=heard.piece,
        approval="step",
    )
    config = RunConfig.model_validate({"model": client.model, "candidates": 3})
    return await FixLoop(config, deps).run()


def test_an_answers_streamed_tokens_add_up_to_its_whole_count(
    litellm_module: ModuleType,
) -> None:
    tokens = StreamTokens("gpt-4o")
    counts = [tokens.add(piece) for piece in pieces_of(ANSWER)]
    assert counts == sorted(counts)
    assert counts[-1] == litellm_module.token_counter(model="gpt-4o", text=ANSWER)


def test_indented_code_streamed_in_small_pieces_counts_within_a_percent(
    litellm_module: ModuleType,
) -> None:
    code = CODE.read_text()
    tokens = StreamTokens("gpt-4o")
    streamed = [tokens.add(piece) for piece in pieces_of(code)][-1]
    whole = litellm_module.token_counter(model="gpt-4o", text=code)
    assert abs(streamed - whole) <= whole / 100


def test_an_answer_without_spaces_is_not_counted_again_with_each_piece(
    litellm_module: ModuleType,
) -> None:
    # A hostile answer: one "word" of 20,000 characters, a character a piece. Counted again
    # whole with each piece it takes minutes; a word is settled at LONGEST_WORD characters.
    tokens = StreamTokens("gpt-4o")
    started = time.monotonic()
    for _ in range(20_000):
        tokens.add("x")
    assert time.monotonic() - started < 5.0


def pieces_of(text: str) -> list[str]:
    """`text` in pieces of 1 to 8 characters, cut anywhere (mid-word, mid-indentation)."""
    pieces, start, size = [], 0, 1
    while start < len(text):
        pieces.append(text[start : start + size])
        start, size = start + size, size % 8 + 1
    return pieces


async def test_every_candidate_asked_on_its_own_streams_its_token_counts(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    fixed, wrong = answer(("app.py", FIXED)), answer(("app.py", "VALUE = 3\n"))
    model_server.script(reply(fixed), reply(wrong), reply(wrong))
    client = OneRequestEach("openai/scripted", api_base=model_server.base_url, api_key=API_KEY)
    heard = Heard()
    result = await run_candidates(tmp_path, client, heard)
    assert result.status.value == "ok"
    for k in (1, 2, 3):
        counts = heard.counts(k)
        assert counts
        assert counts == sorted(counts)
        assert counts[-1] > 0
        assert heard.streamed_before_its_answer(k)


async def test_candidates_asked_together_stream_each_ones_token_counts(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    fixed, wrong = answer(("app.py", FIXED)), answer(("app.py", "VALUE = 3\n"))
    model_server.script(reply(wrong), replies(fixed, wrong))
    client = client_for(model_server)
    heard = Heard()
    result = await run_candidates(tmp_path, client, heard)
    assert result.status.value == "ok"
    together = [r.body for r in model_server.requests if r.body.get("n") == 2]
    assert len(together) == 1
    assert together[0]["stream"]
    for k in (1, 2, 3):
        assert heard.counts(k)
        assert heard.streamed_before_its_answer(k)


async def test_a_truncated_choice_of_a_streamed_request_is_still_its_error(
    model_server: ScriptedModelServer,
) -> None:
    model_server.script(replies("one two three", "four five", finish_reasons=("stop", "length")))
    client = client_for(model_server)
    pieces: list[tuple[int, str]] = []
    first, second = await client.sample(
        ASK, 2, temperature=0.8, seed=1, on_text=lambda i, text: pieces.append((i, text))
    )
    assert isinstance(first, Completion)
    assert first.text == "one two three"
    assert isinstance(second, ModelError)
    assert "finish_reason length" in second.cause
    assert {i for i, _ in pieces} == {0, 1}
    assert model_server.requests[0].body["stream"]


async def test_a_streamed_choices_escape_sequences_never_reach_the_screen(
    model_server: ScriptedModelServer,
) -> None:
    # An answer is hostile input: choice 1 tries to clear the person's terminal.
    model_server.script(replies("one two", "clear \x1b[2J\x1b[H it"))
    client = client_for(model_server)
    shown: list[str] = []
    await client.sample(ASK, 2, temperature=0.8, seed=1, on_text=lambda i, t: shown.append(t))
    assert "clear" in "".join(shown)
    assert "\x1b" not in "".join(shown)
