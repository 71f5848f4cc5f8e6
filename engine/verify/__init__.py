"""Verification: stages run in the sandbox, parsed, classified, judged honestly."""
