"""Spec mode: the `RunMode` of a run that builds a module and its tests from a spec:
the examples as tests first, then the draft, the latch that freezes the tests, and the
reference check before each sandbox run (see `SpecMode`)."""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Callable, Sequence

from engine.edits.instructions import instructions
from engine.edits.parse import parse
from engine.edits.proposal import EditFormat, Proposal
from engine.errors import EditFormatError, SpecError
from engine.feedback import prompts
from engine.feedback.packet import Failure, RepairPacket
from engine.feedback.tree import Verification
from engine.model.types import Message
from engine.project.pins import TestPins, is_test_file, pinned_role
from engine.project.workspace import Workspace
from engine.run.answers import RepairMode, RunMode, refuse_dropped_definitions, repair_prompt
from engine.run.checker import IterationChecker
from engine.run.events import (
    BaseEvent,
    Event,
    ReferencesChecked,
    SpecPrepared,
    TestEditsRefused,
    TestsLatched,
)
from engine.run.gate import Review, TestEditSplit
from engine.run.outcome import RunConfig
from engine.run.run_directory import RunDirectory
from engine.spec.definition import Spec
from engine.spec.examples import example_tests
from engine.spec.references import ReferenceProblem, Target, check_tests, module_names
from engine.verify.classify import Classification, ErrorClass
from engine.verify.results import StageResult
from engine.verify.verdict import Judgement, Verdict

Emit = Callable[[BaseEvent], None]
FROZEN_REASON = "frozen after the first draft: later answers may not change them"
INFRASTRUCTURE_REASON = "test infrastructure: it decides how the tests run and what they report"


