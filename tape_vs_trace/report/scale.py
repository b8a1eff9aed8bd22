"""What scale a result describes, said wherever a number is cited: the device, the core count, the workload sizes
with a step's matmul flops and bytes saved for the backward (the GraphCost rows of the same run), and for CPU results
that they do not describe GPU-scale training."""

from __future__ import annotations

import pandas as pd

from implementations import pillars, workloads
from tape_vs_trace.report import fmt

NOT_GPU_SCALE = ("CPU results on small sizes: they describe the frameworks' per-op and compiler costs on this host, "
                 "not GPU-scale training")
STEP = pillars.role_benchmark("step time")  # the sizes a machine's step times were measured at
FLOPS = (pillars.role_benchmark("flops"), pillars.role("flops")[1].metric)
SAVED = (pillars.role_benchmark("saved bytes"), pillars.role("saved bytes")[1].metric)


def size_words(workload: str, size: str) -> str:
    """A size as a reader says it ('4 layers, batch 4, 64 tokens, width 128'); the name where the spec lacks it."""
    try:
        dims = workloads.spec(workload).sizes[size]
    except (ValueError, KeyError):
        return size
    template = workloads.spec(workload).size_words  # its format fits every size: workloads.check_grid
    return template.format(**dims) if template else ", ".join(f"{k} {v}" for k, v in dims.items())


def host(device: str, info: dict) -> str:
    """'device cpu, 2 cores (Intel(R) Xeon(R) ...)': what the machine record knows."""
    cores = f", {info['num_cpu']} cores" if info.get("num_cpu") else ""
    cpu = f" ({info['cpu']})" if info.get("cpu") else ""
    return f"device {device}{cores}{cpu}"


def _of(rows: pd.DataFrame, what: tuple[str, str], workload: str, size: str) -> pd.Series:
    prefix, metric = what
    sel = rows[rows.benchmark.str.startswith(prefix) & (rows.metric == metric) & (rows.workload == workload)
               & (rows["size"] == size) & (rows.status == "ok")]
    return sel.value.astype(float)


def _span(values: pd.Series, unit: str) -> str:
    low, high = values.min(), values.max()
    return fmt.value(low, unit) if low == high else f"{fmt.value(low, unit)}–{fmt.value(high, unit)}"


def size(rows: pd.DataFrame, workload: str, size_name: str, saved: bool = True, words: bool = True) -> str:
    """'mlp 64x256x1024 (batch 64, ...; 0.2013 GFLOP of matmuls a step, 0.5–1 MiB saved for the backward)': a
    workload's size with what one step of it costs, from the run's own GraphCost rows where it has them (the saved
    bytes only where `saved`: the front page gives them a section of their own; the size in words only where
    `words`)."""
    costs = []
    flops = _of(rows, FLOPS, workload, size_name)
    if len(flops):  # a step of elementwise ops only counts no matmul flops: said so, not '0 GFLOP'
        costs.append(f"{_span(flops, 'flops')} of matmuls a step" if flops.max() > 0 else "no matmuls")
    kept = _of(rows, SAVED, workload, size_name) if saved else pd.Series(dtype=float)
    if len(kept):
        costs.append(f"{_span(kept, 'bytes')} saved for the backward")
    said = size_words(workload, size_name) if words else size_name
    inner = "; ".join(([said] if said != size_name else []) + costs)
    return f"{workload} {size_name}" + (f" ({inner})" if inner else "")


def _flops(rows: pd.DataFrame) -> pd.DataFrame:
    prefix, metric = FLOPS
    return rows[rows.benchmark.str.startswith(prefix) & (rows.metric == metric) & (rows.status == "ok")]


def no_matmuls(rows: pd.DataFrame) -> set[str]:
    """The workloads whose every counted step has no matmul flops (the run's own GraphCost rows): a matmul rate does
    not concern them."""
    flops = _flops(rows)
    return {w for w, values in flops.groupby("workload").value if (values.astype(float) == 0).all()}


def counted_without_matmuls(tables: list[pd.DataFrame]) -> frozenset:
    """The workloads without matmuls (`no_matmuls`) on every table that counts their flops at all."""
    counted = {w for t in tables for w in _flops(t).workload}
    return frozenset(w for w in counted if all(w in no_matmuls(t) for t in tables if w in set(_flops(t).workload)))


def sizes(rows: pd.DataFrame) -> list[tuple[str, str]]:
    """The (workload, size) pairs whose gradient step this run timed, in the table's order."""
    step = rows[rows.benchmark.str.startswith(STEP) & (rows.metric == "time_step")]
    return list(dict.fromkeys(zip(step.workload, step["size"])))


def words(rows: pd.DataFrame, info: dict) -> str:
    """One machine's scale in a sentence: device, cores, each size with its step's cost, and for CPU results that
    they do not describe GPU-scale training."""
    device = str(rows.device.iloc[0]) if len(rows) else "unknown"
    said = [host(device, info)]
    pairs = sizes(rows)
    if pairs:
        said.append("sizes: " + "; ".join(size(rows, w, s) for w, s in pairs))
    text = "Scale: " + "; ".join(said) + "."
    return text + (f" {NOT_GPU_SCALE}." if device == "cpu" else "")


def of_row(rows: pd.DataFrame, row: dict, info: dict) -> str:
    """A cited row's scale: its host and its workload's size with the step's cost (`size`), and for CPU that it is
    not GPU-scale training."""
    mine = rows[(rows.machine == row["machine"]) & (rows.commit == row["commit"])]
    said = host(row["device"], info)
    if row.get("workload") and row.get("size"):
        said += "; " + size(mine, row["workload"], row["size"])
    return said + (f"; {NOT_GPU_SCALE}" if row["device"] == "cpu" else "")
