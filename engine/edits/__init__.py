"""The edit protocol: what the model answers, how it is read, matched and applied."""
