"""The paired results files (`tape-vs-trace paired`, results/paired/<machine>-<commit8>.csv) in the report: read
and checked, one per machine, grouped into remat curves (with their Pareto points), and laid out as summary.csv
rows. What the report says about them is `paired_section`'s."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from implementations import metrics, workloads
from tape_vs_trace.report.load import COLUMNS, Warn
from tape_vs_trace.results import side_tables

SPEC = side_tables.SPECS["paired"]
FOLDER = SPEC.name
NUMBERS = ("time_s", "time_ci_low", "time_ci_high", "ratio", "ratio_ci_low", "ratio_ci_high", "processes", "passes",
           "saved_bytes", "flops", "peak_bytes")
REQUIRED = ("time_s", "ratio", "processes")  # a number on every row; the others may be empty (no interval, no cost)
CURVE = ("framework", "mode", "formulation", "attention", "size")  # one curve of the remat trade-off
EXTRA_COLUMNS = ["group", "experiment", "point", "ratio", "ratio_ci_low", "ratio_ci_high"]  # summary.csv
# Results written before the paired experiments were derived from the registry's findings name them so: the old
# wording of an experiment -> (its finding's `what`, {old point label: the finding's base or variant}), '{mode}' the
# mode that ends the experiment's name.
LEGACY = {
    "hooks against none": ("tensor hooks", {"no hooks": "no_hooks/eager", "hooks": "hooks/eager"}),
    "zero_grad to zeros against None": ("zero_grad(set_to_none=False)", {
        "zero_grad to None": "zero_grad_none/eager", "zero_grad to zeros": "zero_grad_zeros/eager"}),
    "accumulation into .grad against a sum": ("accumulating into .grad", {
        "sum of grads": "accumulate_tree_add/eager", "into .grad": "accumulate_grad_attr/eager"}),
    "inference_mode against no_grad": ("inference_mode", {}),
    "custom against autodiff": ("the custom backward, {mode}", {"autodiff": "plain/{mode}", "custom": "custom/{mode}"}),
}


def finite(*values) -> bool:
    """Whether every value is a finite number (an empty CSV cell reads as NaN)."""
    return all(isinstance(v, int | float) and math.isfinite(v) for v in values)


def medians(row: dict) -> list[float]:
    """A row's per-process medians (the CSV keeps them ';'-separated)."""
    return [float(v) for v in str(row["process_medians"]).split(";") if v]


def _legacy(name: object) -> tuple[str, dict[str, str]] | None:
    """(today's name, {old point label: today's}) of an experiment named as before the derivation; None otherwise."""
    what, *tail = str(name).rsplit(" ", 3)  # '<what> <workload> <framework> <mode>'
    if what not in LEGACY or len(tail) != 3:
        return None
    new, labels = LEGACY[what]
    mode = tail[-1]
    return " ".join([new.format(mode=mode), *tail]), {old: label.format(mode=mode) for old, label in labels.items()}


def renamed(table: pd.DataFrame) -> pd.DataFrame:
    """`table` with its experiments and points named as implementations.experiments names them today (LEGACY)."""
    if not {"experiment", "point", "baseline"} <= set(table.columns):
        return table
    found = [_legacy(name) for name in table.experiment]
    if not any(found):
        return table
    out = table.copy()
    out["experiment"] = [f[0] if f else name for f, name in zip(found, table.experiment)]
    for column in ("point", "baseline"):
        out[column] = [f[1].get(label, label) if f else label for f, label in zip(found, table[column])]
    return out


def read(path: Path) -> pd.DataFrame:
    """One paired CSV, checked; ValueError (with the reason) for anything that is not one."""
    # files from before the remat curve had fused attention: every row of theirs is written attention
    table = SPEC.read(path)  # attention is one of the spec's optional columns
    for column in NUMBERS:
        table[column] = pd.to_numeric(table[column].replace("", math.nan), errors="coerce")
        if column in REQUIRED and table[column].isna().any():
            raise ValueError(f"{column} is not a number on every row")
    return renamed(table)


