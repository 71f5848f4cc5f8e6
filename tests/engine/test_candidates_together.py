"""Candidates 2..N asked in one request where the client can (`SamplesTogether`: a provider's
`n`), step by step without gVisor: what is asked, what each candidate becomes when the request
fails or the server sends fewer answers than asked."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from engine.errors import ModelError
from engine.model.types import Completion, Message, SamplesTogether, Usage
from tests.engine.test_levers import TRUNCATED, WRONG, of_type
from tests.engine.test_loop import BROKEN, FIXED, ScriptedModel, answer, run_loop

pytestmark = pytest.mark.usefixtures("git_as_tester")


class TogetherModel(ScriptedModel):
    """A ScriptedModel whose sampled answers come from `sample`: each call takes the next
    scripted list (or raises the next ModelError)."""

    def __init__(self, first: str, *together: list[str | ModelError] | ModelError) -> None:
        super().__init__(first)
        self.together = list(together)
        self.samples: list[tuple[int, float, int]] = []

    async def samples_together(self) -> bool:
        return True

    async def sample(
        self, messages: Sequence[Message], n: int, *, temperature: float, seed: int
    ) -> list[Completion | ModelError]:
        self.samples.append((n, temperature, seed))
        answers = self.together.pop(0)
        if isinstance(answers, ModelError):
            raise answers
        usage = Usage(prompt_tokens=0, completion_tokens=0, cost_usd=0.0)
        return [
            text
            if isinstance(text, ModelError)
            else Completion(
                text=text, usage=usage, finish_reason="stop", model="m", attempts=1, duration_s=0
            )
            for text in answers
        ]


def test_the_fake_is_what_the_candidates_look_for() -> None:
    assert isinstance(TogetherModel("x"), SamplesTogether)
    assert not isinstance(ScriptedModel("x"), SamplesTogether)


async def test_the_sampled_candidates_come_from_one_request(tmp_path: Path) -> None:
    model = TogetherModel(
        answer(("app.py", WRONG)), [answer(("app.py", BROKEN)), answer(("app.py", FIXED))]
    )
    result = await run_loop(tmp_path, model, candidates=3)
    assert (result.status.value, len(result.iterations)) == ("ok", 1)
    assert model.sampling == [(None, None)]  # the greedy first answer, on its own
    assert model.samples == [(2, 0.8, 1)]
    asked = {(e["candidate"], e["together"]) for e in of_type(result, "ModelRequested")}
    assert asked == {(1, 1), (2, 2), (3, 2)}
    verified = {e["k"]: e["verdict"] or e["dropped"] for e in of_type(result, "CandidateVerified")}
    assert verified == {1: "failing", 2: "changes no file", 3: "ok"}
    assert [e["k"] for e in of_type(result, "CandidateChosen")] == [3]


async def test_each_iteration_samples_together_from_a_seed_of_its_own(tmp_path: Path) -> None:
    unchanged = answer(("app.py", BROKEN))
    model = TogetherModel(
        answer(("app.py", WRONG)), [unchanged, unchanged], [answer(("app.py", FIXED)), unchanged]
    )
    model.answers.append(answer(("app.py", WRONG)))
    result = await run_loop(tmp_path, model, candidates=3)
    assert [r.status for r in result.iterations] == ["failing", "ok"]
    assert model.samples == [(2, 0.8, 1), (2, 0.8, 9)]


async def test_a_failed_request_drops_its_candidates_and_the_first_answer_stands(
    tmp_path: Path,
) -> None:
    model = TogetherModel(answer(("app.py", FIXED)), TRUNCATED)
    result = await run_loop(tmp_path, model, candidates=3)
    assert (result.status.value, len(result.iterations)) == ("ok", 1)
    dropped = {e["k"]: e["dropped"] for e in of_type(result, "CandidateVerified")}
    assert dropped[2] == dropped[3] == f"no answer: {TRUNCATED.cause}"
    assert [e["k"] for e in of_type(result, "CandidateChosen")] == [1]


async def test_a_truncated_choice_drops_only_its_candidate(tmp_path: Path) -> None:
    model = TogetherModel(answer(("app.py", WRONG)), [TRUNCATED, answer(("app.py", FIXED))])
    result = await run_loop(tmp_path, model, candidates=3)
    assert result.status.value == "ok"
    dropped = {e["k"]: e["dropped"] for e in of_type(result, "CandidateVerified")}
    assert dropped[2].startswith("no answer: answer truncated")
    assert [e["k"] for e in of_type(result, "CandidateChosen")] == [3]


async def test_what_a_server_left_out_is_asked_on_its_own(tmp_path: Path) -> None:
    # A server that ignores `n` sends one answer: candidates 3 and 4 are asked each on its
    # own, with the seeds they would have had.
    model = TogetherModel(answer(("app.py", WRONG)), [answer(("app.py", BROKEN))])
    model.answers += [answer(("app.py", WRONG)), answer(("app.py", FIXED))]
    result = await run_loop(tmp_path, model, candidates=4)
    assert result.status.value == "ok"
    assert model.samples == [(3, 0.8, 1)]
    assert len(model.sampling) == 3
    assert set(model.sampling) == {(None, None), (0.8, 2), (0.8, 3)}
    alone = {e["candidate"] for e in of_type(result, "ModelRequested") if e["together"] == 1}
    assert alone == {1, 3, 4}
