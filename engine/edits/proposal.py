"""What a model's answer becomes: a `Proposal` of `Edit`s, the errors it can raise, what
applying it did. ARCHITECTURE.md, "The edit protocol"."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, field_validator

from engine.text.untrusted import printable, valid_unicode

EditFormat = Literal["json", "whole"]


class Edit(BaseModel):
    """One change to one file: either `search` → `replace`, or the whole new `content`."""

    model_config = ConfigDict(frozen=True)

    path: str
    search: str | None = None
    replace: str | None = None
    content: str | None = None

    @field_validator("path", "search", "replace", "content")
    @classmethod
    def _encodable(cls, text: str | None) -> str | None:
        """Code as the model sent it (tabs, newlines, any script), but no lone surrogate:
        it could be neither written to a file nor put in the trail."""
        return None if text is None else valid_unicode(text)


class Proposal(BaseModel):
    """What the model proposed in one answer."""

    model_config = ConfigDict(frozen=True)

    explanation: str
    edits: list[Edit]
    format: EditFormat

    @field_validator("explanation")
    @classmethod
    def _shown_safely(cls, explanation: str) -> str:
        """The explanation reaches terminals, the trail and commit messages: no escape
        sequence, control character or lone surrogate survives."""
        return printable(explanation)


class AppliedEdits(BaseModel):
    """What `apply` did: files written, and files whose new content equals what was there."""

    model_config = ConfigDict(frozen=True)

    files: list[str]
    unchanged: list[str]