def load(results: Path, table: pd.DataFrame, warn: Warn) -> dict[str, pd.DataFrame]:
    """Per machine, its paired results: the file of the commit the report shows for that machine if there is one,
    else the newest written. An unreadable file is skipped with a one-line warning; without results/paired (results
    from before `tape-vs-trace paired`) the report has no paired sections."""
    folder = results / FOLDER
    if not folder.is_dir():
        return {}
    shown = {m: rows.sort_values(["date", "commit"]).commit.iloc[-1] for m, rows in table.groupby("machine")}
    dates = dict(zip(table.commit, table.date))
    out = {}
    found = side_tables.files(folder, SPEC.what, read, warn)
    for machine, (path, data) in side_tables.newest(found, shown, dates).items():
        data = data.assign(machine=machine)
        if machine in shown and data.commit.iloc[0] != shown[machine]:
            warn(f"{path.name}: the paired results are of commit {data.commit.iloc[0][:8]}, the asv results of "
                 f"{shown[machine][:8]}")
        out[machine] = data
    return out


def curves(table: pd.DataFrame) -> list[tuple[tuple[str, ...], pd.DataFrame]]:
    """The remat curves (framework, mode, formulation, attention, size), in the order of the file."""
    remat = table[table.group == "remat"]
    keys = list(dict.fromkeys(zip(*(remat[c] for c in CURVE))))
    return [(k, remat[(remat[list(CURVE)] == pd.Series(k, index=CURVE)).all(axis=1)]) for k in keys]


def pareto(times: list[float], memory: list[float]) -> list[bool]:
    """Per point, whether it is Pareto-optimal: no other point of the curve is both faster and smaller."""
    return [not any(t2 < t and m2 < m for t2, m2 in zip(times, memory)) for t, m in zip(times, memory)]


def tidy(table: pd.DataFrame) -> pd.DataFrame:
    """The paired rows in summary.csv's columns: a time row per point (with its paired ratio) and an exact row per
    cost (saved bytes, flops, peak bytes) where measured; `group`, `experiment`, `point` and the ratio columns say
    where they come from."""
    rows = []
    for r in table.to_dict("records"):
        params = {k: r[k] for k in ("framework", "workload", "size", "mode", "formulation", "point", "budget")}
        if r["attention"]:
            params["attention"] = r["attention"]
        # as asv's rows read: point/mode, and the formulation where the workload has several
        loop = workloads.formulation_in(r["formulation"])
        variant = "/".join([r["point"], r["mode"]] + ([loop] if loop else []))
        common = {c: "" for c in COLUMNS} | {
            "pillar": "remat" if r["group"] == "remat" else "paired", "workload": r["workload"], "size": r["size"],
            "variant": variant, "framework": r["framework"], "params": json.dumps(params, separators=(",", ":")),
            "benchmark": f"paired.{r['group']}", "commit": r["commit"], "machine": r["machine"],
            "device": r["device"], "status": "ok", "type": "paired", "file": f"{FOLDER}/{r['machine']}-"
            f"{r['commit'][:8]}.csv", "group": r["group"], "experiment": r["experiment"], "point": r["point"]}
        per_process = medians(r)
        q25, q75 = (float(q) for q in np.percentile(per_process, [25, 75])) if per_process else (math.nan, math.nan)
        rows.append(common | {
            "metric": "time_step", "unit": "seconds", "value": r["time_s"], "spread": q75 - q25, "q25": q25,
            "q75": q75, "ci_low": r["time_ci_low"], "ci_high": r["time_ci_high"], "processes": r["processes"],
            "basis": "paired processes", "process_medians": json.dumps(per_process), "sampled": True,
            "comparable": True, "ratio": r["ratio"], "ratio_ci_low": r["ratio_ci_low"],
            "ratio_ci_high": r["ratio_ci_high"]})
        for column, metric in (("saved_bytes", "track_saved_bytes"), ("flops", "track_flops"),
                               ("peak_bytes", "track_peak_bytes")):
            if finite(r[column]):
                m = metrics.METRICS[metric]
                rows.append(common | {
                    "metric": metric, "unit": m.unit, "value": r[column], "spread": 0.0, "q25": r[column],
                    "q75": r[column], "ci_low": r[column], "ci_high": r[column], "basis": "exact", "sampled": False,
                    "comparable": m.comparable, "memory_method": r["peak_method"] if column == "peak_bytes" else "",
                    "ratio": math.nan, "ratio_ci_low": math.nan, "ratio_ci_high": math.nan})
    return pd.DataFrame(rows, columns=COLUMNS + EXTRA_COLUMNS)
