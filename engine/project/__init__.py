"""The user's project: its settings, the run's git worktree, `.fixloop/` on disk."""