class SpecMode:
    """Spec mode's state and decisions for one run; the loop asks, this answers.

    - start: fixloop writes the spec's examples as tests and commits them, pinned from the
      start; nothing is verified yet, since there is no module to verify.
    - the draft (the first usable answer): the model writes the module and its tests from the
      spec alone; its prompt holds no implementation.
    - the latch: once the draft is committed, every test file is frozen; later edits to them
      are refused (a format error when nothing else is left) unless the person allows them at
      the gate, and the examples' file never changes.
    - the reference check: before each sandbox run, the tests are read against the module;
      names it does not define and calls that do not fit a signature are a `reference_error`,
      not a run.
    """

    def __init__(
        self, spec: Spec, config: RunConfig, workspace: Workspace, run_dir: RunDirectory, emit: Emit
    ) -> None:
        self.spec = spec
        self.config = config
        self.workspace = workspace
        self.run_dir = run_dir
        self.emit = emit
        self.baseline_pins = workspace.pins
        self.latched = False  # the draft's tests are frozen
        self.approved: list[str] = []  # frozen files the person let this iteration change

    # -- start ------------------------------------------------------------------------------

    async def begin(self, checker: IterationChecker) -> Verification:
        """Nothing to verify before the model writes the module: the examples start the run."""
        return self.start()

    def start(self) -> Verification:
        """Write and commit the examples' tests, pin them; the loop's starting point."""
        spec, workspace = self.spec, self.workspace
        target = workspace.root / spec.examples_file
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(example_tests(spec), encoding="utf-8")
        self.run_dir.write_text("spec.toml", spec.to_toml())
        count = len(spec.examples)
        message = f"fixloop[spec]: the {count} examples of spec {spec.name} as tests (generated)"
        commit = workspace.commit(message)
        if commit is None:  # the runner refuses a spec whose files exist: this is a bug
            raise SpecError(f"{spec.examples_file} was written but there was nothing to commit")
        self.emit(
            SpecPrepared(
                name=spec.name,
                module=spec.module,
                tests=spec.tests,
                examples_file=spec.examples_file,
                examples=count,
                constraints=len(spec.constraints),
                commit=commit,
            )
        )
        self.freeze(0, commit, "written by fixloop from the spec's examples: never editable")
        return nothing_yet()

    def restore(self, events: Sequence[Event]) -> None:
        """A resumed run's frozen files, from its TestsLatched events."""
        files = dict(self.baseline_pins.files)
        for event in events:
            if isinstance(event, TestsLatched):
                files.update(event.files)
                self.latched = self.latched or event.n > 0
        self.workspace.pins = TestPins(rev=self.workspace.baseline, files=files)

    # -- the prompt -------------------------------------------------------------------------

    def messages(
        self, current: Verification, notes: Sequence[str], added: Sequence[str] = ()
    ) -> list[Message]:
        """The draft's prompt until the tests latch; then a repair prompt that names the
        module (and the files the person added) and shows no file the model may not change."""
        if not self.latched:
            return self.draft_messages(notes)
        config = self.config
        named = list(dict.fromkeys([self.spec.module, *config.files, *added]))
        root = self.workspace.root
        task = self.repair_task()
        prompt = repair_prompt(root, current, notes, task, named, config.edit_format, self.shown)
        return prompt.messages

    def draft_messages(self, notes: Sequence[str]) -> list[Message]:
        """The first answer's prompt: the spec, and nothing of any implementation (for small
        models, the two files to complete: the signature and the import, no more)."""
        spec = self.spec
        user = [
            spec.text(),
            f"Also write {spec.tests}: pytest tests of the description and of every "
            f"constraint, from this spec only (fixloop already turned the examples into "
            f"tests). Import the function with `from {spec.import_name} import "
            f"{spec.function.name}`. Name the test of constraint N test_constraint_N_<what>.",
            f"After this answer the tests are frozen: later answers may change only {spec.module}.",
        ]
        if self.config.edit_format == "whole":
            user.append(
                "Complete both files: write the function, and in each test a short check of "
                "its constraint:\n\n" + skeletons(spec)
            )
        user += notes
        return [
            Message(role="system", content=draft_system_prompt(spec, self.config.edit_format)),
            Message(role="user", content="\n\n".join(user)),
        ]

    def repair_task(self) -> str:
        frozen = " and ".join(sorted({self.spec.tests, self.spec.examples_file}))
        return (
            f"{self.spec.text()}\n\nThe tests in {frozen} are frozen: change only "
            f"{self.spec.module}."
        )

    def shown(self, paths: Sequence[str]) -> list[str]:
        """The files a repair prompt shows: never the examples' file (the spec's text lists
        the examples); for small models (the whole format) no frozen test file at all, since
        they send back every file they see and the packet quotes the failing lines."""
        hidden = {self.spec.examples_file}
        if self.config.edit_format == "whole":
            hidden |= set(self.workspace.pins.files) - set(self.baseline_pins.files)
        return [path for path in paths if path not in hidden]

    # -- the proposal -----------------------------------------------------------------------

    def parse(self, text: str) -> Proposal:
        """The answer as a proposal: the draft must write both files; edits to frozen files
        are not held against a whole-file answer's dropped definitions (they are refused)."""
        proposal = parse(text, self.config.edit_format)
        self.check_draft(proposal)
        refuse_dropped_definitions(self.unfrozen(proposal), self.workspace.root)
        return proposal

    def check_draft(self, proposal: Proposal) -> None:
        """The draft must write both files; an answer without one is a format error."""
        if self.latched:
            return
        paths = {edit.path for edit in proposal.edits}
        missing = [path for path in (self.spec.module, self.spec.tests) if path not in paths]
        hint = f"Send both files complete: first {self.spec.module}, then {self.spec.tests}."
        if missing:
            listed = " and ".join(missing)
            raise EditFormatError(
                [f"your answer has no {listed}: the first answer writes both files"], hint
            )
        # The tests are frozen once committed: refuse now what could never be run.
        tests = next(e for e in proposal.edits if e.path == self.spec.tests)
        problem = _unusable_tests(self.spec.tests, tests.content)
        if problem:
            raise EditFormatError([problem], hint)

    def unfrozen(self, proposal: Proposal) -> Proposal:
        """The proposal without its edits to frozen files (they are refused anyway)."""
        pinned = self.workspace.pins.files
        return proposal.model_copy(
            update={"edits": [e for e in proposal.edits if e.path not in pinned]}
        )

    def screen(
        self, n: int, proposal: Proposal, split: TestEditSplit, review: Review
    ) -> tuple[Proposal, list[str]]:
        """(what to apply, the frozen files refused). A person's approval at the gate (or their
        own edit) lets the model's tests change; the examples' file never does. Nothing left
        but refused edits is a format error, so the model hears it at once."""
        examples = self.spec.examples_file
        if review.decision == "edit" and review.proposal is not None:
            proposal = review.proposal
            split = TestEditSplit(kept=proposal, held_back=[], repeated=[])
            touched = {edit.path for edit in proposal.edits}
            held = [examples] if examples in touched else []
            approved = [p for p in touched if p in self.workspace.pins.files and p != examples]
        elif review.allow_test_edits:
            held = [path for path in split.held_back if path == examples]
            approved = [path for path in split.held_back if path != examples]
        else:
            held, approved = list(split.held_back), []
        skipped = {*held, *split.repeated}
        kept = proposal.model_copy(
            update={"edits": [e for e in proposal.edits if e.path not in skipped]}
        )
        self.approved = approved
        frozen = [path for path in held if not pinned_role(path)]
        infrastructure = [path for path in held if pinned_role(path)]
        if frozen:
            self.emit(TestEditsRefused(n=n, files=frozen, reason=FROZEN_REASON))
        if infrastructure:
            self.emit(TestEditsRefused(n=n, files=infrastructure, reason=INFRASTRUCTURE_REASON))
        if held and not kept.edits:
            raise EditFormatError([self.refusal(held)], f"Change only {self.spec.module}.")
        return kept, held

    def refusal(self, held: Sequence[str]) -> str:
        """Why edits were refused: frozen tests, and test infrastructure (a conftest.py the
        draft adds too), which no answer may change: it decides what the tests report."""
        frozen = [path for path in held if not pinned_role(path)]
        said = []
        if frozen:
            said.append(
                f"your edits to {', '.join(frozen)} were refused: in spec mode the tests are "
                f"frozen after your first answer, and they define what is correct"
            )
        for path in held:
            if role := pinned_role(path):
                said.append(f"your edit to {path} was refused: it is test infrastructure ({role})")
        return "; ".join(said)

    def held_back_note(self, held: Sequence[str]) -> str:
        """For the next packet, when the rest of the proposal was applied."""
        return f"Note: {self.refusal(held)}. Change only {self.spec.module}."

    def restorable(self, paths: Sequence[str]) -> list[str]:
        """None: a spec run's tests are not at the baseline; its latch guards them."""
        return []

    def committed(self, n: int, commit: str) -> None:
        """Freeze the draft's tests; re-freeze the files the person let change."""
        if not self.latched:
            self.latched = True
            self.freeze(n, commit, FROZEN_REASON)
        elif self.approved:
            listed = ", ".join(sorted(self.approved))
            self.freeze(n, commit, f"changed with the person's approval at the gate: {listed}")
        self.approved = []

    def freeze(self, n: int, commit: str, reason: str) -> None:
        before = self.workspace.pins.files
        now = TestPins.from_commit(self.workspace.root, commit)
        changed = {p: h for p, h in now.files.items() if before.get(p) != h}
        self.workspace.pins = TestPins(rev=commit, files={**before, **changed})
        self.emit(TestsLatched(n=n, files=changed, reason=reason))

    # -- before the sandbox runs ------------------------------------------------------------

    def check_before_verify(
        self, n: int, previous: Sequence[StageResult] = ()
    ) -> Verification | None:
        """The reference check: a reference_error verification when the tests cannot work
        against the module as written; None when they can (or when only running them can
        tell). Its packet is rendered by the loop, with the rest of the next packet's notes."""
        problems = self.reference_problems()
        if problems is None:
            return None
        self.emit(ReferencesChecked(n=n, problems=[_one_line(p) for p in problems]))
        if not problems:
            return None
        return self.reference_error(n, problems, previous)

    def reference_problems(self) -> list[ReferenceProblem] | None:
        spec, root = self.spec, self.workspace.root
        try:
            source = (root / spec.module).read_text(encoding="utf-8")
        except FileNotFoundError:
            message = f"{spec.module} does not exist: write the module the spec asks for"
            return [ReferenceProblem(file=spec.module, line=0, message=message)]
        except (OSError, UnicodeDecodeError):
            return None
        names = module_names(source)
        if names is None:
            return None  # a syntax error: pytest shows where it is better than we could
        function = spec.function
        problems: list[ReferenceProblem] = []
        defined = names.params.get(function.name)
        if not names.defines(function.name):
            message = f"{spec.module} does not define {function.name}: the spec asks for it"
            problems.append(ReferenceProblem(file=spec.module, line=0, message=message))
        elif defined is not None and not defined.same_shape(function.params):
            message = (
                f"{spec.module} defines {defined.text}, but the spec's signature is {function.text}"
            )
            problems.append(ReferenceProblem(file=spec.module, line=0, message=message))
        target = Target(spec.module, spec.import_name, names, {function.name: function.params})
        problems += check_tests(target, self.test_sources())
        return problems

    def test_sources(self) -> dict[str, str]:
        """The spec's test files and every test file the run added, as they are now."""
        added = {p for p in self.workspace.pins.files if is_test_file(p)} - set(
            self.baseline_pins.files
        )
        sources = {}
        for path in sorted({self.spec.tests, self.spec.examples_file} | added):
            try:
                sources[path] = (self.workspace.root / path).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
        return sources

    def reference_error(
        self, n: int, problems: list[ReferenceProblem], previous: Sequence[StageResult]
    ) -> Verification:
        spec, config = self.spec, self.config
        lines = [_one_line(p) for p in problems]
        count = len(problems)
        packet = RepairPacket(
            iteration=n + 1 if n < config.max_iterations else None,
            max_iterations=config.max_iterations,
            summary=f"{count} reference error{'s' if count != 1 else ''} in the tests; "
            "nothing was run",
            error_class=ErrorClass.REFERENCE_ERROR.value,
            failures=[_failure(p) for p in problems],
            notes=[f"The spec's signature: def {spec.function.text}"],
            instructions=(
                f"Change {spec.module} so that it defines what the tests use, with the spec's "
                "signature. The tests are frozen: do not edit them."
            ),
        )
        digest = hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]
        judgement = Judgement(
            verdict=Verdict.FAILING,
            reasons=lines,
            classification=Classification(error_class=ErrorClass.REFERENCE_ERROR, primary=lines[0]),
            signature=f"reference_error:{digest}",
        )
        return Verification(
            judgement=judgement,
            stages=list(previous),  # what last ran, for the next packet's progress line
            packet=packet,
        )


