"""The edit protocol: what the model answers, how it is read, matched and applied; and the one
reader of the diffs that edits make."""
