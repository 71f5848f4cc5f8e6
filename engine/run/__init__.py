"""The run: the loop, its modes, guards, gate, events, audit trail, resume and report."""
