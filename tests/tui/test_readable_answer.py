"""The model tab shows a JSON answer laid out for reading: a key per line, a file's content as
its own lines, and anything that is no JSON object as it came."""

from __future__ import annotations

import json

from tui.widgets.feedback.answer import readable_answer

ANSWER = {
    "explanation": "use addition",
    "edits": [
        {"path": "calc.py", "search": "return a - b", "replace": "return a + b"},
        {"path": "new.py", "content": "import os\n\n\ndef f():\n    return os.sep\n"},
    ],
}


def test_a_fenced_json_answer_is_laid_out_a_key_per_line() -> None:
    shown = readable_answer("```json\n" + json.dumps(ANSWER) + "\n```").splitlines()
    assert shown[1] == '  explanation: "use addition"'
    assert '      search: "return a - b"' in shown
    assert '      replace: "return a + b"' in shown
    assert max(len(line) for line in shown) < 40  # one line of JSON was 190 characters


def test_a_files_content_is_shown_as_its_lines_not_escapes() -> None:
    shown = readable_answer(json.dumps(ANSWER))
    assert "\\n" not in shown
    assert "      content: |\n        import os\n\n\n        def f():\n" in shown
    assert "            return os.sep\n" in shown


def test_what_is_no_json_object_is_shown_as_it_came() -> None:
    for text in ("calc.py\n```python\ndef add(a, b):\n    return a + b\n```", "[1, 2]", "{oops"):
        assert readable_answer(text) == text
