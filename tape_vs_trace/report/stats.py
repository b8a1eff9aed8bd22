"""Between-process statistics and the one rule for dividing two results.

On a shared machine the same step differs by tens of percent between processes while one process's samples agree
within a few: a value, its spread and its interval therefore come from per-process medians. asv records, with
--record-samples, the samples of every round (one process each) one after another; with a fixed integer `repeat`
of K samples per process, chunk i of K samples is process i.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np

from implementations import metrics
from tape_vs_trace.results import rowkey
from tape_vs_trace.results.asv_files import Split
from tape_vs_trace.results.intervals import ACROSS_PROCESSES, median_interval, ratio_interval
from tape_vs_trace.results.rowkey import RowKey

# The smallest change stated as a difference: a sampled ratio is a finding only when its 95 % interval excludes
# every change up to this, not only 1 (in the spirit of `asv compare`, which reports a change when it is significant
# and beyond a factor, 1.1 by default): about the upper quartile of how far the same ratio moved between two runs of
# one commit, within one process and between processes (docs/history.md). Exact values (bytes, counts) have no
# such floor, only a resolution below which a difference is a few scalars (metrics.Metric.resolution).
WITHIN_PROCESS = 0.03
BETWEEN_PROCESSES = 0.10


def summarise(value, q25, q75, samples, sampled: bool, split: Split) -> dict:
    """The value, spread and interval columns of one result. `value` is asv's result (None: failed)."""
    nan = math.nan
    if value is None:
        return {"value": nan, "spread": nan, "q25": nan, "q75": nan, "ci_low": nan, "ci_high": nan,
                "processes": None, "samples": None, "basis": "", "process_medians": "", "status": "failed"}
    value = float(value)
    if not sampled:  # counts and bytes are deterministic: the value is its own interval
        return {"value": value, "spread": 0.0, "q25": value, "q75": value, "ci_low": value, "ci_high": value,
                "processes": None, "samples": None, "basis": "exact", "process_medians": "", "status": "ok"}
    usable = isinstance(samples, list) and samples and all(isinstance(s, int | float) for s in samples)
    chunks, why = split.chunks(samples) if usable else (None, "no samples recorded (run without --record-samples)")
    if chunks is None:
        q25 = nan if q25 is None else float(q25)
        q75 = nan if q75 is None else float(q75)
        return {"value": value, "spread": q75 - q25, "q25": q25, "q75": q75, "ci_low": nan, "ci_high": nan,
                "processes": None, "samples": len(samples) if usable else None, "basis": f"asv: {why}",
                "process_medians": "", "status": "ok"}
    medians = [float(np.median(c)) for c in chunks]
    low, high = median_interval(medians)
    q25, q75 = (float(q) for q in np.percentile(medians, [25, 75]))
    # the interval's own centre (the geometric mean of the process medians), so a value never lies outside its
    # interval: with many processes of a skewed spread, the median of the medians did (docs/history.md)
    return {"value": float(np.exp(np.mean(np.log(medians)))), "spread": q75 - q25, "q25": q25, "q75": q75,
            "ci_low": low, "ci_high": high, "processes": len(medians), "samples": len(samples),
            "basis": "processes" if len(medians) > 1 else "one process", "process_medians": json.dumps(medians),
            "status": "ok"}


@dataclass(frozen=True)
class Comparison:
    """b / a with its interval, or no ratio and the reason (a short phrase the tables print)."""

    ratio: float = math.nan
    low: float = math.nan
    high: float = math.nan
    reason: str = ""  # why there is no ratio; "" when there is one
    note: str = ""  # why a ratio has no interval
    resolution: float = BETWEEN_PROCESSES  # changes a sampled ratio cannot state (WITHIN_PROCESS for paired ones)
    delta: float = math.nan  # b - a of exact values (`exact`), in `unit`
    unit: str = ""
    negligible: bool = False  # an exact difference within the metric's resolution (metrics.Metric.resolution)

    @property
    def formed(self) -> bool:
        return not self.reason

    @property
    def differs(self) -> bool | None:
        """Whether the ratio is stated as a difference: an exact ratio (low == high) whenever it is not 1 and not
        `negligible`; a sampled one when its interval excludes every change up to `resolution` (it lies wholly above
        1 + resolution or below 1 / (1 + resolution)). None when there is no interval."""
        if not self.formed or not (math.isfinite(self.low) and math.isfinite(self.high)):
            return None
        if self.low == self.high:
            return self.ratio != 1.0 and not self.negligible
        return not self.reaches_resolution

    @property
    def reaches_resolution(self) -> bool | None:
        """Whether a sampled interval reaches into the band of changes smaller than `resolution` around 1 (None for an
        exact ratio or one without an interval)."""
        if not self.formed or self.low == self.high or not (math.isfinite(self.low) and math.isfinite(self.high)):
            return None
        band = 1.0 + self.resolution + 1e-12  # an interval ending at exactly 1.1 at 10 % reaches the band
        return self.low < band and self.high > 1.0 / band


