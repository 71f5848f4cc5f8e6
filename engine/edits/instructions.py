"""What the model is told about answering: the instructions for each edit format, and the
shape to answer again in when an answer cannot be used."""

from __future__ import annotations

from engine.edits.proposal import EditFormat
from engine.errors import EditFormatError

_JSON_SHAPE = """\
{"explanation": "one line: what you changed and why",
 "edits": [
  {"path": "pkg/mod.py", "search": "exact lines from the file now", "replace": "their new text"},
  {"path": "pkg/new_module.py", "content": "the whole text of a new file"}
 ]}"""

_WHOLE_SHAPE = """\
One line: what you changed and why.

pkg/mod.py
```python
<the complete new content of pkg/mod.py>
```"""

_WHOLE_AGAIN = (
    "Answer again: one line saying what you changed and why; then, for each file you change, "
    "its path alone on a line and right after it a fenced python code block with the whole "
    "corrected file, every line of it."
)
_SHAPES: dict[EditFormat, str] = {"json": _JSON_SHAPE, "whole": _WHOLE_SHAPE}

# The labels a prompt writes after a shown test file's path. Small models copy them back with
# the file, worded as here or close to it: the parser reads any "(test file...)" off a path.
TEST_FILE_LABEL = "(test file: read only)"
FOCUSED_TEST_FILE_LABEL = "(test file, read only: its failing tests and what they use)"


def instructions(format: EditFormat, example_path: str | None = None) -> str:
    """The system-prompt paragraph that tells the model how to answer, with a tiny example.

    Small models copy the example's path literally: give them a real one when known.
    """
    text = _instructions(format)
    return text.replace("pkg/mod.py", example_path) if example_path else text


def _instructions(format: EditFormat) -> str:
    if format == "json":
        return (
            "Answer with one JSON object (a ```json fence around it is fine):\n"
            f"{_JSON_SHAPE}\n"
            'Paths are relative to the project root. "search" must be copied exactly from the '
            "current file, with enough lines to occur exactly once; for several places, give "
            'several edits. Use "content" only for a new file or to rewrite a whole file. '
            "Write newlines inside strings as \\n."
        )
    # Terse, and no placeholder block: the small models this format is for copy an example
    # block verbatim, and an invitation to explain makes them answer in prose only.
    return (
        "Reply with the path of the file you fix alone on the first line (for example: "
        "pkg/mod.py), then a fenced python code block holding the whole corrected file, every "
        "line of it. If you fix several files, repeat this for each. No explanations."
    )


def shape_error(problems: list[str], format: EditFormat) -> EditFormatError:
    """An unusable answer's problems, and how to answer again in `format`."""
    if format == "whole":  # no example block: small models copy it verbatim
        return EditFormatError(problems, _WHOLE_AGAIN)
    return EditFormatError(problems, f"Answer again in this shape:\n{_SHAPES[format]}")


def reply_line(format: EditFormat, paths: list[str]) -> str:
    """The small prompt's last line: what to send back. For `whole`, one sentence naming
    the file when there is one (small models answer best to the concrete); for `json`, the
    whole paragraph, since its shape cannot be told shorter."""
    if format == "json":
        return instructions("json", paths[0] if paths else None)
    if len(paths) == 1:
        return (
            f"Reply with {paths[0]} alone on the first line, then a python code block "
            "holding the whole corrected file."
        )
    return (
        "Reply with the path of each file you fix alone on a line, then a python code block "
        "holding the whole corrected file."
    )


_RESTARTED = (
    "Your fixes kept failing the same way, so the code was put back as it was at the start. "
)
RESTART_NOTE = _RESTARTED + (
    "Do not repeat them. First say which assumption in the code is wrong, in one sentence of "
    "your explanation; then fix that."
)
# The whole-file format's small models answer an invitation to explain in prose only (seen:
# the wrong assumption said, no file sent): the same turn, then the reply's shape.
RESTART_NOTE_WHOLE = _RESTARTED + (
    "Do not repeat them: find the assumption in the code that is wrong and fix that."
)


# A stall with the code still as it was at the start (the answers changed nothing): nothing
# was put back, and the note must not say it was.
_UNCHANGED = "Your last answers left the code as it was at the start. "
UNCHANGED_NOTE = _UNCHANGED + (
    "Do not send it back as it is. First say which assumption in the code is wrong, in one "
    "sentence of your explanation; then fix that."
)
UNCHANGED_NOTE_WHOLE = _UNCHANGED + (
    "Do not send it back as it is: find the assumption in the code that is wrong and fix that."
)


def restart_note(format: EditFormat, paths: list[str], *, put_back: bool = True) -> str:
    """What the prompt after a restart on a stall says, in the words `format` needs;
    `put_back` False: the code was at the start already."""
    if format != "whole":
        return RESTART_NOTE if put_back else UNCHANGED_NOTE
    note = RESTART_NOTE_WHOLE if put_back else UNCHANGED_NOTE_WHOLE
    return f"{note} {reply_line('whole', paths)}"
