"""The data model: a run's results as files, rows, keys and records, and the intervals on them."""
