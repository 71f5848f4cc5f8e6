"""How long something took, said as a person reads it (`4.2s`, `22m28s`, `1h02m`): one wording
for every screen, progress line and report. JSON and the trail keep seconds as numbers.

Stdlib only: the app's first frame may import it."""

from __future__ import annotations

import math


def said_duration(seconds: float) -> str:
    """`seconds` in the largest units that keep it short: tenths under a minute (`4.2s`),
    minutes and seconds under an hour (`22m28s`), hours and minutes above (`1h02m`). Never
    negative; not a number reads as `?`."""
    if math.isnan(seconds) or math.isinf(seconds):
        return "?"
    seconds = max(seconds, 0.0)
    if round(seconds, 1) < 60:
        return f"{seconds:.1f}s"
    whole = max(int(seconds), 60)  # a clock's reading: 59m59.9s is not an hour yet
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"
