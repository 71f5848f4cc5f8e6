"""Benchmarks: `fixloop-tui bench`'s task suites (suite/) and the measurement scripts."""
