"""asv results -> a citable report: one tidy table (summary.csv), a markdown summary with provenance, JAX/PyTorch
ratios with between-process intervals and findings written from the data (summary.md), and matplotlib figures.

load (results -> table), stats (per-process statistics and the ratio rule), findings (a table of rules), markdown,
figures and readme; `build` puts them together so that a failure leaves the previous report in place.
"""

from tape_vs_trace.report.build import OUTPUTS, check_out, write_report
from tape_vs_trace.report.load import COLUMNS, ReportError, Results, load_results

__all__ = ["COLUMNS", "OUTPUTS", "ReportError", "Results", "check_out", "load_results", "write_report"]
