"""`fixloop-tui bench`: task suites, seeded selection, mutants, the test-and-repair runs of each
feedback arm, their scores, the table and the plot. No Textual import."""
