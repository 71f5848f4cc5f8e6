"""The "New from spec" form: a spec's fields (name, files, signature, what it does, examples,
constraints), checked by the engine's own validator. `ctrl+s` dismisses with the `Spec`, or
shows the problem under the field it is about; `escape` dismisses with None (asking first when
something was typed). Keys from `tui/keymap.py`."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

from textual import on
from textual.app import ComposeResult, SystemCommand
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Footer, Input, Label, Static, TextArea

from engine.errors import SpecError
from engine.spec.definition import Spec, parse_example_line, validate_spec
from tui.keymap import SPEC, bindings_for
from tui.screens.confirm import ConfirmScreen

INPUTS = (
    ("name", "parse_duration", "names the examples' test file"),
    ("module", "durations.py", "the file to create"),
    ("tests", "tests/test_durations.py", "the model's tests"),
    ("signature", "parse_duration(text: str) -> int", "with type hints"),
)
AREAS = (
    ("description", "what it does", "Parse a duration like 1h30m into seconds."),
    (
        "examples",
        "examples, one a line: call == value, or call raises Error",
        "parse_duration('5m') == 300\nparse_duration('') raises ValueError",
    ),
    ("constraints", "constraints, one a line", "raises ValueError for an unknown unit"),
)
PREFIX = "spec: "


class SpecFormScreen(ModalScreen[Spec | None]):
    """Dismissed with the checked Spec, or None when the person goes back."""

    # Priority: text areas take ctrl+s and escape for themselves otherwise.
    BINDINGS: ClassVar[list[BindingType]] = [*bindings_for(SPEC)]
    # CSS, not DEFAULT_CSS: the app's `.dialog TextArea` rule must not win over these.
    CSS = """
    #spec-fields { height: 1fr; scrollbar-size: 1 1; }
    #spec-fields .field { height: 1; margin: 1 0 0 0; }
    #spec-fields .field > Label { width: 12; color: $text-muted; }
    #spec-fields .field > Input { width: 1fr; background: $boost; }
    #spec-fields .area-label { margin: 1 0 0 0; color: $text-muted; }
    #spec-fields TextArea { height: 4; background: $boost; scrollbar-size: 1 1; }
    #spec-fields TextArea#examples { height: 6; }
    #spec-fields .problem { display: none; color: $text-error; margin: 0 0 0 12; }
    #spec-fields .problem.shown { display: block; }
    #spec-fields #problem-spec { margin: 1 0 0 0; }
    """

    def __init__(self, spec: Spec | None = None) -> None:
        super().__init__()
        self.initial = spec
        self.opened_with: list[str] = []

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="dialog") as dialog:
            dialog.border_title = "new from spec"
            dialog.border_subtitle = "ctrl+s: check and use this spec · esc: back"
            with VerticalScroll(id="spec-fields"):
                for field, placeholder, hint in INPUTS:
                    with Horizontal(classes="field"):
                        yield Label(field)
                        yield Input(
                            self._initial_text(field),
                            placeholder=f"{placeholder}  ({hint})",
                            id=field,
                            compact=True,
                        )
                    yield Static("", id=f"problem-{field}", classes="problem")
                for field, label, placeholder in AREAS:
                    yield Label(label, classes="area-label")
                    yield TextArea(
                        self._initial_text(field),
                        id=field,
                        placeholder=placeholder,
                        compact=True,
                        soft_wrap=True,
                    )
                    yield Static("", id=f"problem-{field}", classes="problem")
                yield Static("", id="problem-spec", classes="problem")
        yield Footer(compact=True)  # its own keys, not those of the screen beneath

    def on_mount(self) -> None:
        self.query_one("#name", Input).focus()
        self.opened_with = self._fields()

    def _fields(self) -> list[str]:
        """Every field's text, to tell what the person typed from what the form opened with."""
        return [field.value for field in self.query(Input)] + [
            area.text for area in self.query(TextArea)
        ]

    def _initial_text(self, field: str) -> str:
        spec = self.initial
        if spec is None:
            return ""
        if field == "examples":
            return "\n".join(example.line() for example in spec.examples)
        if field == "constraints":
            return "\n".join(spec.constraints)
        return str(getattr(spec, field))

    # -- reading and checking ---------------------------------------------------------------

    def values(self) -> dict[str, Any]:
        """The fields as a spec's TOML would hold them; empty ones left out (so "missing")."""
        data: dict[str, Any] = {}
        for field, _, _ in INPUTS:
            text = self.query_one(f"#{field}", Input).value.strip()
            if text:
                data[field] = text
        description = self.query_one("#description", TextArea).text.strip()
        if description:
            data["description"] = description
        data["examples"] = [
            parse_example_line(line) for line in self._lines("examples") if line.strip()
        ]
        data["constraints"] = [line.strip() for line in self._lines("constraints") if line.strip()]
        return data

    def _lines(self, field: str) -> list[str]:
        return self.query_one(f"#{field}", TextArea).text.splitlines()

    def check(self) -> Spec | None:
        """The spec, or None with its problem shown under the field it names."""
        self._clear_problems()
        try:
            return validate_spec(self.values(), PREFIX.removesuffix(": "))
        except SpecError as exc:
            self.show_problem(exc.field, str(exc).removeprefix(PREFIX))
            return None

    def show_problem(self, field: str, message: str) -> None:
        known = {name for name, _, _ in INPUTS} | {name for name, _, _ in AREAS}
        target = field if field in known else "spec"
        problem = self.query_one(f"#problem-{target}", Static)
        problem.update(message)
        problem.add_class("shown")
        if target != "spec":
            widget = self.query_one(f"#{target}", Widget)
            widget.focus()
            self.query_one("#spec-fields", VerticalScroll).scroll_to_widget(problem)

    def _clear_problems(self) -> None:
        for problem in self.query(".problem"):
            problem.remove_class("shown")

    @on(Input.Submitted)
    def _next_field(self) -> None:
        self.focus_next()

    @on(Input.Changed)
    @on(TextArea.Changed)
    def _edited(self, event: Input.Changed | TextArea.Changed) -> None:
        """A field the person edits loses its (now stale) problem."""
        widget_id = event.control.id if event.control is not None else None
        if widget_id:
            self.query_one(f"#problem-{widget_id}", Static).remove_class("shown")

    # -- actions ------------------------------------------------------------------------------

    def palette_commands(self) -> Iterable[SystemCommand]:
        """Starting or leaving the form, in the command palette too."""
        yield SystemCommand("Spec: start the run (ctrl+s)", "check the spec", self.action_submit)
        yield SystemCommand("Spec: cancel (esc)", "close the form", self.action_cancel)

    def action_submit(self) -> None:
        spec = self.check()
        if spec is not None:
            self.dismiss(spec)

    def action_cancel(self) -> None:
        """Close the form; what was typed is not dropped without asking (the default keeps
        it)."""
        if self._fields() == self.opened_with:  # nothing typed since the form opened
            self.dismiss(None)
            return
        question = "close the form? the spec you typed is not kept anywhere."
        confirm = ConfirmScreen("drop the spec?", question, yes="drop it", no="keep writing")
        self.app.push_screen(confirm, self._drop_confirmed)

    def _drop_confirmed(self, yes: bool | None) -> None:
        if yes:
            self.dismiss(None)
