"""Turning a stage's raw output into data: the pytest plugin's report, ruff and mypy
JSON, and a generic excerpt for any other command. Pure functions over text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from pydantic import ValidationError

from engine.verify.results import Diagnostic, Frame, TestReport

ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\x1b[()][A-Z0-9]")
EXCERPT_BYTES = 4000
ERROR_LINE = re.compile(
    r"(^|\b)(error|Error|ERROR|FAIL|FAILED|Traceback|Exception|fatal|panic|"
    r"not found|No such file|cannot|Cannot|Timeout)\b"
)


def strip_ansi(text: str) -> str:
    return ANSI.sub("", text).replace("\r\n", "\n")


def extract_report(stream: str, nonce: str) -> tuple[TestReport | None, str]:
    """The plugin's report (the last line starting with `nonce`) and the stream without it.

    None when the session never reached its end (killed, crashed, or the plugin
    was not loaded) or the line is not a valid report.
    """
    report: TestReport | None = None
    kept: list[str] = []
    for line in stream.split("\n"):
        if line.startswith(nonce):
            try:
                report = TestReport.model_validate_json(line[len(nonce) :])
            except ValidationError:
                report = None
            continue
        kept.append(line)
    return report, "\n".join(kept)


def relative(path: str, roots: Iterable[str]) -> str:
    for root in roots:
        prefix = root.rstrip("/") + "/"
        if path.startswith(prefix):
            return path[len(prefix) :]
    return path


def parse_ruff(stdout: str, roots: Iterable[str] = ()) -> list[Diagnostic] | None:
    """`ruff check --output-format json`; None when the output is not that JSON."""
    try:
        items = json.loads(stdout)
    except json.JSONDecodeError:
        return None
    if not isinstance(items, list):
        return None
    roots = list(roots)
    found = []
    for item in items:
        if not isinstance(item, dict):
            continue
        location = item.get("location") or {}
        found.append(
            Diagnostic(
                tool="ruff",
                file=relative(str(item.get("filename", "")), roots),
                line=int(location.get("row") or 0),
                col=int(location.get("column") or 0),
                code=str(item.get("code") or ""),
                message=str(item.get("message", "")),
                severity=str(item.get("severity") or "error"),
            )
        )
    return found


FORMAT_PATTERNS = (
    re.compile(r"^Would reformat:\s+(?P<file>\S+)", re.MULTILINE),
    re.compile(r"^unformatted: File would be reformatted\n\s*-->\s*(?P<file>[^:\s]+)", re.M),
)


def parse_ruff_format(stdout: str, roots: Iterable[str] = ()) -> list[Diagnostic]:
    """`ruff format --check`: one diagnostic per file it would reformat."""
    text = strip_ansi(stdout)
    roots = list(roots)
    files: dict[str, None] = {}
    for pattern in FORMAT_PATTERNS:
        for match in pattern.finditer(text):
            files[relative(match["file"], roots)] = None
    return [
        Diagnostic(tool="ruff format", file=name, message="file is not formatted (run ruff format)")
        for name in files
    ]


MYPY_TEXT = re.compile(
    r"^(?P<file>[^:\n]+):(?P<line>\d+):(?:(?P<col>\d+):)? (?P<sev>error|warning|note): "
    r"(?P<msg>.*?)(?:  \[(?P<code>[\w-]+)\])?$",
    re.MULTILINE,
)


def parse_mypy(stdout: str, roots: Iterable[str] = ()) -> list[Diagnostic]:
    """mypy's `-O json` lines, or its classic text lines when JSON is not available."""
    roots = list(roots)
    found: list[Diagnostic] = []
    for line in stdout.splitlines():
        if not line.startswith("{"):
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(item, dict) or "message" not in item:
            continue
        if item.get("severity") == "note":
            continue
        found.append(
            Diagnostic(
                tool="mypy",
                file=relative(str(item.get("file", "")), roots),
                line=int(item.get("line") or 0),
                col=int(item.get("column") or 0) + 1,
                code=str(item.get("code") or ""),
                message=str(item["message"]),
                severity=str(item.get("severity") or "error"),
            )
        )
    if found:
        return found
    for match in MYPY_TEXT.finditer(strip_ansi(stdout)):
        if match["sev"] == "note":
            continue
        found.append(
            Diagnostic(
                tool="mypy",
                file=relative(match["file"], roots),
                line=int(match["line"]),
                col=int(match["col"] or 0),
                code=match["code"] or "",
                message=match["msg"],
                severity=match["sev"],
            )
        )
    return found


def generic_excerpt(stdout: str, stderr: str, cap: int = EXCERPT_BYTES) -> str:
    """What a person would look at first: the first error block, else head + tail."""
    text = strip_ansi("\n".join(part for part in (stderr.strip(), stdout.strip()) if part))
    lines = text.split("\n")
    start = next((i for i, line in enumerate(lines) if ERROR_LINE.search(line)), None)
    if start is not None:
        block = "\n".join(lines[max(0, start - 2) : start + 40])
        if len(block.encode()) <= cap:
            return block
        text = block
    encoded = text.encode()
    if len(encoded) <= cap:
        return text
    half = cap // 2
    head = encoded[:half].decode(errors="ignore")
    tail = encoded[-half:].decode(errors="ignore")
    return f"{head}\n[... {len(encoded) - cap} bytes omitted ...]\n{tail}"


FAULTHANDLER_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<func>\S+)')


def hung_frames(text: str) -> list[Frame]:
    """Project frames (relative paths) of the first faulthandler dump, innermost first:
    where a test was stuck when pytest's faulthandler_timeout fired."""
    start = text.find("Timeout (")
    if start < 0:
        return []
    frames: list[Frame] = []
    for line in text[start:].split("\n")[1:]:
        if line.startswith("Thread ") or line.startswith("Current thread "):
            if frames:
                break
            continue
        match = FAULTHANDLER_FRAME.match(line)
        if match is None:
            if frames:
                break
            continue
        if not match["file"].startswith(("/", "<")):
            frames.append(
                Frame(file=match["file"], line=int(match["line"]), function=match["func"])
            )
    return frames
