"""Where a test run's time went, per test file, from pytest's JUnit XML report.

`make test` writes the report and prints this after the tests; CI's time budget is spent by
whole files (their module fixtures, their sandboxes), which --durations alone does not sum."""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

SHOWN = 30


def per_file(report: Path) -> tuple[Counter[str], Counter[str]]:
    seconds: Counter[str] = Counter()
    tests: Counter[str] = Counter()
    for case in ET.parse(report).getroot().iter("testcase"):
        module = (case.get("classname") or "?").replace(".", "/") + ".py"
        seconds[module] += float(case.get("time") or 0)
        tests[module] += 1
    return seconds, tests


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python .ci/durations.py JUNIT.xml", file=sys.stderr)
        return 2
    report = Path(argv[0])
    if not report.is_file():
        print(f"no test report at {report}", file=sys.stderr)
        return 1
    seconds, tests = per_file(report)
    total = sum(seconds.values())
    print(f"test time by file (setup + call + teardown; {total:.0f} s over {len(seconds)} files):")
    for module, spent in seconds.most_common(SHOWN):
        print(f"{spent:7.1f} s {spent / total:6.1%} {tests[module]:4d} tests  {module}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