def run_mode(
    config: RunConfig,
    workspace: Workspace,
    run_dir: RunDirectory,
    emit: Callable[[BaseEvent], None],
) -> RunMode:
    """The mode a run's configuration asks for. It lives beside `SpecMode`, which builds on
    `modes.py`'s helpers, so that `modes.py` never imports spec mode back."""
    if config.spec is None:
        return RepairMode(config, workspace)
    return SpecMode(config.spec, config, workspace, run_dir, emit)


def draft_system_prompt(spec: Spec, format: EditFormat) -> str:
    both = f"first {spec.module}, then {spec.tests}"
    if format == "whole":
        return (
            "You write a new Python module and its pytest tests from a spec. Reply with two "
            f"files, {both}: for each, its path alone on a line, then a fenced python code "
            "block holding the whole file, complete. No explanations."
        )
    return (
        "You are fixloop's code model. From a spec, you write a new Python module and its "
        f"pytest tests: two new files, {both}, each as an edit with its whole "
        '"content".\n\n' + instructions(format, spec.module)
    )


def skeletons(spec: Spec) -> str:
    """The two files as a small model should answer them, with nothing implemented: the
    signature, and one empty test per constraint (bounded: greedy decoding otherwise writes
    tests until it runs out of tokens). A copy as it is fails (the module raises, the tests
    are empty) and is repaired or refused, never frozen."""
    summary = _one_line_text(spec.description.splitlines()[0])
    module = f'def {spec.signature}:\n    """{summary}"""\n    raise NotImplementedError\n'
    checks = [(f"test_constraint_{n}", c) for n, c in enumerate(spec.constraints, start=1)]
    stubs = [f'def {name}():\n    """{_one_line_text(text)}"""\n' for name, text in checks]
    stubs = stubs or [f'def test_description():\n    """{summary}"""\n']
    tests = f"import pytest\n\nfrom {spec.import_name} import {spec.function.name}\n\n\n"
    tests += "\n\n".join(stubs)
    return "\n\n".join(
        prompts.render_file(prompts.PromptFile(path=path, text=text))
        for path, text in ((spec.module, module), (spec.tests, tests))
    )


