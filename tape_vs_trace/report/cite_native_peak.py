"""`tape-vs-trace cite native-peak key=value ...`: one citable block per framework of a case of the CPU native peaks
(from the newest results/native-peak file that holds the case): its peak with the method named, the spread over
processes, the analytic bounds and the suite's own CPU method beside it, commit, machine and file; and the JAX/PyTorch
ratio where the side tables' like rule allows it (else why not). The rows are selected and the blocks laid out by the
side tables' one citation (cite_side); this module says what a native-peak case holds."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from implementations import frameworks
from tape_vs_trace.report.cite_side import Citation
from tape_vs_trace.report.native_peak_section import _bounds, _case, _mib, _spread
from tape_vs_trace.results import native_peak_rows as rows

QUERY = rows.SPEC.name
LABEL = "JAX / PyTorch"


def _interval(low: float, high: float) -> dict:
    return {"ci_low": low if math.isfinite(low) else None, "ci_high": high if math.isfinite(high) else None}


class NativePeak(Citation):
    """A case's line per framework: its processes merged (native_peak_rows.summary), bounds and the suite's method."""

    def merge(self, table: pd.DataFrame) -> list[dict]:
        return rows.summary(rows.numbers(table))

    def record(self, results: Path, line: dict) -> dict:
        return {"result": QUERY, **{k: line[k] for k in self.spec.key}, "case": _case(line),
                "value": line["peak_bytes"], "unit": "bytes", "above": "the step's start", **_interval(
                    line["ci_low"], line["ci_high"]), "processes": line["processes"], "peaks": line["peaks"],
                "spread": _spread(line), "bounds_mib": _bounds(line), "verdicts": line["verdicts"],
                "method": line["method"], "other_peak_bytes": line["other_peak_bytes"] or None,
                "other_method": line["other_method"] or None, "commit": line["commit"], "machine": line["machine"],
                "file": line["file"], "source": line["source"]}

    def title(self, rec: dict) -> str:
        return (f"CPU peak memory, {rec['case']}, {rec['mode']}, float32 ({rec['machine']}, commit "
                f"{rec['commit'][:8]}, {rec['file']}) — {frameworks.label(rec['framework'])}")

    def lines(self, rec: dict) -> list[tuple[str, str]]:
        out = [("value", f"{_mib(rec['value'])} MiB above the step's start ({rec['spread']}; bounds "
                         f"{rec['bounds_mib']} MiB, {', '.join(rec['verdicts'])})"),
               ("method", rec["method"])]
        if rec["other_peak_bytes"] is not None:
            out.append(("suite's", f"{_mib(rec['other_peak_bytes'])} MiB by {rec['other_method']}"))
        return out + [("commit", rec["commit"][:8]), ("machine", rec["machine"]), ("source", rec["source"])]

    def ratios(self, lines: list[dict]) -> list[tuple[str, str, str, dict]]:
        """The JAX/PyTorch peak ratio where both frameworks' lines are here, or why the like rule refuses it."""
        by_framework = {line["framework"]: line for line in lines}
        if set(by_framework) != set(frameworks.NAMES):
            return []
        try:
            ratio = rows.divide(by_framework["torch"], by_framework["jax"])
        except rows.NativePeakError as exc:
            return [("peak_bytes", LABEL, str(exc), {"of": "jax/torch", "ratio": None, "refused": str(exc)})]
        [line] = rows.ratios([by_framework["torch"], by_framework["jax"]])
        interval = (f" (95 % across processes: {line['ratio_low']:.3f}-{line['ratio_high']:.3f})"
                    if math.isfinite(line["ratio_low"]) else " (one process a side: no interval)")
        return [("peak_bytes", LABEL, f"{ratio:.3f}{interval}",
                 {"of": "jax/torch", "ratio": ratio, "refused": None,
                  **_interval(line["ratio_low"], line["ratio_high"])})]


CITATION = NativePeak(rows.SPEC)
