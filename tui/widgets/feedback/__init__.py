"""The feedback pane: what the verifier said about the selected iteration, and the model's
answer (streamed live while it is written)."""

from tui.widgets.feedback.pane import FeedbackPane, feedback_content

__all__ = ["FeedbackPane", "feedback_content"]
