"""A spec for spec mode: its definition from TOML, its examples as tests, the references its
tests are read against. The mode that runs one and its report are in engine/run
(`spec_mode.py`, `spec_report.py`)."""
