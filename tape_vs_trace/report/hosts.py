"""Runs filed under one machine name that come from different hosts: told apart by their fingerprints and
calibrations (tape_vs_trace.host_check.same_host), their times never compared as seconds, and offered side by side in
calibrated units for a reader who wants to anyway."""

from __future__ import annotations

import json

import pandas as pd

from tape_vs_trace import host_check
from tape_vs_trace.report.load import Results

KIND = "matmul_float32"  # times in float32 matmul flops of each host's calibrated rate
SHOWN = "time_step"  # the step times: the numbers most cited


def section(data: Results, machine: str, commit: str) -> list[str]:
    """Markdown lines for the other result files of `machine` that ran on another host than `commit`'s run."""
    mine = data.details.get((machine, commit)) or {}
    lines: list[str] = []
    for (m, other), theirs in sorted(data.details.items()):
        if m != machine or other == commit:
            continue
        same, why = host_check.same_host(mine, theirs or {})
        if same:
            continue
        lines += [f"Commit `{other[:8]}` of machine {machine} ran on a different host ({why}): its times are not "
                  "compared with this run's as seconds.", ""]
        lines += _normalised(data.table, machine, commit, other, mine.get("calibration"), theirs.get("calibration"))
    return lines


def _normalised(table: pd.DataFrame, machine: str, commit: str, other: str, cal_a, cal_b) -> list[str]:
    if not (isinstance(cal_a, dict) and isinstance(cal_b, dict)):
        return ["(no calibration in both runs: no calibrated comparison)", ""]
    rows = table[(table.machine == machine) & (table.metric == SHOWN) & (table.status == "ok")]
    a, b = (rows[rows.commit == c].set_index(["benchmark", "params"]).value for c in (commit, other))
    both = a.index.intersection(b.index)
    out = [f"Step times of both runs in calibrated units ({KIND}: how many float32 matmul flops each host does in "
           "that time, from its own calibration; not seconds):", "",
           f"| benchmark | parameters | this run | commit `{other[:8]}` |", "|---|---|---:|---:|"]
    for key in both:
        try:
            na, nb = host_check.normalised(a[key], cal_a, KIND), host_check.normalised(b[key], cal_b, KIND)
        except ValueError as exc:
            return [f"(no calibrated comparison: {exc})", ""]
        params = ", ".join(f"{k}={v}" for k, v in json.loads(key[1]).items() if k not in ("dtype", "precision",
                                                                                               "device"))
        out.append(f"| `{key[0]}` | {params} | {na.value:.4g} | {nb.value:.4g} |")
    return out + [""] if len(both) else []
