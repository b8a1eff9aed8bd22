"""The distributed results files (`tape-vs-trace distributed`, results/distributed/<machine>-<commit8>.csv) in the
report: read and checked, one per machine (its newest commit). What the report says about them is
`distributed_section`'s, the figures `distributed_figure`'s; `tidy` lays the rows out as summary.csv's, as every other
row (rowkey.RowKey.of keys them)."""

from __future__ import annotations

import json
import math
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd

from implementations import frameworks, metrics
from tape_vs_trace.report.load import COLUMNS, Warn
from tape_vs_trace.results import side_tables
from tape_vs_trace.results.schema import DISTRIBUTED_FIELDS, DISTRIBUTED_KEY

SPEC = side_tables.SPECS["distributed"]
FOLDER = SPEC.name
NUMBERS = ("ranks", "time_s", "time_ci_low", "time_ci_high", "launches", "repeat", "warmup", "compile_s",
           "compile_ci_low", "compile_ci_high", "peak_bytes", "comm_bytes", "analytic_bytes", "gradient_bytes")
STATUSES = ("ok", "failed")


def launch_medians(row: dict) -> list[float]:
    """A row's per-launch medians (the CSV keeps them ';'-separated)."""
    return [float(v) for v in str(row["launch_medians"]).split(";") if v]


def read(path: Path) -> pd.DataFrame:
    """One distributed CSV, checked; ValueError (with the reason) for anything that is not one."""
    table = side_tables.read_csv(path, DISTRIBUTED_FIELDS)
    bad = sorted(set(table.status) - set(STATUSES))
    if bad:
        raise ValueError(f"status {bad[0]!r} is neither {' nor '.join(STATUSES)}")
    for column in NUMBERS:
        table[column] = pd.to_numeric(table[column].replace("", math.nan), errors="coerce")
    if table.ranks.isna().any():
        raise ValueError("ranks is not a number on every row")
    if table[table.status == "ok"].time_s.isna().any():
        raise ValueError("an ok row has no time_s")
    table["ranks"] = table.ranks.astype(int)
    return table


def load(results: Path, warn: Warn) -> dict[str, pd.DataFrame]:
    """Per machine, the file of its newest commit (`newest`). An unreadable file is skipped with a one-line
    warning; without results/distributed the report has no distributed sections."""
    folder = results / FOLDER
    if not folder.is_dir():
        return {}
    found = side_tables.newest(side_tables.files(folder, SPEC.what, read, warn))
    return {machine: data for machine, (_, data) in found.items()}


BENCHMARK = "distributed.step"  # summary.csv's benchmark of these rows (no asv benchmark measures them)
SAMPLED = (("time_step", "time_s", "time_ci", "launch_medians"),
           ("time_compile_seconds", "compile_s", "compile_ci", "compile_launches"))  # metric, value, interval, launches
# The exact counts of a row: metric, value, and the summary column that takes the CSV's method of it (none for a
# count computed from the form and the parameters alone)
EXACT = (("track_peak_bytes", "peak_bytes", "memory_method", "peak_method"),
         ("track_communicated_bytes", "comm_bytes", "method", "collectives_method"),
         ("track_analytic_bytes", "analytic_bytes", None, None), ("track_gradient_bytes", "gradient_bytes", None, None))


def _date(text: str) -> str:
    """The commit date as the asv rows show it ("2026-12-01 17:36:46 UTC"); the text itself where it is no date."""
    try:
        return datetime.fromisoformat(text).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (TypeError, ValueError):
        return str(text)


def _sampled(r: dict, metric: str, value: str, interval: str, launches: str) -> dict:
    """A timed metric of a row: its value and interval across launches, whose medians are its processes."""
    per_launch = [float(v) for v in str(r[launches]).split(";") if v]
    q25, q75 = (float(q) for q in np.percentile(per_launch, [25, 75])) if per_launch else (math.nan, math.nan)
    return {"metric": metric, "unit": metrics.METRICS[metric].unit, "value": r[value], "spread": q75 - q25,
            "q25": q25, "q75": q75, "ci_low": r[f"{interval}_low"], "ci_high": r[f"{interval}_high"],
            "processes": len(per_launch) or None, "basis": "launches", "process_medians": json.dumps(per_launch),
            "sampled": True, "comparable": metrics.METRICS[metric].comparable}


def _exact(r: dict, metric: str, value: str, column: str | None, method: str | None) -> dict:
    """A counted metric of a row: one exact value, its method where the CSV records one."""
    v, meaning = r[value], metrics.METRICS[metric]
    return {"metric": metric, "unit": meaning.unit, "value": v, "spread": 0.0, "q25": v, "q75": v, "ci_low": v,
            "ci_high": v, "basis": "exact", "sampled": False, "comparable": meaning.comparable} | (
        {column: r[method]} if column else {})


def tidy(machine: str, table: pd.DataFrame) -> pd.DataFrame:
    """One machine's distributed rows in summary.csv's columns: per row of the file its step time and first call
    (across launches) and its counts where measured (EXACT: peak, communicated, analytic and gradient bytes), or one
    failed step row; the parameters are the row's key (schema.DISTRIBUTED_KEY) and its device."""
    rows = []
    for r in table.to_dict("records"):
        params = {k: r[k] for k in (*DISTRIBUTED_KEY, "device")}
        versions = {f"{fw}_version": r["framework_version"] if r["framework"] == fw else "" for fw in frameworks.NAMES}
        common = {c: "" for c in COLUMNS} | versions | {
            "pillar": "distributed", "workload": r["workload"], "size": r["size"], "dtype": r["dtype"],
            "variant": f"{r['variant']}/{r['form']}/{r['mode']}/N={r['ranks']}", "framework": r["framework"],
            "params": json.dumps(params, separators=(",", ":")), "benchmark": BENCHMARK, "commit": r["commit"],
            "date": _date(r["commit_date"]), "machine": machine, "device": r["device"], "status": r["status"],
            "type": "distributed", "file": f"{FOLDER}/{machine}-{r['commit'][:8]}.csv"}
        if r["status"] != "ok":
            rows.append(common | {"metric": "time_step", "unit": metrics.METRICS["time_step"].unit,
                                  "value": math.nan, "sampled": True, "comparable": True})
            continue
        rows += [common | _sampled(r, *spec) for spec in SAMPLED if not math.isnan(r[spec[1]])]
        rows += [common | _exact(r, *spec) for spec in EXACT if not math.isnan(r[spec[1]])]
    return pd.DataFrame(rows, columns=COLUMNS)
