"""The roofline, derived when the results are loaded: time over matmul-peak time of every op-by-op-formulation
GradStep row of the matmul-heavy workloads (WorkloadSpec.matmul_heavy; every mode, dtype and precision).

Each process's median step time (recording.GradStep_<w>.time_step) is multiplied by the run's calibrated matmul
rate for the row's dtype and precision (the calibration `tape-vs-trace scrub-results` stores in each result file,
read by ``schema.roofline_rate``: one rate for both frameworks) and divided by that framework's matmul flops of one
forward + backward (recording.GraphCost_<w>.track_flops, same formulation). Rate and flops are constants of the
row, so the per-process values keep the step's between-process spread, and the value, interval and JAX/PyTorch
ratio come from the same machinery as every time (``stats.summarise``, ``stats.compare``); the ratio of two
rooflines is the ratio of the times where both frameworks count the same flops.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pandas as pd

from implementations import metrics, pillars, workloads
from tape_vs_trace.report import stats
from tape_vs_trace.results.rowkey import RowKey, params_of
from tape_vs_trace.results.schema import roofline_rate

METRIC = "time_over_matmul_peak"
METHOD = "GradStep samples x calibrated matmul rate / matmul flops"
WORKLOADS = tuple(w for w, s in workloads.WORKLOADS.items() if s.matmul_heavy)  # those without GradStep have no row
# The formulations the roofline covers: the Python loop where a workload has one, else its one form (None).
FORMULATIONS = ("unrolled", None)
SHARED = ("framework", "workload", "size", "formulation")  # a step's parameters its flops count has (`_case`)


def source(workload: str) -> str:
    """The measured benchmark the roofline of `workload` is derived from."""
    return pillars.role_benchmark("step time", workload)


def _flops_benchmark(workload: str) -> str:
    return pillars.role_benchmark("flops", workload)


def name(workload: str) -> str:
    """The derived rows' benchmark name: the step time's class they come from, with the derived metric."""
    return f"{source(workload).rpartition('.')[0]}.{METRIC}"


def _case(row: dict) -> RowKey:
    """What a step and the flops count it divides by share: the framework, workload, size and formulation. The
    other parameters (mode, style, dtype, precision...) are not the count's: the last count of a case stands."""
    fields = {k: row[k] for k in SHARED[:3]} | {"formulation": workloads.formulation_in(params_of(row).get(
        "formulation"))}
    return RowKey.of_columns(fields, SHARED, "recording")


def _flops(table: pd.DataFrame) -> dict[tuple[str, str, RowKey], float]:
    """(machine, file, the case's RowKey: `_case`) -> matmul flops, from the counts that ran."""
    rows = table[table.benchmark.isin([_flops_benchmark(w) for w in WORKLOADS]) & (table.status == "ok")]
    return {(r["machine"], r["file"], _case(r)): float(r["value"]) for r in rows.to_dict("records") if r["value"] > 0}


def derive(table: pd.DataFrame, details: dict[tuple[str, str], dict], warn: Callable[[str], None]) -> list[dict]:
    """The derived rows (dicts in the tidy table's columns). A result file without a calibration, or without a
    flops count for a step that needs one, gets no derived row for it, and one warning ("machine/file: ...")."""
    steps = table[table.benchmark.isin([source(w) for w in WORKLOADS]) & (table.status == "ok")]
    flops = _flops(table)
    meaning = metrics.get(METRIC)
    out: list[dict] = []
    for (machine, file), rows in steps.groupby(["machine", "file"], sort=False):
        calibration = (details.get((machine, rows.commit.iloc[0])) or {}).get("calibration")
        if not isinstance(calibration, dict):
            warn(f"{machine}/{file}: no calibration recorded (tape-vs-trace scrub-results stores it): "
                 f"no {METRIC} derived")
            continue
        missing = set()
        for row in rows.to_dict("records"):
            p = json.loads(row["params"])
            formulation = workloads.formulation_in(p.get("formulation"))
            if formulation not in FORMULATIONS:
                continue
            rate = roofline_rate(calibration, row["dtype"], row["precision"])
            count = flops.get((machine, file, _case(row)))
            if rate is None or count is None:
                missing.add(f"{row['dtype']}/{row['precision']} matmul rate" if rate is None
                            else f"{_flops_benchmark(row['workload'])} of {row['framework']}")
                continue
            factor = rate / count
            out.append({**row, **_values(row, factor), "metric": METRIC, "unit": meaning.unit,
                        "sampled": meaning.sampled, "comparable": meaning.comparable, "type": "derived",
                        "benchmark": name(row["workload"]),
                        "method": f"{METHOD} ({rate:.6g} flop/s, {count:.6g} flops)"})
        if missing:
            warn(f"{machine}/{file}: no {METRIC} derived where the result file has no {', '.join(sorted(missing))}")
    return out


def _values(row: dict, factor: float) -> dict:
    """The value, spread and interval columns of the scaled step: each process's median times `factor`, through
    stats.summarise (one "sample" per process); a row without per-process medians scales asv's statistics."""
    medians = json.loads(row["process_medians"]) if row["process_medians"] else []
    if medians:
        values = stats.summarise(1.0, None, None, [m * factor for m in medians], True, stats.Split(len(medians), 1))
        return values | {"samples": row["samples"]}
    return stats.summarise(row["value"] * factor, row["q25"] * factor, row["q75"] * factor, None, True,
                           stats.Split(1, None))
