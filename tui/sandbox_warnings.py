"""What the command line says about sandboxes that are not gVisor: every job under runc
(--allow-runc) warns, each time; unsafe-local is said once, before any job, not per job."""

from __future__ import annotations

import contextlib
import sys
import warnings
from collections.abc import Iterator
from typing import TextIO

from sandbox import RuncWarning


def show_runc_warnings() -> None:
    """Every job that runs outside gVisor (--allow-runc) says so on stderr, each time."""
    warnings.simplefilter("always", RuncWarning)
    shown = warnings.showwarning

    def show(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: TextIO | None = None,
        line: str | None = None,
    ) -> None:
        if issubclass(category, RuncWarning):
            print(f"fixloop-tui: warning: {message}", file=sys.stderr, flush=True)
        else:
            shown(message, category, filename, lineno, file, line)

    warnings.showwarning = show


@contextlib.contextmanager
def unsafe_local_said_once(backend: str, runs: str) -> Iterator[None]:
    """With the unsafe-local backend: one warning now (`unsafe-local runs <runs>`), and its
    per-job warnings silenced while the block runs."""
    if backend == "unsafe-local":
        print(f"fixloop-tui: warning: unsafe-local runs {runs}", file=sys.stderr)
    with warnings.catch_warnings():
        from sandbox.unsafe_local import UnsafeLocalWarning

        warnings.simplefilter("ignore", UnsafeLocalWarning)
        yield
