"""A run's audit trail as the loop writes it (ARCHITECTURE.md, "Events and the audit trail"):
every event to events.jsonl and the live sinks, each iteration's artefacts (prompt, response,
edits, patch, stage results, packet) under its directory. The loop says what; this says where.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel

from engine.feedback.tree import Verification
from engine.model.types import Completion, Message
from engine.project.workspace import Workspace
from engine.run.events import (
    BaseEvent,
    EventSink,
    FilesShown,
    GuardTripped,
    ModelResponded,
    PacketReady,
    PersonNoted,
    RunFinished,
    RunStarted,
    StageFinished,
    StageStarted,
)
from engine.run.guards import Trip
from engine.run.outcome import RunConfig, RunResult
from engine.run.run_directory import RunDirectory
from engine.run.talk import Said
from engine.verify.execute import StageCallback
from engine.verify.results import StageResult
from engine.verify.stages import Stage


class Journal:
    def __init__(self, run_dir: RunDirectory, sinks: Sequence[EventSink] = ()) -> None:
        self.run_dir = run_dir
        self.sinks = list(sinks)

    def emit(self, event: BaseEvent) -> None:
        event = event.model_copy(update={"run_id": self.run_dir.run_id})
        self.run_dir.emit(event)
        for sink in self.sinks:
            sink.emit(event)

    def trip(self, n: int, trip: Trip) -> None:
        self.emit(GuardTripped(n=n, guard=trip.guard, detail=trip.detail))

    def responded(self, n: int, completion: Completion, candidate: int | None = None) -> None:
        """The answer in the trail: `response.txt`, or candidate K's under `candidates/K/`."""
        where = "" if candidate is None else f"candidates/{candidate}/"
        self.text(n, f"{where}response.txt", completion.text)
        usage = completion.usage
        self.emit(
            ModelResponded(
                n=n,
                prompt_tokens=usage.prompt_tokens,
                completion_tokens=usage.completion_tokens,
                cost_usd=usage.cost_usd,
                duration_s=completion.duration_s,
                finish_reason=completion.finish_reason,
                attempts=completion.attempts,
                candidate=candidate or 0,  # 0: the iteration's only answer
            )
        )

    def started(
        self,
        config: RunConfig,
        workspace: Workspace,
        sandbox: str,
        approval: str,
        versions: dict[str, str],
    ) -> None:
        """A new run's first event: what runs, where, on which branch, with which settings."""
        self.emit(
            RunStarted(
                task=config.task,
                project=str(workspace.project),
                model=config.model,
                sandbox=sandbox,
                mode=approval,
                max_iterations=config.max_iterations,
                branch=workspace.branch,
                baseline=workspace.baseline,
                config=config.model_dump(mode="json"),
                versions=versions,
            )
        )

    def said(self, n: int, said: Said) -> None:
        """What the person said before iteration n's prompt, into the trail."""
        for text in said.notes:
            self.emit(PersonNoted(n=n, text=text))
        if said.files_changed:
            added, dropped, now = list(said.added), list(said.dropped), list(said.shown)
            self.emit(FilesShown(n=n, added=added, dropped=dropped, shown=now))

    def finished(self, result: RunResult) -> None:
        """The run's result.json, then its last event."""
        self.run_dir.write_json("result.json", result)
        self.emit(
            RunFinished(
                status=result.status.value,
                reason=result.reason,
                accepted_suspicious=result.accepted_suspicious,
                iterations=len(result.iterations),
                branch=result.branch,
                final_commit=result.final_commit,
                tokens=result.tokens,
                cost_usd=result.cost_usd,
                duration_s=result.duration_s,
            )
        )

    # -- one iteration's files ----------------------------------------------------------

    def text(self, n: int, name: str, text: str) -> None:
        self.run_dir.write_text(f"{self.run_dir.iteration(n)}/{name}", text)

    def json(self, n: int, name: str, value: BaseModel | dict[str, object] | list[object]) -> None:
        self.run_dir.write_json(f"{self.run_dir.iteration(n)}/{name}", value)

    def prompt(self, n: int, messages: Sequence[Message], name: str = "prompt.json") -> None:
        self.json(n, name, [m.model_dump() for m in messages])

    def on_stage(self, n: int, suffix: str = "") -> StageCallback:
        """What the verifier calls as each stage of iteration n starts and ends; `suffix`
        keeps a second verification of the iteration (after a revert) apart in the trail."""

        async def heard(stage: Stage, result: StageResult | None) -> None:
            if result is None:
                self.emit(StageStarted(n=n, stage=stage.name, cmd=stage.cmd))
                return
            self.emit(
                StageFinished(
                    n=n,
                    stage=stage.name,
                    exit_code=result.exit_code,
                    duration_ms=result.duration_ms,
                    timed_out=result.timed_out,
                    oom_killed=result.oom_killed,
                )
            )
            self.json(n, f"stage-{stage.name}{suffix}.json", result)

        return heard

    def candidate_stage(self, n: int, k: int) -> StageCallback:
        """Candidate k's stages go to its own trail, quietly: several run at once, and only
        the chosen one's become the iteration's (`stages`)."""

        async def heard(stage: Stage, result: StageResult | None) -> None:
            if result is not None:
                self.json(n, f"candidates/{k}/stage-{stage.name}.json", result)

        return heard

    async def stages(self, n: int, results: Sequence[StageResult]) -> None:
        """A chosen candidate's stages, as if the iteration had run them itself."""
        heard = self.on_stage(n)
        for result in results:
            stage = Stage(name=result.name, kind=result.kind, cmd=result.cmd)
            await heard(stage, None)
            await heard(stage, result)

    def packet(self, n: int, result: Verification) -> None:
        """The verification's PacketReady event, and its packet when it has one."""
        judgement = result.judgement
        self.emit(
            PacketReady(
                n=n,
                verdict=judgement.verdict.value,
                error_class=judgement.classification.error_class.value,
                signature=judgement.signature,
                tokens=result.packet_tokens,
                tests=judgement.tests.model_dump() if judgement.tests else None,
                new_tests=len(result.new_tests),
            )
        )
        if result.packet is not None:
            self.json(n, "packet.json", result.packet)
            self.text(n, "packet.txt", result.packet_text)
