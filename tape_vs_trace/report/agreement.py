"""When one row of two runs agrees: the interval it is judged by, the verdict, and whether the two runs ran on one
host (`host_check.same_host`), with the calibrated comparison offered where they did not (`host_check.normalised`)."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

from tape_vs_trace.report.load import Results
from tape_vs_trace.results import host_check


@dataclass(frozen=True)
class Interval:
    low: float
    high: float
    kind: str  # "exact", "95 % interval", "IQR", or "" (none)


def overlaps(a: Interval, b: Interval) -> bool:
    """Whether two intervals share a value; False where either end is not finite (no interval)."""
    return all(math.isfinite(v) for v in (a.low, a.high, b.low, b.high)) and a.low <= b.high and b.low <= a.high


def interval(row: dict) -> Interval:
    """The interval a row is judged by: the value itself (exact), the 95 % between-process interval, asv's
    interquartile range where no samples were recorded (weaker: it holds half the samples, and they all come from
    few processes), or none (one process)."""
    if row["status"] != "ok":
        return Interval(math.nan, math.nan, "")
    if not row["sampled"]:
        return Interval(row["value"], row["value"], "exact")
    if math.isfinite(row["ci_low"]) and math.isfinite(row["ci_high"]):
        return Interval(row["ci_low"], row["ci_high"], "95 % interval")
    if str(row["basis"]).startswith("asv:") and math.isfinite(row["q25"]) and math.isfinite(row["q75"]):
        return Interval(row["q25"], row["q75"], "IQR")
    return Interval(math.nan, math.nan, "")


@dataclass
class RowCheck:
    a: dict
    b: dict
    verdict: str  # "agree", "differ", "cannot tell", "different hosts"
    why: str
    normalised: str = ""  # the calibrated comparison offered for different hosts

    @property
    def timing(self) -> bool:
        return bool(self.a["sampled"])


def judge(a: dict, b: dict) -> tuple[str, str]:
    """(verdict, why) for one row of two runs on the same host."""
    if a["status"] != "ok" or b["status"] != "ok":
        if a["status"] == b["status"]:
            return "agree", f"{a['status']} in both runs"
        return "differ", f"{a['status']} in run A, {b['status']} in run B"
    if a["benchmark_version"] != b["benchmark_version"]:
        return "differ", f"benchmark version {a['benchmark_version']} vs {b['benchmark_version']}"
    ia, ib = interval(a), interval(b)
    if ia.kind == "exact":
        return ("agree", "equal") if a["value"] == b["value"] else ("differ", "exact values differ")
    if not ia.kind or not ib.kind:
        if a["value"] == b["value"]:  # the same measurement (a folder against its copy): nothing to disagree
            return "agree", "identical values (no interval)"
        if not ia.kind and not ib.kind and a["basis"] == b["basis"] == "one process":
            # measured once per run by design (version 4 and older: a compile time, the roofline): no interval
            return "not judged", "one measurement per run"
        return "cannot tell", "no interval in " + ("run A" if not ia.kind else "run B")
    if ia.kind != ib.kind:  # a 95 % interval against an IQR: judged by the weaker, and said so
        ia, ib = (Interval(r["q25"], r["q75"], "IQR") for r in (a, b))
    kind = "95 % intervals" if ia.kind == "95 % interval" else "IQRs (no samples recorded)"
    overlap = overlaps(ia, ib)
    return ("agree", f"{kind} overlap") if overlap else ("differ", f"{kind} do not overlap")


def host_shift(checks: list[RowCheck]) -> tuple[float, int, int] | None:
    """How far one host's speed moved between two runs: the median B/A of the timing rows judged on one host (in
    seconds, both ok and positive, each with an interval), and how many of those agree once run B's times are
    divided by it (a shift of the whole host moves every row at once; a change of one row stays a disagreement).
    None without such rows."""
    timed = [c for c in checks if c.timing and c.verdict in ("agree", "differ") and c.a["unit"] == "seconds"
             and c.a["status"] == c.b["status"] == "ok" and c.a["value"] > 0 and c.b["value"] > 0
             and interval(c.a).kind and interval(c.b).kind]
    if not timed:
        return None
    shift = math.exp(statistics.median(math.log(c.b["value"] / c.a["value"]) for c in timed))
    spread = ("value", "ci_low", "ci_high", "q25", "q75")
    agree = sum(judge(c.a, {**c.b, **{k: c.b[k] / shift for k in spread if k in c.b}})[0] == "agree" for c in timed)
    return shift, agree, len(timed)


@dataclass
class Hosts:
    """Per (machine, commit): whether the two runs ran on one host, and the runs' calibrations."""

    same: dict[tuple[str, str], tuple[bool | None, str]] = field(default_factory=dict)
    calibrations: dict[tuple[str, str], tuple[dict, dict]] = field(default_factory=dict)


def hosts(a: Results, b: Results, keys: set[tuple[str, str]]) -> Hosts:
    """Per (machine, commit) of `keys`: `host_check.same_host` of the two runs' records, or None where one has no
    fingerprint (older results)."""
    out = Hosts()
    for key in sorted(keys):
        da, db = a.details.get(key) or {}, b.details.get(key) or {}
        out.calibrations[key] = (da.get("calibration") or {}, db.get("calibration") or {})
        if not da.get("fingerprint") or not db.get("fingerprint"):
            out.same[key] = None, "no host fingerprint in " + ("either run" if not da.get("fingerprint")
                                                              and not db.get("fingerprint") else "one run") + \
                " (older results): times compared by machine name alone"
        else:
            out.same[key] = host_check.same_host(da, db)
    return out


def normalised(a: dict, b: dict, cal: tuple[dict, dict], kind: str) -> str:
    """The two runs' intervals in calibrated units of each run's own host, and whether they overlap."""
    ia, ib = interval(a), interval(b)
    if not ia.kind or not ib.kind:
        return "normalised: no interval"
    try:
        na = [host_check.normalised(x, cal[0], kind) for x in (a["value"], ia.low, ia.high)]
        nb = [host_check.normalised(x, cal[1], kind) for x in (b["value"], ib.low, ib.high)]
    except ValueError as exc:
        return f"normalised: {exc}"
    overlap = na[1].value <= nb[2].value and nb[1].value <= na[2].value
    text = "; ".join(f"{run} {n[0].value:.4g} [{n[1].value:.4g}–{n[2].value:.4g}]" for run, n in (("A", na), ("B", nb)))
    return f"normalised ({na[0].unit}): {text}: {'overlap' if overlap else 'do not overlap'}"