def _one_line_text(text: str) -> str:
    return " ".join(text.split()).replace('"', "'").replace("\\", "/")


def _unusable_tests(path: str, content: str | None) -> str | None:
    """Why a draft's test file could never pass once frozen or tests nothing, or None."""
    if content is None:
        return f"{path} must be sent whole: it is a new file"
    try:
        tree = ast.parse(content)
    except SyntaxError as exc:
        return f"{path} is not valid Python (line {exc.lineno}: {exc.msg})"
    tests = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test")
    ]
    if not tests:
        return f"{path} has no test function: write functions named test_..."
    empty = [node.name for node in tests if _is_empty(node)]
    if empty:
        return f"{path}: {', '.join(empty)} checks nothing: write its check"
    return None


def _is_empty(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A body of only a docstring, `pass` or `...`."""
    for statement in node.body:
        if isinstance(statement, ast.Pass):
            continue
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
            continue  # a docstring or `...`
        return False
    return True


def nothing_yet() -> Verification:
    """Where a spec run starts: no module, so nothing verified and no packet."""
    judgement = Judgement(
        verdict=Verdict.FAILING,
        classification=Classification(
            error_class=ErrorClass.NONE, primary="the module is not written yet"
        ),
    )
    return Verification(judgement=judgement, stages=[])


def _failure(problem: ReferenceProblem) -> Failure:
    where = f"{problem.file}::{problem.test}" if problem.test else problem.file
    return Failure(
        test=where,
        kind="reference error",
        file=problem.file,
        line=problem.line,
        assertion=problem.source or None,
        exception=problem.message,
    )


def _one_line(problem: ReferenceProblem) -> str:
    where = f"{problem.file}:{problem.line}" if problem.line else problem.file
    return f"{where}: {problem.message}"
