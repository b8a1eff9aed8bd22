"""tape-vs-trace tooling: the machine record for asv runs, result hygiene, and the report."""