def exact(a: float, b: float, metric: str, unit: str = "bytes") -> Comparison:
    """b / a of two exact values of `metric` (a non-zero divisor): equal where the difference is within the
    metric's resolution (metrics.resolution), which keeps the difference to be told, never as a direction."""
    absolute, fraction = metrics.resolution(metric)
    delta = b - a
    negligible = 0 < abs(delta) <= absolute and abs(delta) <= fraction * max(abs(a), abs(b))
    return Comparison(b / a, b / a, b / a, delta=delta, unit=unit, negligible=negligible)


def _medians(row: dict) -> list[float]:
    return json.loads(row["process_medians"]) if row.get("process_medians") else []


def _interval(a: dict, b: dict, ratio: float) -> Comparison:
    if not a["sampled"] and not b["sampled"]:
        return exact(a["value"], b["value"], a["metric"], a.get("unit") or "")
    pa, pb = _medians(a), _medians(b)
    if len(pa) > 1 and len(pb) > 1:
        return Comparison(ratio, *ratio_interval(pb, pa, ACROSS_PROCESSES))  # two rows: independent processes
    missing = a if len(pa) < 2 else b
    note = "one process" if missing["basis"] == "one process" else "no samples recorded"
    return Comparison(ratio, note=note)


def refusal(a: dict | None, b: dict | None) -> str:
    """Why no ratio of two rows can be formed before their contents are read ("" when both ran)."""
    if a is None or b is None:
        return "only one framework ran"
    if a["status"] != "ok" or b["status"] != "ok":
        return "failed"
    return ""


def compare(a: dict | None, b: dict | None) -> Comparison:
    """THE ratio rule: b / a across frameworks, formed only between like rows (`rowkey.like`: their keys differ in
    the framework alone, on the same machine and commit, and their runs agree on the benchmark version, what the
    metric counts, the memory method and the mode a peak was measured in)."""
    reason = refusal(a, b) or rowkey.like(a, b)
    if reason:
        return Comparison(reason=reason)
    if not a["value"]:
        return Comparison(reason="divisor is zero")
    return _interval(a, b, b["value"] / a["value"])


def change(a: dict | None, b: dict | None) -> Comparison:
    """b / a within one framework (a variant against its baseline): same machine, commit, framework and metric,
    same measuring method; the interval as for `compare`."""
    reason = refusal(a, b)
    if reason:
        return Comparison(reason=reason)
    ka, kb = RowKey.of(a), RowKey.of(b)
    if not rowkey.same_place(a, b) or (ka.framework, ka.metric) != (kb.framework, kb.metric) or \
            a["memory_method"] != b["memory_method"]:
        return Comparison(reason=rowkey.NOT_LIKE)
    if not a["value"]:
        return Comparison(reason="divisor is zero")
    return _interval(a, b, b["value"] / a["value"])


MODE_KEYS = ("mode", "formulation", "style", "attention")  # how a step is run and written: what `fastest` may cross


def fastest(a: dict | None, b: dict | None) -> Comparison:
    """b / a of each framework's fastest step (the question 'what does each framework give at its best here'): the
    one ratio across modes, formed only where the two rows differ in framework and in how the step is run and
    written (MODE_KEYS) alone, on the same machine, commit and metric; the interval as for `compare`. Never a
    like-mode ratio: its rows say each side's mode."""
    reason = refusal(a, b)
    if reason:
        return Comparison(reason=reason)
    ka, kb = (RowKey.of(r).without(*MODE_KEYS) for r in (a, b))
    if ka.differing(kb) != {"framework"} or not rowkey.same_place(a, b):
        return Comparison(reason="not the same step")
    if not a["value"]:
        return Comparison(reason="divisor is zero")
    return _interval(a, b, b["value"] / a["value"])
