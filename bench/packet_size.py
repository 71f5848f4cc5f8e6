"""How much smaller is the repair packet than the raw output it replaces, and how
long does distillation take?

For each real failing suite it reports the raw output's tokens (stdout + stderr
of the stage, what a tool that feeds logs back would send), the rendered
packet's tokens, the ratio, and the time to parse, classify, distill and render
(median of `--runs`). Tokens are counted with fixloop's stated approximation
(UTF-8 bytes / 3), the same measure for both sides.

Suites:
  * every captured failing case in tests/fixtures/captured (real tool output
    from the sandbox; `many_failures` has 120 failing tests);
  * with `--live` (root, gvisor): toolz 1.2.0 (vendored sdist) with one injected
    bug, and with a bug in `curry` that fails most of its suite.

    .venv/bin/python bench/packet_size.py [--live] [--runs N] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tarfile
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from engine.feedback.distill import distill  # noqa: E402
from engine.project.modules import project_modules  # noqa: E402
from engine.text.tokens import approximate_tokens  # noqa: E402
from engine.verify.classify import classify  # noqa: E402
from engine.verify.execute import parse_stage  # noqa: E402
from engine.verify.results import StageResult  # noqa: E402
from engine.verify.stages import Stage  # noqa: E402
from sandbox import ExecResult  # noqa: E402

CAPTURED = REPO / "tests" / "fixtures" / "captured"
PROJECTS = REPO / "tests" / "fixtures" / "projects"
SDIST = REPO / "tests" / "fixtures" / "thirdparty" / "toolz-1.2.0.tar.gz"
TOOLZ_BUGS = {
    "toolz, 1 injected bug": (
        "toolz/itertoolz.py",
        "    d = collections.defaultdict(int)\n",
        "    d = collections.defaultdict(lambda: 1)\n",
    ),
    "toolz, broken curry": (
        "toolz/functoolz.py",
        "            return self._partial(*args, **kwargs)\n",
        "            return self._partial(*args[1:], **kwargs)\n",
    ),
}


@dataclass
class SuitePacketSize:
    suite: str
    failing: int
    raw_tokens: int
    packet_tokens: int
    ratio: float
    distill_ms: float


def measure(
    suite: str, stage: Stage, result: ExecResult, nonce: str, root: Path, runs: int
) -> SuitePacketSize | None:
    times = []
    stage_result: StageResult | None = None
    text = ""
    for _ in range(runs):
        started = time.perf_counter()
        stage_result = parse_stage(stage, result, nonce)
        classification = classify([stage_result], project_modules=project_modules(root))
        packet = distill([stage_result], classification)
        text = packet.render()
        times.append((time.perf_counter() - started) * 1000)
    assert stage_result is not None
    if stage_result.succeeded:
        return None
    raw = stage_result.stdout + stage_result.stderr
    counts = stage_result.report.counts if stage_result.report else None
    raw_tokens = approximate_tokens(raw)
    packet_tokens = approximate_tokens(text)
    return SuitePacketSize(
        suite=suite,
        failing=(counts.failed + counts.errors) if counts else 0,
        raw_tokens=raw_tokens,
        packet_tokens=packet_tokens,
        ratio=round(raw_tokens / max(packet_tokens, 1), 1),
        distill_ms=round(statistics.median(times), 2),
    )


def captured_rows(runs: int) -> list[SuitePacketSize]:
    rows = []
    for path in sorted(CAPTURED.glob("*.json")):
        record = json.loads(path.read_text())
        stage = Stage.model_validate(record["stage"])
        result = ExecResult.model_validate(record["result"])
        row = measure(
            record["case"], stage, result, record["nonce"], PROJECTS / record["project"], runs
        )
        if row is not None:
            rows.append(row)
    return rows


def unpack_with_bug(scratch: str, file: str, correct: str, buggy: str) -> Path:
    with tarfile.open(SDIST) as archive:
        archive.extractall(scratch, filter="data")
    root = Path(scratch) / "toolz-1.2.0"
    module = root / file
    source = module.read_text()
    if source.count(correct) != 1:
        raise SystemExit(f"the bug site in {file} is gone")
    module.write_text(source.replace(correct, buggy))
    for path in [Path(scratch), *Path(scratch).rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)  # the sandbox runs as nobody
    return root


async def live_rows(runs: int) -> list[SuitePacketSize]:
    from engine.verify.execute import Verifier
    from sandbox.gvisor import GvisorSandbox

    sandbox = GvisorSandbox()
    rows = []
    try:
        for suite, (file, correct, buggy) in TOOLZ_BUGS.items():
            with tempfile.TemporaryDirectory() as scratch:
                root = unpack_with_bug(scratch, file, correct, buggy)
                stage = Stage(name="tests", kind="tests", cmd="python -m pytest -q toolz")
                result, nonce = await Verifier(sandbox, [stage]).execute(stage, root)
                row = measure(suite, stage, result, nonce, root, runs)
                if row is not None:
                    rows.append(row)
    finally:
        await sandbox.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--live", action="store_true", help="also run toolz in the sandbox")
    parser.add_argument("--runs", type=int, default=20, help="timed repetitions per suite")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = captured_rows(args.runs)
    if args.live:
        rows += asyncio.run(live_rows(args.runs))
    if args.json:
        print(json.dumps([asdict(row) for row in rows], indent=1))
        return
    print(f"{'suite':28} {'failing':>7} {'raw tok':>8} {'packet':>7} {'ratio':>6} {'distill':>9}")
    for row in rows:
        print(
            f"{row.suite:28} {row.failing:7} {row.raw_tokens:8} {row.packet_tokens:7} "
            f"{row.ratio:5.1f}x {row.distill_ms:7.2f}ms"
        )
    worst = max(rows, key=lambda r: r.packet_tokens)
    slowest = max(rows, key=lambda r: r.distill_ms)
    print(f"\nlargest packet: {worst.packet_tokens} tokens ({worst.suite}); target <= 2000")
    print(f"slowest distillation: {slowest.distill_ms} ms ({slowest.suite}); target < 100 ms")


if __name__ == "__main__":
    main()
