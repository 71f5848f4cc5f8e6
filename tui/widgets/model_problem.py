"""The task screen's line about the model when it cannot be called (no key, unknown provider):
said, with its fix, while the person types the task, not after a run has started."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static


class ModelProblem(Static):
    """Hidden while the model is fine (or not checked yet)."""

    DEFAULT_CSS = """
    ModelProblem {
        display: none;
        height: auto;
        padding: 0 1;
        margin: 1 0 0 0;
    }
    ModelProblem.-shown {
        display: block;
    }
    """

    def __init__(self) -> None:
        super().__init__(id="model-problem")
        self.problem: str | None = None
        self.checked = False  # the preflight has answered

    def show(self, problem: str | None) -> None:
        """The preflight's one line, or None: the model can be called."""
        self.problem, self.checked = problem, True
        self.set_class(problem is not None, "-shown")
        if problem is not None:
            self.update(
                Content.assemble(("the model cannot be called: ", "bold $text-error"), problem)
            )
