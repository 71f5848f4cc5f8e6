"""`fixloop-tui batch`: many headless runs, each in its own clone, on this machine or on a Ray
cluster, their results and run directories gathered back (ARCHITECTURE.md, "Batch runs")."""
